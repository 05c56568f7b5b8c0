"""The doctor checks the home a wake will meet (issue 13, item 7), through `hz`: an
output's folder gone, a spine that does not verify, a daily cap with no room."""

from __future__ import annotations

from pathlib import Path

from tests.loop.conftest import Hz


def test_a_healthy_home_passes_the_home_checks(approved: Hz) -> None:
    """One approved Heinzelmännchen whose folder exists and spine verifies: doctor ok."""
    done = approved("system", "doctor")
    assert done.code == 0, done.out
    assert "outputs" in done.out and "chains" in done.out and "daily cap" in done.out


def test_a_gone_output_folder_is_named_with_the_mkdir_that_fixes_it(hz: Hz, folder: Path) -> None:
    """The draft's folder removed after approval: HZH251 naming the folder, exit 1."""
    text = (folder / "digest.prose.md").read_text(encoding="utf-8")
    (folder / "digest.prose.md").write_text(
        text.replace("file:report.md", "file:out/report.md"), encoding="utf-8"
    )
    (folder / "out").mkdir()
    assert hz("heinzel", "new", "--from", "digest.prose.md").code == 0
    assert hz("approve", "notes-digest").code == 0
    assert hz("system", "doctor").code == 0
    (folder / "out").rmdir()
    done = hz("system", "doctor")
    assert done.code == 1
    assert "HZH251" in done.out
    assert f"mkdir -p {folder / 'out'}" in done.out


def test_a_spine_that_does_not_verify_is_named(approved: Hz, tmp_path: Path) -> None:
    """One byte of a spine line changed: HZH254 naming the Heinzelmännchen, exit 1."""
    (spine,) = (tmp_path / "home" / "heinzel").glob("hz-*/session.jsonl")
    data = spine.read_bytes()
    spine.write_bytes(data.replace(b'"owner"', b'"ownex"', 1))
    done = approved("system", "doctor")
    assert done.code == 1
    assert "HZH254" in done.out
    assert "notes-digest" in done.out


def test_a_daily_cap_with_no_room_for_a_turn_is_named(approved: Hz) -> None:
    """max_usd_per_day below a turn's cap: HZH255 and the setting to raise, exit 1."""
    done = approved("system", "doctor", env={"HZ_MAX_USD_PER_DAY": "0.1"})
    assert done.code == 1
    assert "HZH255" in done.out
    assert "max_usd_per_day" in done.out


def test_an_output_linked_into_the_home_is_named(approved: Hz, folder: Path) -> None:
    """The document made a link to its own spine after approval: HZH342 before a wake
    fails on it, exit 1."""
    [spine] = (folder.parent / "home" / "heinzel").glob("hz-*/session.jsonl")
    (folder / "report.md").unlink()
    (folder / "report.md").symlink_to(spine)
    done = approved("system", "doctor")
    assert done.code == 1
    assert "HZH342" in done.out and "its next draft would be refused" in done.out


def test_the_doctor_of_a_home_not_made_yet_creates_nothing(hz: Hz, tmp_path: Path) -> None:
    """`hz system doctor` reads: a home that is not there yet stays not there (no folder,
    no index), and the first line says it is created on first use."""
    home = tmp_path / "home"
    assert not home.exists()
    done = hz("system", "doctor")
    assert done.code == 0, done.out
    assert f"home: {home} (created on first use)" in done.out
    assert not home.exists()
