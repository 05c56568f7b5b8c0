"""Private, atomic files: 0700/0600 whatever the umask, links never followed."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from ledger.errors import LedgerError
from ledger.files import (
    TailBlock,
    ensure_private_dir,
    is_private_dir,
    last_newline_end,
    open_append,
    open_read,
    read_bytes,
    write_atomic,
)


def mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


@pytest.mark.usefixtures("hostile_umask")
class TestEnsurePrivateDir:
    def test_creates_missing_parents_as_0700(self, tmp_path: Path) -> None:
        """Every directory it creates is 0700 under umask 000."""
        leaf = ensure_private_dir(tmp_path / "a" / "b" / "c")
        assert [mode(p) for p in (tmp_path / "a", tmp_path / "a" / "b", leaf)] == [0o700] * 3

    def test_existing_parent_is_left_alone_and_leaf_made_private(self, tmp_path: Path) -> None:
        """A parent the user owns keeps its mode; the leaf becomes 0700."""
        (tmp_path / "home").mkdir(mode=0o755)
        os.chmod(tmp_path / "home", 0o755)
        (tmp_path / "home" / "leaf").mkdir(mode=0o777)
        ensure_private_dir(tmp_path / "home" / "leaf")
        assert (mode(tmp_path / "home"), mode(tmp_path / "home" / "leaf")) == (0o755, 0o700)

    def test_refuses_a_symlink_leaf(self, tmp_path: Path) -> None:
        """A link where hz expects its own directory is HZL001, never followed."""
        (tmp_path / "elsewhere").mkdir()
        (tmp_path / "link").symlink_to(tmp_path / "elsewhere")
        with pytest.raises(LedgerError) as caught:
            ensure_private_dir(tmp_path / "link")
        assert caught.value.code == "HZL001"

    def test_refuses_a_file_in_the_way(self, tmp_path: Path) -> None:
        """A regular file at the directory's path is HZL001."""
        (tmp_path / "f").write_bytes(b"")
        with pytest.raises(LedgerError) as caught:
            ensure_private_dir(tmp_path / "f" / "sub")
        assert caught.value.code == "HZL001"


class TestIsPrivateDir:
    """`is_private_dir` answers for a read, creating nothing, refusing what a write would."""

    def test_missing_is_false_and_creates_nothing(self, tmp_path: Path) -> None:
        """A directory (and parent) not there: False, and still not there."""
        assert is_private_dir(tmp_path / "home" / "heinzel") is False
        assert list(tmp_path.iterdir()) == []

    def test_there_is_true(self, tmp_path: Path) -> None:
        """A directory that is there: True."""
        assert is_private_dir(tmp_path) is True

    def test_a_file_in_the_way_is_hzl001(self, tmp_path: Path) -> None:
        """A regular file at the path or a parent is HZL001, as `ensure_private_dir` says."""
        (tmp_path / "f").write_bytes(b"")
        for path in (tmp_path / "f", tmp_path / "f" / "sub"):
            with pytest.raises(LedgerError) as caught:
                is_private_dir(path)
            assert caught.value.code == "HZL001"


@pytest.mark.usefixtures("hostile_umask")
class TestWriteAtomic:
    def test_writes_0600_and_replaces_whole(self, tmp_path: Path) -> None:
        """The file holds exactly the new bytes, mode 0600, no temporary left."""
        target = tmp_path / "state.json"
        write_atomic(target, b"old")
        write_atomic(target, b"new")
        assert (target.read_bytes(), mode(target), os.listdir(tmp_path)) == (
            b"new",
            0o600,
            ["state.json"],
        )

    def test_refuses_to_replace_a_symlink(self, tmp_path: Path) -> None:
        """A link at the target is HZL001 and its target is untouched."""
        (tmp_path / "victim").write_bytes(b"keep")
        (tmp_path / "state.json").symlink_to(tmp_path / "victim")
        with pytest.raises(LedgerError) as caught:
            write_atomic(tmp_path / "state.json", b"new")
        assert (caught.value.code, (tmp_path / "victim").read_bytes()) == ("HZL001", b"keep")

    def test_failure_is_coded_and_leaves_no_temporary(self, tmp_path: Path) -> None:
        """Writing into a missing directory is HZL002, not a traceback."""
        with pytest.raises(LedgerError) as caught:
            write_atomic(tmp_path / "missing" / "f", b"x")
        assert caught.value.code == "HZL002"


@pytest.mark.usefixtures("hostile_umask")
class TestOpenAppend:
    def test_creates_0600_and_appends(self, tmp_path: Path) -> None:
        """A new file is 0600; writes land at the end."""
        target = tmp_path / "log.jsonl"
        for chunk in (b"a\n", b"b\n"):
            fd = open_append(target)
            os.write(fd, chunk)
            os.close(fd)
        assert (target.read_bytes(), mode(target)) == (b"a\nb\n", 0o600)

    def test_refuses_a_symlink(self, tmp_path: Path) -> None:
        """O_NOFOLLOW: a link is HZL001 and its target gets nothing."""
        (tmp_path / "victim").write_bytes(b"")
        (tmp_path / "log.jsonl").symlink_to(tmp_path / "victim")
        with pytest.raises(LedgerError) as caught:
            open_append(tmp_path / "log.jsonl")
        assert (caught.value.code, (tmp_path / "victim").read_bytes()) == ("HZL001", b"")

    def test_refuses_a_directory(self, tmp_path: Path) -> None:
        """Anything but a regular file is refused."""
        (tmp_path / "log.jsonl").mkdir()
        with pytest.raises(LedgerError) as caught:
            open_append(tmp_path / "log.jsonl")
        assert caught.value.code in {"HZL001", "HZL002"}


class TestReading:
    def test_read_bytes_refuses_a_symlink(self, tmp_path: Path) -> None:
        """Reads never follow a link either."""
        (tmp_path / "victim").write_bytes(b"secret")
        (tmp_path / "f").symlink_to(tmp_path / "victim")
        with pytest.raises(LedgerError) as caught:
            read_bytes(tmp_path / "f")
        assert caught.value.code == "HZL001"

    def test_missing_file_is_file_not_found(self, tmp_path: Path) -> None:
        """A missing file is the caller's to interpret (a gap, an empty spine)."""
        with pytest.raises(FileNotFoundError):
            open_read(tmp_path / "none")

    @pytest.mark.parametrize(
        ("content", "expected"),
        [(b"", 0), (b"abc", 0), (b"a\n", 2), (b"a\nbc", 2), (b"a\nb\n", 4)],
    )
    def test_last_newline_end(self, tmp_path: Path, content: bytes, expected: int) -> None:
        """The end of the last complete line, found from the end of the file."""
        (tmp_path / "f").write_bytes(content)
        fd = open_read(tmp_path / "f")
        try:
            assert last_newline_end(fd, len(content), chunk=1) == expected
        finally:
            os.close(fd)

    @pytest.mark.parametrize("block", [1, 3, 7, 64])
    def test_a_tail_block_answers_as_the_file_does(self, tmp_path: Path, block: int) -> None:
        """TailBlock finds every line end and reads every span as the file itself
        gives them, within its block or before it."""
        content = b"ab\ncdefgh\n\nijklmnopqrstu\nvw"
        (tmp_path / "f").write_bytes(content)
        fd = open_read(tmp_path / "f")
        try:
            tail = TailBlock(fd, len(content), block=block)
            for size in range(len(content) + 1):
                assert tail.last_newline_end(size) == last_newline_end(fd, size)
                assert tail.read(size // 2, size) == content[size // 2 : size]
        finally:
            os.close(fd)
