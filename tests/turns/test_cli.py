"""`hz heinzel wake` and `hz heinzel new "a sentence"` through the command line."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from heinzel.cli import group
from ledger.spine import read_events
from tests.turns.conftest import CONTRACT

hz = group()

Run = Callable[..., Result]


@pytest.fixture
def run(tmp_path: Path) -> Run:
    env = {
        "HZ_HOME": str(tmp_path / "home"),
        "HZ_NOW": "2026-10-30T14:00:00Z",
        "HZ_CONFIG": "",
        "XDG_CONFIG_HOME": str(tmp_path / "xdg"),
    }

    def invoke(*args: str) -> Result:
        return CliRunner().invoke(hz, list(args), env=env, catch_exceptions=False)

    return invoke


class TestWakeCommand:
    """`hz heinzel wake NAME [--message]`."""

    def test_wake_runs_a_turn_and_show_lists_it(self, run: Run, tmp_path: Path) -> None:
        """The turn drafts into the document, and `show --json` has it."""
        (tmp_path / "notes.txt").write_text("one\ntwo\n", encoding="utf-8")
        (tmp_path / "report.md").write_text("# Report\n", encoding="utf-8")
        contract = tmp_path / "digest.prose.md"
        contract.write_text(
            CONTRACT.format(render="always", done_when="every item of `notes` is covered")
        )
        assert run("heinzel", "new", "--from", str(contract)).exit_code == 0
        assert run("approve", "notes-digest").exit_code == 0
        woken = run("heinzel", "wake", "notes-digest", "--message", "now", "--json")
        assert woken.exit_code == 0, woken.output
        assert json.loads(woken.stdout)["disposition"] == "drafted"
        shown = json.loads(run("heinzel", "show", "notes-digest", "--json").stdout)
        assert [t["disposition"] for t in shown["turns"]] == ["drafted"]
        assert (tmp_path / "report.md").read_text().count("hz:draft key=") == 1

    def test_wake_of_a_proposed_one_is_refused(self, run: Run, tmp_path: Path) -> None:
        """A proposed one does not wake: HZH050, exit 1, no turn."""
        contract = tmp_path / "digest.prose.md"
        contract.write_text(
            CONTRACT.format(render="always", done_when="every item of `notes` is covered")
        )
        run("heinzel", "new", "--from", str(contract))
        result = run("heinzel", "wake", "notes-digest")
        assert result.exit_code == 1
        assert result.stderr.startswith("HZH050: ")
        [spine] = (tmp_path / "home" / "heinzel").glob("hz-*/session.jsonl")
        assert not [e for e in read_events(spine) if e.turn]


class TestNewSentence:
    """`hz heinzel new "a sentence"`: the created turn."""

    def test_a_sentence_makes_a_proposed_one(self, run: Run) -> None:
        """It prints the new one, proposed, named from the filled contract."""
        sentence = (
            "every Friday at three, draft this week's section of our report "
            "from the merged PRs; I approve"
        )
        created = run("heinzel", "new", sentence, "--json")
        assert created.exit_code == 0, created.output
        row = json.loads(created.stdout)[0]
        assert (row["name"], row["state"]) == ("weekly-report", "proposed")
