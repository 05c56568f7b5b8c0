"""The person's side's small lies, each through `hz` as a person runs it: a `waiting` one
that `resume` says has nothing to resume, the 150-character key an approval printed, a
`show` that told you to run `show`, the demo's hint that works only inside the venv, and
help lines out of date."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.loop.conftest import Hz


def test_resume_of_one_waiting_on_its_draft_says_so(approved: Hz) -> None:
    assert approved("heinzel", "wake", "notes-digest").code == 0
    [row] = json.loads(approved("heinzel", "list", "--json").out)
    assert row["state"] == "waiting"
    done = approved("heinzel", "resume", "notes-digest")
    assert done.code == 1
    assert done.err.startswith(
        "HZH236: notes-digest has no waiting turn: it waits on you to approve its draft"
    ), done.err
    assert "hz approve notes-digest" in done.err


def test_approving_a_draft_names_its_document_not_its_key(approved: Hz, folder: Path) -> None:
    assert approved("heinzel", "wake", "notes-digest").code == 0
    key = json.loads(approved("drafts", "--json").out)[0]["key"]
    done = approved("approve", "notes-digest")
    assert done.code == 0, done.err
    assert key not in done.out, done.out
    assert f"approved the draft in {folder / 'report.md'}" in done.out, done.out


def test_show_never_tells_you_to_run_show(hz: Hz, folder: Path) -> None:
    """A failed last turn's notice in `show` keeps its next step, not `hz heinzel show`."""
    (folder / "g").mkdir()
    contract = folder / "digest.prose.md"
    text = contract.read_text(encoding="utf-8").replace("file:report.md", "file:g/r.md")
    contract.write_text(text, encoding="utf-8")
    assert hz("heinzel", "new", "--from", "digest.prose.md").code == 0
    assert hz("approve", "notes-digest").code == 0
    (folder / "g").rmdir()  # the draft's folder is gone: the turn fails
    assert hz("heinzel", "wake", "notes-digest").code == 1
    shown = hz("heinzel", "show", "notes-digest")
    assert "notice:" in shown.out, shown.out
    assert "hz heinzel show" not in shown.out, shown.out
    assert "hz heinzel wake notes-digest tries again" in shown.out


def test_help_lines_say_what_the_commands_do(hz: Hz) -> None:
    heinzel = hz("heinzel", "--help").out
    assert "Create Heinzelmännchen from contract files or a sentence" in heinzel
    assert "Delete expired turn bodies, inbox requests and caches" in heinzel
    system = hz("system", "--help").out
    assert "The daemon, the doctor, credentials and the web page." in system


def test_the_demo_hints_a_command_that_runs_outside_the_venv(tmp_path: Path) -> None:
    """`make demo` runs `.venv/bin/hz demo` with the venv not activated: its last hints must
    name that `hz`, not a bare `hz` the shell does not find."""
    hz = Path(sys.executable).parent / "hz"
    done = subprocess.run(
        [str(hz), "demo", "--home", str(tmp_path / "home")],
        env={"PATH": "/usr/bin:/bin", "HZ_TESTING": "1"},
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    # a notice too long for its line is cut with an ellipsis, never mid-sentence as if whole
    notices = [line for line in done.stdout.splitlines() if "notice.posted" in line]
    assert notices and all(line.endswith(("'", '"')) for line in notices), notices
    assert any(line.endswith(("…'", '…"')) for line in notices), notices
    hint = [line for line in done.stdout.splitlines() if "heinzel lessons" in line][-1]
    command = hint.split()[0]
    assert command != "hz" and Path(tmp_path, command).resolve() == hz.resolve(), hint


def test_a_verb_s_lines_never_print_none() -> None:
    """A verb's answer with a field it does not know (a reason of a turn that has none)
    prints no `reason: None`."""
    from heinzel.cli.verbs import render_verb

    shown = render_verb({"name": "notes-digest", "turn": "tn-1", "reason": None, "error": None})
    assert shown == "name: notes-digest\nturn: tn-1"


def test_the_tick_says_learned_only_when_it_learned(approved: Hz, folder: Path) -> None:
    """An approval with no edit is read and teaches nothing: the tick says so, not
    `learned`; one whose edit left out a line says how many lessons it learned."""
    assert approved("heinzel", "wake", "notes-digest").code == 0
    assert approved("approve", "notes-digest").code == 0
    plain = approved("system", "daemon", "tick")
    assert plain.code == 0, plain.err
    assert "approval read: nothing to learn" in plain.out, plain.out
    assert "-> learned" not in plain.out
    (folder / "notes.txt").write_text("ship the rounding fix\nrename the queue\n", encoding="utf-8")
    assert approved("heinzel", "wake", "notes-digest").code == 0
    report = folder / "report.md"
    kept = [
        line
        for line in report.read_text(encoding="utf-8").splitlines()
        if not line.startswith("🧝 DRAFT") and "rename the queue" not in line
    ]
    report.write_text("\n".join(kept) + "\n", encoding="utf-8")
    taught = approved("system", "daemon", "tick")
    assert taught.code == 0, taught.err
    assert "learned 1 lesson(s) from your edits" in taught.out, taught.out
