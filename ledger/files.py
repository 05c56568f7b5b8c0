"""Private, atomic files: the only way `ledger` touches the disk.

Every directory hz makes is 0700 and every file 0600, whatever the process's
umask (the mode is set with ``chmod`` after creation, which the umask does not
touch). Links are never followed: files are opened with ``O_NOFOLLOW`` and a
symlink where hz expects its own file is refused with a coded error. A file
rewritten whole goes through `write_atomic` (temporary file in the same
directory, fsync, rename, fsync of the directory); an append-only file is
opened with `open_append`, which fsyncs the directory when it creates the file.
"""

from __future__ import annotations

import errno
import os
import secrets
import stat
from pathlib import Path

from ledger.errors import LedgerError

__all__ = [
    "DIR_MODE",
    "FILE_MODE",
    "TailBlock",
    "as_path",
    "ensure_private_dir",
    "fsync_dir",
    "is_private_dir",
    "last_newline_end",
    "open_append",
    "open_read",
    "private_file",
    "read_bytes",
    "read_capped",
    "write_atomic",
]

DIR_MODE = 0o700
FILE_MODE = 0o600
_NOFOLLOW = os.O_NOFOLLOW | os.O_CLOEXEC


def as_path(path: Path | str) -> Path:
    """``path`` as a `Path`, without building a new one from a `Path` (a turn opens a few)."""
    return path if isinstance(path, Path) else Path(path)


def _refused(path: Path, what: str) -> LedgerError:
    return LedgerError(
        "HZL001",
        f"{path} is {what}, not a file hz wrote; refusing to follow or replace it",
        "move it away or restore hz's own file at that path",
    )


def _io_failed(path: Path, error: OSError) -> LedgerError:
    return LedgerError(
        "HZL002",
        f"cannot write {path}: {error.strerror or error}",
        "check the disk (space, permissions, a read-only mount) and retry",
    )


def private_file(path: Path) -> None:
    """Create a file 0600, or make the one there 0600 (an SQLite database: the index),
    never through a link and never by opening the one there: closing any descriptor of a
    file drops every POSIX lock this process holds on it, those of its open SQLite
    connections too (a reader's SHARED lock, which tells another process the WAL is in
    use; without it, that process's close checkpoints and deletes the WAL under this
    one's connections, and writes are lost)."""
    try:
        fd = os.open(
            path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, FILE_MODE
        )
    except FileExistsError:
        mode = os.lstat(path).st_mode
        if not stat.S_ISREG(mode):
            code = errno.ELOOP if stat.S_ISLNK(mode) else errno.EISDIR
            raise OSError(code, os.strerror(code), str(path)) from None
        os.chmod(path, FILE_MODE)
        return
    try:
        os.fchmod(fd, FILE_MODE)  # a new file: no connection of this process has it open
    finally:
        os.close(fd)


