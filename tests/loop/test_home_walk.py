"""What a newcomer walking docs/cli.md found about the home, through the real `hz`: a
file where the home should be is refused, not listed as empty."""

from __future__ import annotations

from pathlib import Path

from tests.loop.conftest import Hz


class TestHomeThatIsAFile:
    """A regular file at ``HZ_HOME`` (or at its ``heinzel/``) is HZL001, as a write says."""

    def test_list_of_a_file_home_is_hzl001(self, hz: Hz, tmp_path: Path) -> None:
        """`hz heinzel list` with a file for a home exits 1 with HZL001 and its hint on
        stderr, not "no Heinzelmännchen in ..." and exit 0; the file is left as it was."""
        home = tmp_path / "a-file"
        home.write_text("mine\n", encoding="utf-8")
        for args in (("heinzel", "list"), ("heinzel", "list", "--json")):
            done = hz(*args, env={"HZ_HOME": str(home)})
            assert (done.code, done.out) == (1, "")
            assert done.err.startswith(f"HZL001: {home} is not a directory")
            assert done.err.splitlines()[-1].startswith("hint: move it away")
        assert home.read_text(encoding="utf-8") == "mine\n"

    def test_a_file_at_heinzel_is_hzl001(self, hz: Hz, tmp_path: Path) -> None:
        """A home whose ``heinzel/`` is a file: HZL001 naming that file."""
        home = tmp_path / "home"
        home.mkdir()
        (home / "heinzel").write_text("", encoding="utf-8")
        done = hz("heinzel", "list")
        assert done.code == 1
        assert done.err.startswith(f"HZL001: {home / 'heinzel'} is not a directory")


class TestReadsCreateNoHome:
    """A read of a home that is not there yet creates nothing in it, nor the home."""

    def test_reads_of_a_missing_home_create_nothing(self, hz: Hz, tmp_path: Path) -> None:
        """`show`, `report`, `lessons` and `verify` of a name answer HZH080 (as in a home
        without it); `verify`, `list` and `drafts` answer for no Heinzelmännchen, exit 0;
        and after all of them the home is still not there."""
        home = tmp_path / "home"
        for command in ("show", "report", "lessons", "verify"):
            done = hz("heinzel", command, "notes-digest")
            assert done.code == 1, (command, done.err)
            assert done.err.startswith("HZH080: no Heinzelmännchen named 'notes-digest'")
        for args in (("heinzel", "verify"), ("heinzel", "list"), ("drafts", "--json")):
            assert hz(*args).code == 0, args
        assert hz("heinzel", "show", "notes-digest", "--json").code == 1
        assert not home.exists()

    def test_a_read_of_a_file_home_is_hzl001(self, hz: Hz, tmp_path: Path) -> None:
        """`show` of a home that is a file: HZL001, as `list` says, not HZH080."""
        home = tmp_path / "a-file"
        home.write_text("", encoding="utf-8")
        done = hz("heinzel", "show", "notes-digest", env={"HZ_HOME": str(home)})
        assert done.code == 1
        assert done.err.startswith(f"HZL001: {home} is not a directory")
