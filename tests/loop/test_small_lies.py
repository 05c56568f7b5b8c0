"""The command line's small lies (issue 13, item 8), through the `hz` executable."""

from __future__ import annotations

from pathlib import Path

from tests.loop.conftest import Hz


def test_a_second_file_after_from_is_a_usage_error(hz: Hz) -> None:
    """`new --from a.prose.md b.prose.md` no longer ignores b: exit 2, nothing created."""
    done = hz("heinzel", "new", "--from", "digest.prose.md", "other.prose.md")
    assert done.code == 2
    assert "--from A --from B" in done.err
    assert hz("heinzel", "list").out.startswith("no Heinzelmännchen")


def test_the_same_file_twice_is_a_usage_error(hz: Hz) -> None:
    """`--from x --from x` says the file is given twice, not that the name is taken."""
    done = hz("heinzel", "new", "--from", "digest.prose.md", "--from", "digest.prose.md")
    assert done.code == 2
    assert "given twice" in done.err


def test_a_refused_wake_names_the_heinzel_and_a_user_verb(approved: Hz) -> None:
    """Waking a paused one: HZH050 with a hint naming it, not a literal NAME."""
    assert approved("heinzel", "pause", "notes-digest").code == 0
    done = approved("heinzel", "wake", "notes-digest")
    assert done.code == 1
    assert "`hz heinzel unpause notes-digest`" in done.err


def test_list_creates_nothing_and_names_the_home(hz: Hz, tmp_path: Path) -> None:
    """`hz heinzel list` on a home that is not there: says where it looked, creates nothing."""
    done = hz("heinzel", "list")
    assert done.code == 0
    assert f"no Heinzelmännchen in {tmp_path / 'home'}" in done.out
    assert not (tmp_path / "home").exists()


def test_show_of_a_proposed_one_says_what_approving_grants(hz: Hz) -> None:
    """Before approving: what it reads (with args), keeps, publishes, its cap and the file."""
    assert hz("heinzel", "new", "--from", "digest.prose.md").code == 0
    shown = hz("heinzel", "show", "notes-digest").out
    assert "reads:     notes from files.read(path=notes.txt)" in shown
    assert "keeps:     section in file:report.md" in shown
    assert "publishes: documents.place_draft" in shown
    assert "per turn:  at most 0.5 USD" in shown
    assert "contract/v1.prose.md" in shown and "`hz approve notes-digest`" in shown


def test_home_before_the_subcommand(hz: Hz, tmp_path: Path) -> None:
    """`hz --home DIR heinzel new/list` uses DIR, as `--home` after the subcommand does."""
    other = tmp_path / "other"
    assert hz("--home", str(other), "heinzel", "new", "--from", "digest.prose.md").code == 0
    assert "notes-digest" in hz("--home", str(other), "heinzel", "list").out
    assert "notes-digest" in hz("heinzel", "list", "--home", str(other)).out
    assert hz("heinzel", "list").out.startswith("no Heinzelmännchen")


def test_prune_with_retention_zero_says_it_keeps_forever(approved: Hz) -> None:
    """`HZ_RETENTION_DAYS=0 hz heinzel prune` does not claim "older than 0 days"."""
    done = approved("heinzel", "prune", env={"HZ_RETENTION_DAYS": "0"})
    assert done.code == 0, done.err
    assert "older than 0 days" not in done.out and "keeps them forever" in done.out
