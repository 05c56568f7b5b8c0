"""Writing a user's document whole, keeping its hard links (issue 38).

A document is normally replaced by a rename (`ledger.files.write_atomic`: a temporary
file beside it, fsynced, renamed over it): a reader sees the old or the new file, never a
torn one. A file with more than one hard link (``st_nlink > 1``) would lose its link that
way: its other names keep the old inode and never see the draft. Such a file is written
the way a careful editor does (vim's ``backupcopy=auto``): in place, so its inode, links,
mode and owner stay, and made crash-safe by a journal:

1. ``.<name>.hz-inplace`` beside it is written with the old and the new bytes (under a
   temporary name, fsynced, renamed, the folder fsynced): once it exists, it is whole;
2. the file is overwritten from its start, truncated to the new length and fsynced;
3. the journal is removed.

A crash between 1 and 3 leaves the journal. The next time hz reads or writes that
document (`recover`, called by the documents adapter and `hz approve` before they read
it), the journal is settled first: a document that holds the new bytes, or is torn
between the two (each byte the new or the old one's at its place, or zero), is given the
new bytes in place; one that still holds the old bytes keeps them (the write never
began; the effect ledger performs it again); one that is neither was edited since, and
is left as it is. The journal is removed in each case. A write the journal cannot make
durable changes nothing in the document (HZH420).
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path

from heinzel.capabilities.errors import CapabilityError
from ledger.errors import LedgerError
from ledger.files import fsync_dir, write_atomic
from machines.crashkit.crash import crash_at

__all__ = ["JOURNAL_SUFFIX", "journal_of", "recover", "replace_document"]

JOURNAL_SUFFIX = ".hz-inplace"
_MAGIC = b"hz-inplace 1\n"


def journal_of(path: Path) -> Path:
    """``.<name>.hz-inplace`` beside ``path``."""
    return path.with_name(f".{path.name}{JOURNAL_SUFFIX}")


def _failed(path: Path, error: OSError) -> CapabilityError:
    return CapabilityError(
        "HZH420",
        f"cannot write the hard-linked document {path} in place: {error.strerror or error}",
        "free space or fix the permissions, then run the command again; the document keeps "
        "its text, or the next hz command finishes the write from "
        f"{journal_of(path).name}",
    )


def replace_document(path: Path, data: bytes) -> None:
    """Replace the document at ``path`` (its links already resolved) with ``data``,
    keeping its mode and owner: by a rename, or in place when it has other hard links."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        write_atomic(path, data)
        return
    if info.st_nlink > 1 and stat.S_ISREG(info.st_mode):
        _write_in_place(path, data, info)
        return
    write_atomic(path, data)
    os.chmod(path, stat.S_IMODE(info.st_mode))
    if (info.st_uid, info.st_gid) != (os.getuid(), os.getgid()):
        # only root gives a file away; otherwise the writer owns it, as with an editor
        with contextlib.suppress(PermissionError):
            os.chown(path, info.st_uid, info.st_gid)


def _write_in_place(path: Path, data: bytes, info: os.stat_result) -> None:
    journal = journal_of(path)
    try:
        fd = os.open(path, os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as error:
        raise _failed(path, error) from None
    try:
        opened = os.fstat(fd)
        if (opened.st_dev, opened.st_ino) != (info.st_dev, info.st_ino):
            raise _failed(path, OSError(0, "it was replaced while being written"))
        old = _read_all(fd)
        refused = _journal(journal, _MAGIC + f"{len(old)}\n".encode() + old + data)
        if refused is not None:  # no journal: the document is not touched
            raise _failed(path, refused)
        try:
            _overwrite(fd, data)
        except OSError as error:
            raise _failed(path, error) from None
    finally:
        os.close(fd)
    journal.unlink(missing_ok=True)
    with contextlib.suppress(OSError):
        fsync_dir(path.parent)


def _journal(journal: Path, record: bytes) -> OSError | None:
    """Make the journal durable; the error that kept it from being written (outside the
    ``except``, so the caller's HZH420 is the failure's root cause, not HZL002)."""
    try:
        write_atomic(journal, record)
    except LedgerError as error:
        cause = error.__cause__
        return cause if isinstance(cause, OSError) else OSError(0, error.message)
    return None


def _read_all(fd: int) -> bytes:
    chunks = []
    offset = 0
    while chunk := os.pread(fd, 1 << 20, offset):
        chunks.append(chunk)
        offset += len(chunk)
    return b"".join(chunks)


def _overwrite(fd: int, data: bytes) -> None:
    """``data`` written over the file from its start, the rest cut off, fsynced."""
    view = memoryview(data)
    offset = 0
    half = len(data) // 2
    while offset < len(data):
        end = len(data) if offset >= half else half  # HZ_CRASH_AT=at:in-place: torn
        written = os.pwrite(fd, view[offset:end], offset)
        offset += written
        if offset == half:
            crash_at("in-place")
    os.ftruncate(fd, len(data))
    os.fsync(fd)


def _torn(current: bytes, old: bytes, new: bytes) -> bool:
    """Whether ``current`` is a mix of ``old`` and ``new`` as an interrupted overwrite
    leaves it: no longer than the longer of the two, each byte one of theirs at its
    place, or zero (a hole past the old end)."""
    if len(current) > max(len(old), len(new)):
        return False
    for i, byte in enumerate(current):
        if (i < len(new) and byte == new[i]) or (i < len(old) and byte == old[i]) or byte == 0:
            continue
        return False
    return True


def recover(path: Path) -> None:
    """Settle a journal an interrupted in-place write left beside ``path`` (see the
    module's docstring); a no-op when there is none."""
    journal = journal_of(path)
    try:
        record = journal.read_bytes()
    except FileNotFoundError:
        return
    except OSError:
        return  # unreadable: left for the user, the document as it is
    head, _, rest = record.partition(b"\n")
    size, _, body = rest.partition(b"\n")
    if head + b"\n" != _MAGIC or not size.isdigit() or int(size) > len(body):
        journal.unlink(missing_ok=True)
        return
    old, new = body[: int(size)], body[int(size) :]
    try:
        fd = os.open(path, os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return
    try:
        current = _read_all(fd)
        if current not in (old, new) and _torn(current, old, new):
            _overwrite(fd, new)
        elif current == new:
            os.fsync(fd)
    finally:
        os.close(fd)
    journal.unlink(missing_ok=True)
