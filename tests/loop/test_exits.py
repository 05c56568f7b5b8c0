"""Honest exits: a turn that failed exits 1 with its real cause; the tick names who (issue 13)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.loop.conftest import Hz


@pytest.fixture
def nowhere(hz: Hz, folder: Path) -> Hz:
    """notes-digest approved, drafting into a folder removed after the approval."""
    (folder / "g").mkdir()
    contract = folder / "digest.prose.md"
    contract.write_text(
        contract.read_text(encoding="utf-8").replace("file:report.md", "file:g/r.md"),
        encoding="utf-8",
    )
    assert hz("heinzel", "new", "--from", "digest.prose.md").code == 0
    assert hz("approve", "notes-digest").code == 0
    (folder / "g").rmdir()
    return hz


class TestTurnCommands:
    """`wake`, `chat`, `resume` and `retry` exit 1 with the cause's code, message and hint."""

    def test_a_failed_wake_exits_1_with_the_cause(self, nowhere: Hz) -> None:
        """The missing folder's HZH131 with its message and hint, not the machine's HZM021,
        on stderr and in the turn's line on stdout alike."""
        done = nowhere("heinzel", "wake", "notes-digest")
        assert done.code == 1
        assert " failed (HZH131), 0.00 USD" in done.out and "HZM021" not in done.out
        assert done.err.splitlines()[-2].startswith("HZH131: cannot create ")
        assert done.err.splitlines()[-1].startswith("hint: create the folder")

    def test_stderr_holds_the_coded_error_only_and_logs_go_to_the_log(
        self, nowhere: Hz, tmp_path: Path
    ) -> None:
        """The machine's warning about the failed effect is in the home's ``hz.log``, not
        mixed into the error output: stderr is the code's line and its hint, nothing else."""
        done = nowhere("heinzel", "wake", "notes-digest")
        assert done.code == 1
        [error, hint] = done.err.splitlines()
        assert error.startswith("HZH131: cannot create ") and hint.startswith("hint: "), done.err
        log = (tmp_path / "home" / "heinzel" / "hz.log").read_text(encoding="utf-8")
        assert "effect.failed" in log and "HZH131" in log, log

    def test_show_json_keeps_the_reason(self, nowhere: Hz) -> None:
        """After the failed wake, `show --json` has the turn's reason HZH131."""
        nowhere("heinzel", "wake", "notes-digest")
        shown = json.loads(nowhere("heinzel", "show", "notes-digest", "--json").out)
        assert [t["reason"] for t in shown["turns"]] == ["HZH131"]

    def test_a_failed_chat_exits_1(self, nowhere: Hz) -> None:
        """A chat whose new turn fails exits 1 with the cause."""
        done = nowhere("heinzel", "chat", "notes-digest", "shorter please")
        assert done.code == 1
        assert "HZH131: cannot create " in done.err

    def test_a_failed_retry_exits_1_with_the_cause(self, nowhere: Hz, folder: Path) -> None:
        """`hz heinzel retry` runs a turn too: its fork failing is exit 1 with HZH131 and
        its hint on stderr, and stdout names the turn and how it ended."""
        (folder / "g").mkdir()
        assert nowhere("heinzel", "wake", "notes-digest").code == 0
        (folder / "g" / "r.md").unlink()
        (folder / "g").rmdir()
        done = nowhere("heinzel", "retry", "notes-digest", "shorter")
        assert done.code == 1, done.out
        assert done.err.splitlines()[-2].startswith("HZH131: cannot create ")
        assert done.err.splitlines()[-1].startswith("hint: create the folder")
        assert "disposition: failed" in done.out and "cause" not in done.out

    def test_a_drafting_wake_says_where_and_how_to_approve(self, approved: Hz) -> None:
        """A drafted wake names the document and the approving command; exit 0."""
        done = approved("heinzel", "wake", "notes-digest")
        assert done.code == 0
        assert "report.md" in done.out and "hz approve notes-digest" in done.out


class TestTickReport:
    """`hz system daemon tick` names who, how each turn ended, and the cause."""

    def test_tick_fails_named(self, nowhere: Hz) -> None:
        """The tick prints the name, the disposition and the message; a tick that ran
        exits 0 and says a part failed; --strict exits 1."""
        done = nowhere("system", "daemon", "tick", "--strict")
        assert done.code == 1
        assert "notes-digest: source-changed -> failed (HZH131)" in done.out
        assert "cannot create " in done.out and "hz-" not in done.out

    def test_a_tick_with_a_failed_turn_exits_0_and_says_so(self, nowhere: Hz) -> None:
        """A timer's unit is not marked failed for a turn a later tick retries."""
        done = nowhere("system", "daemon", "tick")
        assert done.code == 0, done.err
        assert "notes-digest: source-changed -> failed (HZH131)" in done.out
        assert "the tick ran; 1 of its parts failed" in done.out
        assert "exit 0 (--strict: exit 1)" in done.out
        assert "HZH131: notes-digest: " in done.err

    def test_a_good_tick_exits_0_with_the_disposition(self, approved: Hz) -> None:
        """A tick whose turn drafted says so, by name, and exits 0."""
        done = approved("system", "daemon", "tick")
        assert done.code == 0
        assert "notes-digest: source-changed -> drafted" in done.out
