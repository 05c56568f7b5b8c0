"""One damaged Heinzelmännchen never stops the tick for the others (issue 11, finding 2),
an edited approved contract never runs (finding 8), the index is never read as "none"
while sessions are on disk (findings 6 and 7). Each test drives real `hz` processes."""

from __future__ import annotations

import os
from pathlib import Path

from ledger.reading import read_events
from ledger.verify import verify
from tests.tick.homes import CODED, hz, make_home, tick, turns

NAMES = ["report-0", "report-1", "report-2"]


def _session(root: Path, heinzel_id: str) -> Path:
    return root / "home" / "heinzel" / heinzel_id


def _drafted(root: Path, name: str) -> int:
    return sum(1 for t in turns(root, name) if t["disposition"] == "drafted")


def test_a_missing_contract_file_of_one_never_stops_the_others(tmp_path: Path) -> None:
    """With one contract/v1.prose.md deleted the tick reports HZH061 for it and drafts the rest."""
    root, ids = make_home(tmp_path, 3)
    (_session(root, ids[0]) / "contract" / "v1.prose.md").unlink()
    report = tick(root)
    assert [(e["id"], e["code"]) for e in report["errors"]] == [(ids[0], "HZH061")]
    assert [_drafted(root, name) for name in NAMES] == [0, 1, 1]


def test_a_garbage_line_on_one_spine_is_moved_aside_and_everyone_drafts(tmp_path: Path) -> None:
    """A non-JSON line appended to a spine becomes spine.torn_tail; all draft, chains verify."""
    root, ids = make_home(tmp_path, 3)
    spine = _session(root, ids[1]) / "session.jsonl"
    with spine.open("ab") as handle:
        handle.write(b"this is not json\n")
    report = tick(root)
    assert report["errors"] == []
    assert [_drafted(root, name) for name in NAMES] == [1, 1, 1]
    kinds = [e.kind for e in read_events(spine)]
    assert "spine.torn_tail" in kinds
    assert (spine.parent / "session.jsonl.torn-1").read_bytes() == b"this is not json\n"
    assert all(verify(_session(root, i) / "session.jsonl").ok for i in ids)


def test_a_chat_pending_for_a_damaged_spine_never_stops_the_others(tmp_path: Path) -> None:
    """A chat left pending (its sender killed) for a spine with a break in the middle: the
    tick records the break as contained, reports a code for it, and drafts the others."""
    root, ids = make_home(tmp_path, 3)
    sent = hz(root, "heinzel", "chat", "report-2", "add the release", HZ_CRASH_AT="append:1")
    assert sent.returncode == 137
    spine = _session(root, ids[2]) / "session.jsonl"
    lines = spine.read_bytes().splitlines(keepends=True)
    spine.write_bytes(b"".join([*lines[:1], b"garbage in the middle\n", *lines[1:]]))
    report = tick(root)
    assert [(e["id"], e["code"]) for e in report["errors"]] == [(ids[2], "HZL030")]
    assert [_drafted(root, name) for name in NAMES[:2]] == [1, 1]
    breaks = verify(spine)
    assert breaks.breaks and breaks.uncontained() == []


def test_a_linked_contract_folder_is_refused_with_a_code(tmp_path: Path) -> None:
    """A contract/ folder replaced by a symlink is HZH063 for that one; the others draft."""
    root, ids = make_home(tmp_path, 2)
    folder = _session(root, ids[0]) / "contract"
    elsewhere = tmp_path / "planted"
    folder.rename(elsewhere)
    os.symlink(elsewhere, folder)
    report = tick(root)
    assert [(e["id"], e["code"]) for e in report["errors"]] == [(ids[0], "HZH063")]
    assert [_drafted(root, name) for name in NAMES[:2]] == [0, 1]


def test_a_hand_edited_compiled_form_is_not_believed(tmp_path: Path) -> None:
    """Editing the compiled form beside the approved text (``v1.json``, its fingerprint
    kept): a turn runs what the approved text says, never the edited form."""
    root, ids = make_home(tmp_path, 1)
    form = _session(root, ids[0]) / "contract" / "v1.json"
    edited = form.read_text(encoding="utf-8").replace("file:report-0.md", "file:other.md")
    assert edited != form.read_text(encoding="utf-8")
    form.write_text(edited, encoding="utf-8")
    report = tick(root)
    assert report["errors"] == []
    assert _drafted(root, "report-0") == 1
    assert not (root / "other.md").exists()


def test_a_hand_edited_approved_contract_never_runs(tmp_path: Path) -> None:
    """Editing the approved contract file: the tick and a wake refuse it with HZH062."""
    root, ids = make_home(tmp_path, 2)
    text_path = _session(root, ids[0]) / "contract" / "v1.prose.md"
    text = text_path.read_text(encoding="utf-8")
    text_path.write_text(text.replace("file:report-0.md", "file:other.md"), encoding="utf-8")
    report = tick(root)
    assert [(e["id"], e["code"]) for e in report["errors"]] == [(ids[0], "HZH062")]
    woken = hz(root, "heinzel", "wake", "report-0")
    assert woken.returncode == 1
    assert woken.stderr.startswith("HZH062: ")
    assert _drafted(root, "report-0") == 0
    assert not (root / "other.md").exists()
    shown = hz(root, "heinzel", "show", "report-0")
    assert "HZH062" in shown.stdout


def test_a_deleted_index_is_rebuilt_never_read_as_none(tmp_path: Path) -> None:
    """With index.sqlite deleted, list shows everyone, new refuses a taken name, the tick wakes."""
    root, _ = make_home(tmp_path, 2)
    index = root / "home" / "heinzel" / "index.sqlite"

    def delete() -> None:
        for path in index.parent.glob("index.sqlite*"):
            path.unlink()

    delete()
    listed = hz(root, "heinzel", "list")
    assert listed.returncode == 0, listed.stderr
    assert "report-0" in listed.stdout and "report-1" in listed.stdout
    delete()
    again = hz(root, "heinzel", "new", "--from", "report-0.prose.md")
    assert again.returncode == 1
    assert again.stderr.startswith("HZH072: ")
    delete()
    report = tick(root)
    assert len(report["woken"]) == 2
    assert [_drafted(root, name) for name in NAMES[:2]] == [1, 1]


def test_a_kill_between_the_spine_and_the_index_never_starts_a_second_turn(
    tmp_path: Path,
) -> None:
    """A wake killed after turn.started is durable but before the index saw it: the next
    wake is refused, the tick resumes that turn, and exactly one turn drafts."""
    root, _ = make_home(tmp_path, 1)
    early = {"HZ_NOW": "2026-10-30T14:10:00Z"}  # before the first slot is due
    killed = hz(
        root, "heinzel", "wake", "report-0", HZ_CRASH_AT="before-index:turn.started", **early
    )
    assert killed.returncode == 137
    second = hz(root, "heinzel", "wake", "report-0", **early)
    assert second.returncode == 1
    assert CODED.search(second.stderr), second.stderr
    report = tick(root, **early)
    assert [w.get("woken_by") for w in report["woken"]] == ["recovery"]
    shown = turns(root, "report-0")
    assert [(t["state"], t["disposition"]) for t in shown] == [("finished", "drafted")]
