"""What walking docs/cli.md and docs/errors.md as a newcomer found, through `hz`: a paused
or retired one runs no turn whoever asks, refusals that name what is really there, and
the timeline in the spine's order under a fixed clock."""

from __future__ import annotations

import json
from pathlib import Path

from ledger.spine import read_events
from tests.loop.conftest import Hz

FIXED = {"HZ_NOW": "2026-10-30T15:00:00Z"}


def _inbox(tmp_path: Path) -> list[Path]:
    return sorted((tmp_path / "home").rglob("inbox/*.json"))


def _started(tmp_path: Path) -> list[str]:
    [spine] = (tmp_path / "home" / "heinzel").glob("hz-*/session.jsonl")
    return [str(e.turn) for e in read_events(spine) if e.kind == "turn.started"]


class TestHeldOnesRunNoTurn:
    """`hz heinzel wake` refuses a paused or retired one; so do `chat` and `retry`."""

    def test_chat_and_retry_are_refused_while_paused_or_retired(
        self, approved: Hz, folder: Path, tmp_path: Path
    ) -> None:
        """HZH050 naming the verb that gets past it, nothing kept in the inbox, no turn
        started and the document untouched."""
        assert approved("heinzel", "wake", "notes-digest").code == 0
        report = (folder / "report.md").read_text(encoding="utf-8")
        kept = _inbox(tmp_path)
        for verb, past in (("pause", "unpause"), ("retire", "unretire")):
            assert approved("heinzel", verb, "notes-digest").code == 0
            for command in (("chat", "notes-digest", "hello"), ("retry", "notes-digest", "x")):
                done = approved("heinzel", *command)
                assert done.code == 1, done.out
                assert done.err.startswith("HZH050: notes-digest is ") and "not kept" in done.err
                assert f"`hz heinzel {past} notes-digest`" in done.err
            assert approved("heinzel", past, "notes-digest").code == 0
        assert _inbox(tmp_path) == kept
        assert len(_started(tmp_path)) == 1
        assert (folder / "report.md").read_text(encoding="utf-8") == report


class TestRefusalsNameWhatIsThere:
    """A refusal says what is wrong with this Heinzelmännchen, not another case's text."""

    def test_answer_with_a_proposal_when_none_waits_is_hzh210(self, approved: Hz) -> None:
        """`--proposal ID` with nothing proposed: nothing waits (HZH210), not "waits on a
        proposed write" (HZH296)."""
        done = approved("heinzel", "answer", "notes-digest", "keep it short", "--proposal", "p1")
        assert done.code == 1
        assert done.err.startswith("HZH210: notes-digest has no question waiting")
        assert "`hz heinzel show notes-digest`" in done.err

    def test_refusals_name_the_command_for_this_one(self, approved: Hz) -> None:
        """Nothing to resume, stop, retry or decline: each hint names the command with
        this Heinzelmännchen's name, ready to type, not a literal NAME."""
        expected = {
            ("heinzel", "resume"): ("HZH236", "`hz heinzel wake notes-digest`"),
            ("heinzel", "stop"): ("HZH237", "`hz heinzel show notes-digest`"),
            ("heinzel", "retry"): ("HZH238", "`hz heinzel wake notes-digest`"),
            ("heinzel", "decline"): ("HZH076", "`hz heinzel show notes-digest`"),
        }
        for command, (code, hinted) in expected.items():
            done = approved(*command, "notes-digest")
            assert (done.code, done.err.split(":")[0]) == (1, code), done.err
            assert hinted in done.err.splitlines()[-1]

    def test_approving_several_reports_each_one(self, hz: Hz) -> None:
        """`hz approve bogus notes-digest`: the one that exists is approved and said so
        on stdout, the unknown one is HZH080 on stderr, exit 1 (not the error alone,
        hiding an approval that happened)."""
        assert hz("heinzel", "new", "--from", "digest.prose.md").code == 0
        done = hz("approve", "bogus", "notes-digest")
        assert done.code == 1
        assert done.out.startswith("approved notes-digest v1: now asleep")
        assert done.err.startswith("HZH080: no Heinzelmännchen named 'bogus'")
        again = hz("approve", "notes-digest", "bogus", "--json")
        assert again.code == 1 and again.out == ""
        assert [line[:7] for line in again.err.splitlines() if line[:2] == "HZ"] == [
            "HZH073:",
            "HZH080:",
        ]

    def test_a_filter_that_matches_none_does_not_say_the_home_is_empty(self, approved: Hz) -> None:
        """`list --state paused` in a home with one asleep: none match, not "create one"."""
        done = approved("heinzel", "list", "--state", "paused")
        assert done.code == 0
        assert done.out.startswith("none of the Heinzelmännchen in ")
        assert "create one" not in done.out

    def test_a_paused_proposal_shows_what_approving_it_grants(self, hz: Hz) -> None:
        """Paused before its approval, `show` still lists the grant and the file to read."""
        assert hz("heinzel", "new", "--from", "digest.prose.md").code == 0
        assert hz("heinzel", "pause", "notes-digest").code == 0
        shown = json.loads(hz("heinzel", "show", "notes-digest", "--json").out)
        assert shown["state"] == "paused"
        assert shown["grant"]["outputs"] == {"section": "file:report.md"}

    def test_a_tick_that_cannot_fetch_says_which_input_and_the_fix(
        self, hz: Hz, folder: Path
    ) -> None:
        """An input no adapter serves: the tick prints the input and the message, and on
        stderr the code, the message and the hint (not `failed` alone)."""
        contract = folder / "digest.prose.md"
        text = contract.read_text(encoding="utf-8")
        text = text.replace("[files:read, documents:write]", "[tracker:read, documents:write]")
        text = text.replace(
            "{from: files.read, args: {path: notes.txt}}",
            "{from: tracker.issues_updated, args: {project: CHK}, window: 7d}",
        )
        contract.write_text(text, encoding="utf-8")
        assert hz("heinzel", "new", "--from", "digest.prose.md").code == 0
        assert hz("approve", "notes-digest").code == 0
        done = hz("system", "daemon", "tick", "--strict")
        assert done.code == 1
        said = "input notes: no adapter is configured for tracker"
        assert f"notes-digest: HZH104: {said}" in done.out
        assert done.err.splitlines() == [
            f"HZH104: notes-digest: {said}",
            "hint: run hz system doctor to see which capabilities are set up",
        ]

    def test_daemon_run_refuses_an_interval_under_a_second(self, hz: Hz, tmp_path: Path) -> None:
        """`--interval 0` (or less) would tick without a pause at full speed: bad usage,
        exit 2, before any tick."""
        for interval in ("0", "-5"):
            done = hz("system", "daemon", "run", "--interval", interval)
            assert done.code == 2
            assert "--interval" in done.err
            assert not (tmp_path / "home").exists()


class TestOneClock:
    """Under a fixed `HZ_NOW` (the README walk's) turns keep the spine's order."""

    def test_show_and_retry_follow_the_spine_not_the_ids(
        self, approved: Hz, tmp_path: Path
    ) -> None:
        """Six turns in the same millisecond: `show` lists them as the spine started them,
        and `retry` forks the last one."""
        for _ in range(6):
            assert approved("heinzel", "wake", "notes-digest", env=FIXED).code == 0
        started = _started(tmp_path)
        shown = json.loads(approved("heinzel", "show", "notes-digest", "--json", env=FIXED).out)
        assert [t["id"] for t in shown["turns"]] == started
        retried = approved("heinzel", "retry", "notes-digest", "x", "--json", env=FIXED)
        assert retried.code == 0, retried.err
        assert json.loads(retried.out)["parent"] == started[-1]
