"""What a newcomer walking docs/cli.md found about the home, through the real `hz`: a
file where the home should be is refused, not listed as empty."""

from __future__ import annotations

import json
from pathlib import Path

from tests.loop.conftest import Hz, Runner


def _modes(top: Path) -> dict[str, int]:
    """Every directory from ``top`` down, by path relative to ``top``, with its mode."""
    found = [top, *(p for p in top.rglob("*") if p.is_dir() and not p.is_symlink())]
    return {str(p.relative_to(top)): p.stat().st_mode & 0o777 for p in found}


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


class TestEveryDirectoryIs0700:
    """Every directory hz creates is 0700 (design.md), the home and its parents too."""

    def test_a_tick_makes_the_home_and_its_parents_0700(self, hz: Hz, tmp_path: Path) -> None:
        """`hz system daemon tick` of a home whose parents are missing: each directory it
        made is 0700, not mkdir's 0755 under the usual umask."""
        top = tmp_path / "new"
        done = hz("system", "daemon", "tick", env={"HZ_HOME": str(top / "deeper" / "home")})
        assert done.code == 0, done.err
        modes = _modes(top)
        assert modes == dict.fromkeys(modes, 0o700)
        assert {".", "deeper/home", "deeper/home/heinzel"} <= set(modes)

    def test_the_default_home_is_0700(
        self, hz_env: dict[str, str], folder: Path, tmp_path: Path
    ) -> None:
        """With no ``HZ_HOME``, the platform's data dir (``$XDG_DATA_HOME/hz``) made by a
        tick, and then by `hz heinzel new`, is 0700 with everything under it."""
        data = tmp_path / "data"
        env = {k: v for k, v in hz_env.items() if k != "HZ_HOME"}
        default = Runner({**env, "XDG_DATA_HOME": str(data)}, folder)
        assert default("system", "daemon", "tick").code == 0
        assert default("heinzel", "new", "--from", "digest.prose.md").code == 0
        modes = _modes(data)
        assert modes == dict.fromkeys(modes, 0o700)
        assert "hz/heinzel" in modes


class TestEmptyVariable:
    """An ``HZ_*`` variable set to the empty string counts as unset."""

    def test_an_empty_hz_home_is_the_default_not_the_working_directory(
        self, hz_env: dict[str, str], folder: Path, tmp_path: Path
    ) -> None:
        """`HZ_HOME=` (a half-done unset) and a tick: the home is the platform's data dir
        (``$XDG_DATA_HOME/hz``), nothing is made in the working directory, and an empty
        ``HZ_MAX_USD`` is no value to refuse."""
        data = tmp_path / "data"
        env = {**hz_env, "HZ_HOME": "", "HZ_MAX_USD": "", "XDG_DATA_HOME": str(data)}
        before = sorted(p.name for p in folder.iterdir())
        done = Runner(env, folder)("system", "daemon", "tick")
        assert done.code == 0, done.err
        assert sorted(p.name for p in folder.iterdir()) == before
        assert (data / "hz" / "heinzel").is_dir()


class TestRenameToItsOwnName:
    """`hz heinzel rename X X` is a no-op that succeeds, not "the name is taken"."""

    def test_rename_to_the_same_name_changes_nothing(self, hz: Hz, tmp_path: Path) -> None:
        """Exit 0, says nothing changed, and the spine gains no line; `--json` says
        ``unchanged``."""
        assert hz("heinzel", "new", "--from", "digest.prose.md").code == 0
        [spine] = (tmp_path / "home" / "heinzel").glob("hz-*/session.jsonl")
        before = spine.read_bytes()
        done = hz("heinzel", "rename", "notes-digest", "notes-digest")
        assert (done.code, done.err) == (0, "")
        assert "is already named notes-digest; nothing changed" in done.out
        shown = json.loads(hz("heinzel", "rename", "notes-digest", "notes-digest", "--json").out)
        assert (shown["name"], shown["unchanged"]) == ("notes-digest", True)
        assert spine.read_bytes() == before


class TestCreatedLineReadsWell:
    """The first line `hz heinzel new --from` prints says plainly that v1 waits."""

    def test_new_says_v1_is_not_approved_yet(self, hz: Hz) -> None:
        """``created NAME (ID): proposed, v1 not approved yet``, not ``proposed, (v1
        proposed)``; after approval the state line names ``v1`` alone."""
        done = hz("heinzel", "new", "--from", "digest.prose.md")
        assert done.code == 0, done.err
        first = done.out.splitlines()[0]
        assert first.startswith("created notes-digest (hz-")
        assert first.endswith("): proposed, v1 not approved yet")
        assert hz("approve", "notes-digest").code == 0
        paused = hz("heinzel", "pause", "notes-digest")
        assert paused.out.strip().endswith("): paused, v1")


class TestChatResent:
    """A chat resent with the same ``--request-id`` says it was already delivered."""

    def test_resent_chat_says_already_delivered(self, approved: Hz, tmp_path: Path) -> None:
        """The second send starts no turn and says so, naming the first one's turn and how
        it ended, not "delivered: a new turn"."""
        first = approved("heinzel", "chat", "notes-digest", "shorter", "--request-id", "rq-1")
        assert first.code == 0, first.err
        assert "delivered: a new turn" in first.out
        [turn] = [line for line in first.out.splitlines() if line.startswith("turn: ")]
        again = approved("heinzel", "chat", "notes-digest", "shorter", "--request-id", "rq-1")
        assert again.code == 0, again.err
        lines = again.out.splitlines()
        assert "delivered: already delivered (its turn ran then; nothing ran again)" in lines
        assert turn in lines and "state: finished" in lines
        assert "a new turn" not in again.out
        said = approved(
            "heinzel", "chat", "notes-digest", "shorter", "--request-id", "rq-1", "--json"
        )
        assert json.loads(said.out)["turn"] == turn.removeprefix("turn: ")
        [spine] = (tmp_path / "home" / "heinzel").glob("hz-*/session.jsonl")
        started = [line for line in spine.read_text().splitlines() if '"turn.started"' in line]
        assert len(started) == 1
