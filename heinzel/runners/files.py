"""Private files of a run: its temporary directory, the files hz writes, the output it reads.

The prompt and the contract go to files in a directory only this user can
open (0700, files 0600), removed when the run ends, so neither shows in the
process list. An output file the agent wrote is opened without following a
symbolic link, must be a regular file, and is read up to a cap.
"""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

__all__ = ["OutputFile", "private_dir", "read_output_file", "write_private_file"]


@contextmanager
def private_dir(prefix: str, parent: Path | None = None) -> Iterator[Path]:
    """A fresh 0700 directory, removed with everything in it when the block ends."""
    path = Path(tempfile.mkdtemp(prefix=prefix, dir=parent))
    try:
        os.chmod(path, 0o700)
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def write_private_file(path: Path, text: str) -> Path:
    """Create ``path`` (0600, never over an existing file or link) holding ``text``."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)
    return path


@dataclass(frozen=True)
class OutputFile:
    """What reading an agent's output file gave: its bytes, or why there are none."""

    data: bytes | None
    problem: str | None = None


def read_output_file(path: Path, cap: int) -> OutputFile:
    """Read at most ``cap`` bytes of a regular file, refusing links, FIFOs and larger files."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        return OutputFile(None, "the command wrote no output file")
    except OSError as exc:
        if os.path.islink(path):
            return OutputFile(None, "the output file is a symbolic link; refused")
        return OutputFile(None, f"the output file could not be opened: {exc.strerror or exc}")
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return OutputFile(None, "the output file is not a regular file; refused")
        data = handle.read(cap + 1)
    if len(data) > cap:
        return OutputFile(None, f"the output file is larger than {cap} bytes; refused")
    return OutputFile(data)
