"""What docs/cli.md and the README promise, walked as a new user does, through the `hz`
command (a README and docs walk found each of these untrue)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.loop.conftest import Hz


def test_the_demo_plays_in_the_home_given_before_it(hz: Hz, tmp_path: Path) -> None:
    """`hz --home DIR demo` is `hz demo --home DIR`: a DIR that holds something is refused
    (HZH241) rather than passed over for a temporary folder."""
    taken = tmp_path / "taken"
    taken.mkdir()
    (taken / "mine.txt").write_text("keep\n", encoding="utf-8")
    done = hz("--home", str(taken), "demo")
    assert done.code == 1
    assert f"HZH241: {taken} is not empty" in done.err
    assert sorted(p.name for p in taken.iterdir()) == ["mine.txt"]


def test_the_demo_s_home_option_says_it_never_uses_hz_home(hz: Hz) -> None:
    """`hz demo --help` does not claim `$HZ_HOME` as its default: the demo plays in a new
    temporary folder unless `--home` names one, and never in the user's home."""
    shown = hz("demo", "--help").out
    assert "$HZ_HOME is never used" in shown
    assert "default: $HZ_HOME" not in shown


def test_a_contract_from_a_sentence_warns_of_an_adapter_it_lacks(hz: Hz) -> None:
    """`hz heinzel new "a sentence"` warns of a capability no adapter serves (HZH104), as
    `new --from` and `hz approve` do, so the first wake is not where the user learns it."""
    sentence = "every Friday at three, draft this week's section of our report from the merged PRs"
    done = hz("heinzel", "new", sentence)
    assert done.code == 0, done.err
    assert "warning: HZH104: weekly-report uses code-host" in done.out
    assert "`hz system doctor` shows the fix" in done.out


def test_the_sentence_s_warnings_are_in_its_json(hz: Hz) -> None:
    """`--json` has them as `warnings`, as `new --from`'s rows do."""
    done = hz("heinzel", "new", "summarise the merged PRs into today.md", "--json")
    assert done.code == 0, done.err
    (row,) = json.loads(done.out)
    assert [w.split(":")[0] for w in row["warnings"]] == ["HZH104"]


def test_a_trial_s_summary_writes_money_and_counts_as_every_surface_does(approved: Hz) -> None:
    """`hz heinzel try`'s last line writes its amounts by the one money rule (docs/cli.md,
    "Money, on every surface": `0.00 USD`, `0.50 USD`, not `0.000000 USD of 0.5 USD`) and
    counts one turn as `1 turn`."""
    assert approved("heinzel", "wake", "notes-digest").code == 0
    done = approved("heinzel", "try", "notes-digest", "--model", "offline")
    assert done.code == 0, done.err
    last = done.out.strip().splitlines()[-1]
    assert last.startswith("1 turn tried under v1: "), last
    assert last.endswith("; spent 0.00 USD of 0.50 USD"), last


def test_a_trial_with_no_turn_to_try_says_so(approved: Hz) -> None:
    """With no turn that drafted yet, the trial says there was none, not `0 turns tried`."""
    done = approved("heinzel", "try", "notes-digest", "--model", "offline")
    assert done.code == 0, done.err
    last = done.out.strip().splitlines()[-1]
    assert last == "no turn tried under v1: none drafted yet; spent 0.00 USD of 0.50 USD"


def test_doctor_online_with_the_offline_model_says_it_asked_nobody(hz: Hz) -> None:
    """`hz system doctor --online` on a fresh machine (the offline model) has an `online`
    line saying no model request was made and why, not nothing: the flag is never silently a
    no-op."""
    done = hz("system", "doctor", "--online")
    assert done.code == 0, done.out + done.err
    assert "ok  online: no model request: the offline model asks no provider" in done.out


def test_reindex_counts_one_session_as_one(approved: Hz, tmp_path: Path) -> None:
    """`hz heinzel reindex` over one Heinzelmännchen says `from 1 session`."""
    done = approved("heinzel", "reindex")
    assert done.code == 0, done.err
    assert (
        done.out.strip()
        == f"rebuilt {tmp_path / 'home' / 'heinzel' / 'index.sqlite'} from 1 session"
    )


def test_answer_s_usage_names_its_argument_as_cli_md_does(hz: Hz) -> None:
    """`hz heinzel answer --help` reads `NAME ANSWER`, as docs/cli.md writes it."""
    assert "Usage: hz heinzel answer [OPTIONS] NAME ANSWER" in hz("heinzel", "answer", "--help").out


def test_approve_json_nests_no_json_in_strings(hz: Hz) -> None:
    """`hz approve NAME --json` prints the row's assets, frontmatter, watched and pending
    as JSON values, as `hz heinzel new --json` does (docs/cli.md: no JSON inside strings)."""
    assert hz("heinzel", "new", "--from", "digest.prose.md").code == 0
    done = hz("approve", "notes-digest", "--json")
    assert done.code == 0, done.err
    (row,) = json.loads(done.out)
    assert isinstance(row["frontmatter"], dict) and isinstance(row["assets"], list), row
    assert isinstance(row["watched"], dict) and row["pending"] is None, row
