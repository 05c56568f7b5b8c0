"""`files.read {path}`: a local file's content as an input.

The file is text (UTF-8); a name ending in ``.json`` is parsed as JSON and one ending in
``.jsonl`` line by line (blank lines skipped; a bad line is an error naming it). A
relative path resolves against the base folder: the folder of the contract file given to
``hz heinzel new --from``. Any path the user wrote in their own contract may be read, but a
symlink is followed only to a regular file whose name ends like the path written (a
``notes.json`` link never silently parses a ``.txt``, a device or a pipe). Files over
``max_bytes`` (8 MiB by default) are refused with a coded error rather than read, and
nothing under ``/proc``, ``/sys`` or ``/dev`` is read at all (``/proc/self/environ``
holds the process's keys), nor anything in hz's own places: its home's folders, the
credential store, any home's spines, bodies and index (HZH343,
`heinzel.capabilities.targets`).

Facets: ``content`` for text and for JSON that is not an object; one facet per top-level
key for a JSON object; ``lines`` for JSONL. The cursor is the file's mtime and size.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from types import MappingProxyType
from typing import Any

from heinzel.capabilities.errors import CapabilityError
from heinzel.capabilities.protocols import Fetched, MethodSpec, Window, check_call, fetched
from heinzel.capabilities.targets import Protected
from ledger.errors import LedgerError
from ledger.files import read_capped

__all__ = ["MAX_BYTES", "FilesCapability", "parse_content"]

MAX_BYTES = 8 * 1024 * 1024
_SYSTEM = ("/proc", "/sys", "/dev")

_METHODS: Mapping[str, MethodSpec] = MappingProxyType(
    {
        "read": MethodSpec(
            "read", window=False, args=frozenset({"path"}), required=frozenset({"path"})
        )
    }
)


def _no_constants(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def parse_content(text: str, suffix: str, shown: str) -> Any:
    """``text`` as the input value its file name says: JSON, JSONL lines, or the text."""
    if suffix == ".json":
        try:
            return json.loads(text, parse_constant=_no_constants)
        except json.JSONDecodeError as error:
            raise CapabilityError(
                "HZH114",
                f"{shown} is not valid JSON: {error.msg} at line {error.lineno}, "
                f"column {error.colno}",
                "fix the file, or rename it if it is not meant to be JSON",
            ) from None
        except ValueError as error:
            raise CapabilityError(
                "HZH114", f"{shown} is not valid JSON: {error}", "write null or a number instead"
            ) from None
    if suffix == ".jsonl":
        records = []
        for number, line in enumerate(text.split("\n"), start=1):
            if not line.strip():
                continue
            try:
                records.append(json.loads(line, parse_constant=_no_constants))
            except ValueError as error:
                reason = error.msg if isinstance(error, json.JSONDecodeError) else str(error)
                raise CapabilityError(
                    "HZH115",
                    f"{shown} line {number} is not valid JSON: {reason}",
                    "each line of a .jsonl file is one JSON value; fix or remove that line",
                ) from None
        return records
    return text


def _facets(value: Any, suffix: str) -> dict[str, Any]:
    if suffix == ".jsonl":
        return {"lines": value}
    if suffix == ".json" and isinstance(value, dict):
        return dict(value)
    return {"content": value}


class FilesCapability:
    """The ``files`` capability: reads local files for a contract whose folder is ``base``,
    never one of hz's own (``protected``)."""

    def __init__(
        self,
        base: Path | None = None,
        *,
        max_bytes: int = MAX_BYTES,
        protected: Protected | None = None,
    ) -> None:
        self._base = base
        self._max_bytes = max_bytes
        self._protected = protected or Protected()

    @property
    def name(self) -> str:
        """``files``."""
        return "files"

    @property
    def methods(self) -> Mapping[str, MethodSpec]:
        """``read {path}``, no window."""
        return _METHODS

    def fetch(
        self, method: str, args: Mapping[str, Any], window: Window | None, *, now: datetime
    ) -> Fetched:
        """The file named by ``args["path"]``, parsed by its name, with its fingerprints."""
        check_call(self, method, args, window)
        written = args["path"]
        if not isinstance(written, str) or not written:
            raise CapabilityError(
                "HZH102", "files.read: path must be a non-empty string", "e.g. path: notes.md"
            )
        path = self.resolve(written)
        suffix = Path(written).suffix.lower()
        data, info = self._read(path, written, suffix)
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as error:
            raise CapabilityError(
                "HZH113",
                f"{written} is not UTF-8 text (byte {error.start})",
                "files.read reads text files; convert it to UTF-8",
            ) from None
        value = parse_content(text, suffix, written)
        cursor = f"{info.st_mtime_ns}:{info.st_size}"
        return fetched(value, _facets(value, suffix), cursor=cursor, now=now)

    def resolve(self, written: str) -> Path:
        """The path ``written`` in a contract, made absolute against the base folder."""
        path = Path(written).expanduser()
        if path.is_absolute():
            return path
        if self._base is None:
            raise CapabilityError(
                "HZH116",
                f"{written} is relative and this contract has no folder to resolve it against",
                "write an absolute path, or create the Heinzelmännchen with --from FILE",
            )
        return self._base / path

    def _read(self, path: Path, written: str, suffix: str) -> tuple[bytes, os.stat_result]:
        target = path
        if path.is_symlink():
            target = Path(os.path.realpath(path))
            if target.suffix.lower() != suffix:
                raise CapabilityError(
                    "HZH111",
                    f"{written} is a link to {target.name}, a different kind of file",
                    "point the contract at the file itself",
                )
        real = Path(os.path.realpath(target))
        self._protected.check_read(real, written)
        if any(real == Path(top) or Path(top) in real.parents for top in _SYSTEM):
            raise CapabilityError(
                "HZH117",
                f"{written} is a system path ({real}), which files.read never reads",
                "point the contract at a file of your own (not /proc, /sys or /dev)",
            )
        try:
            data = read_capped(target, self._max_bytes, follow=False)
            info = os.stat(target, follow_symlinks=False)
        except LedgerError as error:
            if error.code == "HZL004":
                raise CapabilityError(
                    "HZH112",
                    f"{written} is larger than {self._max_bytes} bytes",
                    "read a smaller file (an export of the part the contract needs)",
                ) from None
            if error.code == "HZL001":
                raise CapabilityError(
                    "HZH111", f"{written} changed into a link while reading", "retry"
                ) from None
            raise CapabilityError(
                "HZH111",
                f"{written} is not a regular file",
                "files.read reads regular files only (no directories, pipes or devices)",
            ) from None
        except OSError as error:
            raise CapabilityError(
                "HZH110",
                f"cannot read {written} ({path}): {error.strerror or error}",
                "check the path in the contract and the file's permissions",
            ) from None
        return data, info
