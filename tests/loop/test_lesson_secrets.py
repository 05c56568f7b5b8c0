"""A lesson never carries a secret: the user types a password in free wording into the draft
they approve, and neither `lesson.recorded` nor the index nor `hz heinzel show` keeps it
(the rule for ``password=`` missed ``password LESSONPASSWORD``)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from heinzel.capabilities.documents import TAG_PREFIX
from tests.loop.conftest import Hz

SECRETS = ("LESSONPASSWORD", "hunter2", "ghp_abcdefghijklmnopqrstuvwxyz0123456789")


def test_a_password_in_free_wording_is_not_learned(approved: Hz, folder: Path) -> None:
    """Wake, approve with the drafted line replaced by one holding a password in words, a
    password after "is" and a GitHub token, tick: the approval turn learns (its lesson
    quotes the edit), and the spine, the index and `show` hold `[secret]` for each."""
    assert approved("heinzel", "wake", "notes-digest").code == 0
    report = folder / "report.md"
    edited = [
        "- the db password LESSONPASSWORD is rotated, the admin password is hunter2, "
        "token ghp_abcdefghijklmnopqrstuvwxyz0123456789"
        if line.startswith("- ship")
        else line
        for line in report.read_text(encoding="utf-8").split("\n")
        if not line.startswith(TAG_PREFIX)
    ]
    report.write_text("\n".join(edited), encoding="utf-8")
    ticked = approved("system", "daemon", "tick")
    assert ticked.code == 0, ticked.err
    shown = json.loads(approved("heinzel", "show", "notes-digest", "--json").out)
    assert shown["turns"][-1]["disposition"] == "learned"
    lessons = [lesson["sentence"] for lesson in shown["lessons"]]
    assert any("password [secret]" in s and "password is [secret]" in s for s in lessons), lessons
    home = Path(approved.hz_env["HZ_HOME"])
    spine = next(home.glob("heinzel/hz-*/session.jsonl")).read_text(encoding="utf-8")
    assert '"lesson.recorded"' in spine
    with sqlite3.connect(home / "heinzel" / "index.sqlite") as db:
        rows = str(db.execute("SELECT * FROM lessons").fetchall())
    for text in (spine, rows, json.dumps(shown)):
        for secret in SECRETS:
            assert secret not in text
