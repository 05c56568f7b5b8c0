"""``hz mcp``'s wire: fd 0 and 1 claimed for the protocol (light: no SDK here, so the
handshake can be answered before it loads, `heinzel.mcp.hello`)."""

from __future__ import annotations

import contextlib
import fcntl
import os
import sys
from collections.abc import Iterator
from typing import BinaryIO

__all__ = ["claimed"]


@contextlib.contextmanager
def claimed() -> Iterator[tuple[BinaryIO, BinaryIO]]:
    """The wire (private duplicates of fd 0 and 1) while fd 0 reads the null device and fd 1
    writes to stderr; both restored after."""
    wire_in = fcntl.fcntl(0, fcntl.F_DUPFD_CLOEXEC, 3)
    wire_out = fcntl.fcntl(1, fcntl.F_DUPFD_CLOEXEC, 3)
    null = os.open(os.devnull, os.O_RDONLY)
    sys.stdout.flush()
    os.dup2(null, 0)
    os.close(null)
    os.dup2(2, 1)
    # never closed: a worker thread may still block on the input when serving ends
    read = os.fdopen(wire_in, "rb", closefd=False)
    write = os.fdopen(wire_out, "wb", closefd=False)
    try:
        yield read, write
    finally:
        with contextlib.suppress(OSError):  # the client may be gone
            write.flush()
        os.dup2(wire_out, 1)
        os.dup2(wire_in, 0)