def fsync_dir(path: Path) -> None:
    """Make a directory's entries (a created, renamed or deleted name) durable."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | _NOFOLLOW)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _nearest(path: Path) -> tuple[Path, os.stat_result | None, list[Path]]:
    """The nearest of ``path`` and its parents that is there, its ``lstat`` (None when not
    even the root is), and the missing ones below it, ``path`` first. A symlink at ``path``
    and anything that is not a directory where one must be are refused (HZL001)."""
    missing: list[Path] = []
    probe = path
    while True:
        try:
            info = os.lstat(probe)
        except FileNotFoundError:
            missing.append(probe)
            if probe.parent == probe:
                return probe, None, missing
            probe = probe.parent
            continue
        except NotADirectoryError:
            probe = probe.parent
            continue
        if probe == path and stat.S_ISLNK(info.st_mode):
            raise _refused(path, "a symlink")
        # a link (a parent may be one) is followed; for anything else lstat said it all
        found = os.stat(probe).st_mode if stat.S_ISLNK(info.st_mode) else info.st_mode
        if not stat.S_ISDIR(found):
            raise _refused(probe, "not a directory")
        return probe, info, missing


def ensure_private_dir(path: Path) -> Path:
    """Create ``path`` and its missing parents as 0700 directories (``mkdir -p``).

    The leaf is made 0700 even when it already existed; parents that already
    existed are left alone (they may be the user's). Each created directory's
    parent is fsynced, so the new name survives a crash. A symlink or a file at
    the leaf is refused (HZL001).
    """
    path = as_path(path)
    _, info, missing = _nearest(path)
    try:
        for directory in reversed(missing):
            try:
                os.mkdir(directory, DIR_MODE)
            except FileExistsError:
                continue
            os.chmod(directory, DIR_MODE, follow_symlinks=False)
            fsync_dir(directory.parent)
        if missing or info is None or stat.S_IMODE(info.st_mode) != DIR_MODE:
            # a chmod changes the directory's ctime even to the same mode, which the next
            # fsync on this disk then writes: only when the mode is not already 0700
            os.chmod(path, DIR_MODE, follow_symlinks=False)
    except OSError as error:
        raise _io_failed(path, error) from error
    return path


def is_private_dir(path: Path) -> bool:
    """Whether the directory ``path`` is there, creating nothing (for a read).

    False when it or a parent is missing. What `ensure_private_dir` would refuse is
    refused the same way (HZL001): a symlink at ``path``, or something that is not a
    directory at it or at a parent.
    """
    path = as_path(path)
    return not _nearest(path)[2]


def write_atomic(path: Path, data: bytes, *, sync: bool = True, sync_dir: bool = True) -> None:
    """Replace ``path`` with ``data`` as one step: a reader sees the old or the new file.

    A temporary 0600 file in the same directory is written and fsynced, renamed
    over ``path``, and the directory fsynced. A symlink at ``path`` is refused.
    ``sync_dir=False`` leaves the directory's fsync to the caller (one for a batch of
    files); ``sync=False`` fsyncs nothing, for a rewrite a crash may lose (a cache's
    ``as_of`` moved on, its content the same).
    """
    path = as_path(path)
    try:
        if stat.S_ISLNK(os.lstat(path).st_mode):
            raise _refused(path, "a symlink")
    except FileNotFoundError:
        pass
    temporary = path.with_name(f".{path.name}.tmp-{secrets.token_hex(6)}")
    try:
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW, FILE_MODE)
    except OSError as error:
        raise _io_failed(path, error) from error
    try:
        try:
            os.fchmod(fd, FILE_MODE)
            view = memoryview(data)
            while view:
                written = os.write(fd, view)
                view = view[written:]
            if sync:
                os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(temporary, path)
        if sync and sync_dir:
            fsync_dir(path.parent)
    except OSError as error:
        temporary.unlink(missing_ok=True)
        raise _io_failed(path, error) from error


def open_append(path: Path, *, sync_dir: bool = True) -> int:
    """Open ``path`` for appending (create it 0600 if missing) and return the descriptor.

    ``O_APPEND | O_NOFOLLOW``: a symlink is refused (HZL001), as is anything but a
    regular file. When the file is created, its directory is fsynced (unless
    ``sync_dir`` is False: the caller fsyncs it later, `fsync_dir`).
    """
    path = as_path(path)
    flags = os.O_WRONLY | os.O_APPEND | _NOFOLLOW
    try:
        try:
            fd = os.open(path, flags)
        except FileNotFoundError:
            fd = os.open(path, flags | os.O_CREAT | os.O_EXCL, FILE_MODE)
            os.fchmod(fd, FILE_MODE)
            if sync_dir:
                fsync_dir(path.parent)
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise _refused(path, "a symlink") from error
        raise _io_failed(path, error) from error
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise _refused(path, "not a regular file")
    return fd


def open_read(path: Path) -> int:
    """Open an existing regular file for reading without following a link.

    Raises FileNotFoundError when it is missing, HZL001 for a symlink or a
    non-regular file.
    """
    path = as_path(path)
    try:
        fd = os.open(path, os.O_RDONLY | _NOFOLLOW)
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise _refused(path, "a symlink") from error
        raise
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise _refused(path, "not a regular file")
    return fd


def read_bytes(path: Path) -> bytes:
    """The whole content of a regular file, read without following a link."""
    fd = open_read(path)
    with os.fdopen(fd, "rb") as handle:
        return handle.read()


def read_capped(path: Path, limit: int, *, follow: bool = True) -> bytes:
    """At most ``limit`` bytes of the regular file ``path``, in bounded memory.

    For files the user names (a contract, an input, a document): the open never
    blocks (``O_NONBLOCK``, so a FIFO is refused rather than waited on), anything
    but a regular file is HZL003 (a directory, a FIFO, ``/dev/zero``), and a file
    holding more than ``limit`` bytes is HZL004, found by reading at most
    ``limit + 1`` bytes whatever its size claims (``/proc`` files claim 0). With
    ``follow=False`` a symlink is HZL001. An open that fails raises the OSError.
    """
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | (0 if follow else os.O_NOFOLLOW)
    try:
        fd = os.open(path, flags)
    except OSError as error:
        if not follow and error.errno == errno.ELOOP:
            raise _refused(Path(path), "a symlink") from error
        raise
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise LedgerError(
                "HZL003",
                f"{path} is not a regular file (a directory, a pipe or a device)",
                "name a regular file",
            )
        if info.st_size > limit:
            raise _too_large(Path(path), limit)
        chunks: list[bytes] = []
        size = 0
        while size <= limit:
            chunk = os.read(fd, min(1 << 20, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > limit:
            raise _too_large(Path(path), limit)
        return b"".join(chunks)
    finally:
        os.close(fd)


def _too_large(path: Path, limit: int) -> LedgerError:
    return LedgerError("HZL004", f"{path} holds more than {limit} bytes", "name a smaller file")


def last_newline_end(fd: int, size: int, chunk: int = 65536) -> int:
    """The offset just after the last ``\\n`` in the first ``size`` bytes of ``fd`` (0 if none).

    Reads backwards from the end in chunks, the first of 4 KiB (a line is a few
    hundred bytes) and each next twice the last, up to ``chunk``: finding the end
    of the last complete line costs one small read in the common case.
    """
    end = size
    step = min(4096, chunk)
    while end > 0:
        start = max(0, end - step)
        block = os.pread(fd, end - start, start)
        index = block.rfind(b"\n")
        if index >= 0:
            return start + index + 1
        end = start
        step = min(step * 2, chunk)
    return 0


class TailBlock:
    """The last bytes of a file, read with one ``pread`` (``block`` bytes: a spine line
    is a few hundred), answering `last_newline_end` and reads within them from memory
    and reading the file only for what lies before them."""

    def __init__(self, fd: int, size: int, block: int = 8192) -> None:
        self.fd = fd
        self.base = max(0, size - block)
        self.data = os.pread(fd, size - self.base, self.base)

    def last_newline_end(self, size: int) -> int:
        """`last_newline_end` of the file's first ``size`` bytes."""
        if size <= self.base:
            return last_newline_end(self.fd, size)
        index = self.data.rfind(b"\n", 0, size - self.base)
        if index >= 0:
            return self.base + index + 1
        return last_newline_end(self.fd, self.base) if self.base else 0

    def read(self, start: int, end: int) -> bytes:
        """The file's bytes from ``start`` to ``end``."""
        if start >= self.base:
            return self.data[start - self.base : end - self.base]
        return os.pread(self.fd, end - start, start)
