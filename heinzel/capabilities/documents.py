"""The ``documents`` adapter for local Markdown files: assets ``file:<path>``.

A draft is a section of the document::

    🧝 DRAFT (weekly-report v1): edit, then delete this line to approve
    <!-- hz:draft key=<key> -->

    <the draft text>

    <!-- hz:end key=<key> -->

The tag line is what the user sees; the two comments carry the idempotency key and mark
where the draft ends. ``find(key)`` looks for either comment. The draft's state is read
back from the file: the tag line still directly above the key comment is pending; the tag
line deleted (the user's edits between the comments kept) is approved, with that text; the
whole section gone is rejected; a missing or unreadable file, or markers that no longer
pair up, is unknown.

One live draft per Heinzelmännchen and asset: placing a draft whose key shares the
Heinzelmännchen and asset of a section still pending (tagged) replaces that section in
place, in the same write; an approved section (tag deleted) is never touched. Otherwise
the section goes where ``place`` says: ``end`` (the default), ``top`` (after a leading
``# `` title line, else first) or ``under:<heading>`` (right below the first heading
whose text is ``<heading>``; at the end when there is none). A document that does not
exist yet is created (mode 0600) when its folder exists. After an approval is observed,
`settle` removes the section's two comments, so the user's text stays clean.

Placing reads the file, changes only hz's section and replaces the file atomically,
keeping its permissions (in place behind a journal when it has other hard links,
`heinzel.capabilities.inplace`); a file that changed between read and replace is read again
(three tries), so a concurrent save is never overwritten. Nothing outside the section is
ever changed. A key is ``<id>@v<n>@<slot>@<asset>`` (ADR 0049, statement 5): the asset is
what follows the third ``@``, which is how `find` knows the file.

A marker is only hz's when the spine says so (issue 11, finding 14): keys are
predictable, so someone can plant ``<!-- hz:draft key=... -->`` for a draft hz has not
placed yet, and `place_draft` would take it for its own (and the tick would read its
text as approved). The act step therefore asks `find` before the first attempt of a key
the spine has never started, and `refuse_planted` fails the turn ``HZH280`` when the
markers are already there; the tick reads the state only of drafts the spine placed.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from types import MappingProxyType
from typing import Any

from heinzel.capabilities.errors import CapabilityError
from heinzel.capabilities.inplace import recover, replace_document
from heinzel.capabilities.protocols import (
    Approved,
    DraftState,
    Fetched,
    MethodSpec,
    Pending,
    Presence,
    Rejected,
    Unknown,
    Window,
    check_call,
    fetched,
)
from heinzel.capabilities.targets import Protected
from ledger.errors import LedgerError
from ledger.event import sha256_hex
from ledger.files import ensure_private_dir, read_capped, write_atomic
from machines.keys import short_asset

__all__ = [
    "TAG_PREFIX",
    "LocalDocuments",
    "absolute_asset",
    "approved_text",
    "asset_of_key",
    "draft_tag",
    "neutralise_markers",
    "normalise_text",
    "remember_asset",
    "text_hash",
    "without_pending",
]

TAG_PREFIX = "🧝 DRAFT"
_START = "<!-- hz:draft key={key} -->"
_END = "<!-- hz:end key={key} -->"
_MARK = "<!-- hz:"
NEUTRAL_MARK = "&lt;!-- hz:"
"""A marker's opening as a draft's text carries it (`neutralise_markers`)."""
_SHORT_RE = re.compile(r"^[A-Za-z0-9]+:#([0-9a-f]{16})(?::.*)?$")
"""A shortened asset in a draft key (``machines.keys.short_asset``); group 1 its hash."""
_START_RE = re.compile(r"^<!-- hz:draft key=(\S+) -->$")
PLACES = ("end", "top", "under:<heading>")
"""Where a new draft goes in its document (``outputs.<name>.place``)."""
_TRIES = 3
MAX_DOCUMENT_BYTES = 16 * 1024 * 1024
"""The largest document the adapter reads (a report of many years fits; 200 MB does not)."""
_METHODS: Mapping[str, MethodSpec] = MappingProxyType(
    {"read": MethodSpec("read", window=False, args=frozenset({"doc"}), required=frozenset({"doc"}))}
)


def draft_tag(name: str, version: int) -> str:
    """The tag line of a draft of ``name`` at contract version ``version``."""
    return f"{TAG_PREFIX} ({name} v{version}): edit, then delete this line to approve"


def absolute_asset(asset: str, base: Path) -> str:
    """``file:<relative>`` made ``file:<absolute>`` against ``base`` (the contract's folder);
    other assets unchanged. Done once when a Heinzelmännchen is created, so its draft keys
    name one file wherever hz runs from."""
    scheme, _, written = asset.partition(":")
    if scheme != "file" or not written or Path(written).expanduser().is_absolute():
        return asset
    return f"file:{base / written}"


def remember_asset(names: Path, asset: str) -> None:
    """Record ``asset`` in the folder ``names`` (``<home>/heinzel/assets``) under its short
    form's hash, fsynced, unless that record is there already: the draft keys that shorten
    it (``machines.keys.short_asset``) then name a document any process finds again. `hz
    approve` records every output of the version it approves (before the approval's line),
    so the turns' `LocalDocuments.place_draft` finds the record and writes nothing."""
    digest = _SHORT_RE.match(short_asset(asset))
    assert digest is not None
    path = names / digest.group(1)
    if path.is_file() and path.read_text(encoding="utf-8") == asset:
        return
    ensure_private_dir(names)
    write_atomic(path, asset.encode("utf-8"))


def asset_of_key(key: str) -> str:
    """The asset a draft key names: ``<id>@v<n>@<slot>@<asset>`` -> ``<asset>``."""
    parts = key.split("@", 3)
    if len(parts) != 4 or not parts[1].startswith("v") or not parts[3]:
        raise CapabilityError(
            "HZH134",
            f"not a draft key: {key!r}",
            "a draft key is <id>@v<version>@<slot>@<asset>",
        )
    if any(c.isspace() for c in key) or "-->" in key:
        raise CapabilityError(
            "HZH134", f"a draft key may not hold spaces or '-->': {key!r}", "use another asset name"
        )
    return parts[3]


def normalise_text(text: str) -> str:
    """A draft's text as compared and hashed: LF line ends, no blank lines around it."""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    while lines and not lines[0].strip():
        lines.pop(0)
    while lines and not lines[-1].strip():
        lines.pop()
    return "\n".join(lines)


def neutralise_markers(text: str) -> str:
    """``text`` with each ``<!-- hz:`` written ``&lt;!-- hz:``: no longer a comment, so no
    marker of hz's (a draft built from an input that holds one could not be placed, and
    every turn failed ``HZH132``), while Markdown still shows the reader the text it was.
    The replacement holds no ``<``, so it never forms a new marker."""
    return text.replace(_MARK, NEUTRAL_MARK)


def without_pending(text: str) -> str:
    """``text`` with every pending draft section left out (its tag line, its two comments,
    its text, and the blank line after it): what the document says as approved. A reader
    that falls back on the last approved version reads this (docs/turns-in-hz.md, "The
    flow")."""
    lines = text.split("\n")
    cut: list[tuple[int, int]] = []
    for line in lines:
        match = _START_RE.match(line.strip())
        if match is None:
            continue
        section = _Section(lines, match.group(1))
        if section.well_formed() and section.tagged():
            cut.append((section.starts[0] - 1, section.ends[0]))
    for first, last in sorted(cut, reverse=True):
        del lines[first : last + 1 + (last + 1 < len(lines) and not lines[last + 1])]
    return "\n".join(lines)


def approved_text(text: str) -> str:
    """``text`` as approved (`without_pending`), with hz's own lines left out too: the two
    comments of each approved section the tick has not settled yet (and the blank line
    inside each, as `LocalDocuments.settle` removes them), and any stray marker or tag
    line. What a reader of another Heinzelmännchen's output is given (docs/graph.md)."""
    lines = without_pending(text).split("\n")
    drop: set[int] = set()
    for i, line in enumerate(lines):
        stripped = line.strip()
        if stripped.startswith(_MARK) or line.lstrip().startswith(TAG_PREFIX):
            drop.add(i)
            if _START_RE.match(stripped) and i + 1 < len(lines) and not lines[i + 1].strip():
                drop.add(i + 1)
            if stripped.startswith("<!-- hz:end ") and i > 0 and not lines[i - 1].strip():
                drop.add(i - 1)
    return "\n".join(line for i, line in enumerate(lines) if i not in drop)


def text_hash(text: str) -> str:
    """The SHA-256 of a draft text's normalised form (what `place_draft` returns)."""
    return sha256_hex(normalise_text(text).encode("utf-8"))


class _Section:
    """Where a key's markers are in a document's lines, and what that means."""

    def __init__(self, lines: list[str], key: str) -> None:
        start, end = _START.format(key=key), _END.format(key=key)
        self.starts = [i for i, line in enumerate(lines) if line.strip() == start]
        self.ends = [i for i, line in enumerate(lines) if line.strip() == end]
        self.lines = lines

    @property
    def present(self) -> bool:
        return bool(self.starts or self.ends)

    def well_formed(self) -> bool:
        return len(self.starts) == 1 and len(self.ends) == 1 and self.starts[0] < self.ends[0]

    def text(self) -> str:
        return normalise_text("\n".join(self.lines[self.starts[0] + 1 : self.ends[0]]))

    def tagged(self) -> bool:
        above = self.starts[0] - 1
        return above >= 0 and self.lines[above].lstrip().startswith(TAG_PREFIX)


class LocalDocuments:
    """Drafts in local Markdown files; ``approver`` is who approves (from configuration),
    ``base`` the folder relative ``file:`` paths resolve against, ``names`` the folder
    where a long asset shortened in its draft key (``machines.keys.short_asset``) is
    recorded, one file per hash, so any process finds the document again; ``protected``
    hz's own places (`heinzel.capabilities.targets`), which it never reads or writes as a
    document (any home's ``heinzel/`` folder is one whatever is passed)."""

    def __init__(
        self,
        approver: str,
        base: Path | None = None,
        names: Path | None = None,
        protected: Protected | None = None,
    ) -> None:
        self._approver = approver
        self._base = base
        self._names = names
        self._protected = protected or Protected()

    def remember(self, asset: str) -> None:
        """Record ``asset`` under its short form's hash (before a key naming it is used):
        already done when its contract version was approved, so a wake writes nothing."""
        if self._names is not None:
            remember_asset(self._names, asset)

    def _asset_of(self, key: str) -> str:
        """The asset a draft key names, a shortened one read back from ``names``."""
        part = asset_of_key(key)
        short = _SHORT_RE.match(part)
        if short is None:
            return part
        path = None if self._names is None else self._names / short.group(1)
        try:
            asset = path.read_text(encoding="utf-8") if path is not None else ""
        except OSError:
            asset = ""
        if not asset or short_asset(asset) != part:
            raise CapabilityError(
                "HZH253",
                f"the draft key {key!r} names a shortened asset hz has no record of",
                "the record is kept under the home's heinzel/assets folder; "
                "restore it from a backup, or reject the draft by deleting its section",
            )
        return asset

    @property
    def name(self) -> str:
        """``documents``."""
        return "documents"

    @property
    def methods(self) -> Mapping[str, MethodSpec]:
        """``read {doc}``: a document as an input (its drafts included)."""
        return _METHODS

    def fetch(
        self, method: str, args: Mapping[str, Any], window: Window | None, *, now: datetime
    ) -> Fetched:
        """``documents.read {doc}``: the document's text; facet ``content``; cursor
        ``<mtime_ns>:<size>``."""
        check_call(self, method, args, window)
        asset = args["doc"]
        if not isinstance(asset, str):
            raise CapabilityError(
                "HZH102", "documents.read: doc must be an asset", "doc: file:x.md"
            )
        text = self.read(asset)
        info = os.stat(self._path(asset))
        cursor = f"{info.st_mtime_ns}:{info.st_size}"
        return fetched(text, {"content": text}, cursor=cursor, now=now)

    def place_draft(self, key: str, asset: str, text: str, tag: str, place: str = "end") -> str:
        """Place the draft section in ``asset`` unless ``key`` is already there: in place of
        a pending section of the same Heinzelmännchen and asset, else where ``place`` says.

        Returns the SHA-256 of the draft text as it stands in the document.
        """
        self.remember(asset)
        if self._asset_of(key) != asset:
            raise CapabilityError(
                "HZH134",
                f"the key {key!r} names another asset than {asset}",
                "a draft key ends with the asset it is placed in",
            )
        if "\n" in tag or "\r" in tag or not tag.startswith(TAG_PREFIX):
            raise CapabilityError(
                "HZH132", f"not a tag line: {tag!r}", "build it with draft_tag(name, version)"
            )
        body = normalise_text(text)
        if _MARK in body:
            raise CapabilityError(
                "HZH132",
                "a draft text may not contain hz's own markers (<!-- hz:...)",
                "remove them from the draft",
            )
        path = self._path(asset)
        self._protected.check_write(path, asset)
        for _ in range(_TRIES):
            original = self._load_or_new(path)
            current = self._decode(original or b"", asset)
            section = _Section(current.split("\n"), key)
            if section.present:
                return sha256_hex((section.text() if section.well_formed() else body).encode())
            updated = _placed(current, key, body, tag, place).encode("utf-8")
            if self._replace(path, original, updated):
                return sha256_hex(body.encode("utf-8"))
        raise CapabilityError(
            "HZH133",
            f"{path} kept changing while the draft was being placed",
            "the next tick tries again; close other programs writing to it",
            retryable=True,
        )

    def settle(self, key: str) -> bool:
        """Remove an approved section's two comments (and the blank line each leaves),
        keeping the user's text; True when something was removed. A pending, missing or
        broken section is left alone, so calling it again is harmless."""
        path = self._path(self._asset_of(key))
        if self._protected.refusal(path) is not None:
            return False
        for _ in range(_TRIES):
            try:
                original = self._load(path)
            except CapabilityError:
                return False
            lines = self._decode(original, self._asset_of(key)).split("\n")
            section = _Section(lines, key)
            if not section.present or not section.well_formed() or section.tagged():
                return False
            start, end = section.starts[0], section.ends[0]
            drop = {start, end}
            if start + 1 < end and not lines[start + 1].strip():
                drop.add(start + 1)
            if end - 1 > start + 1 and not lines[end - 1].strip():
                drop.add(end - 1)
            kept = [line for i, line in enumerate(lines) if i not in drop]
            if self._replace(path, original, "\n".join(kept).encode("utf-8")):
                return True
        return False

    def find(self, key: str) -> Presence:
        """``present`` when the key's markers are in the document, else ``absent``;
        ``unknown`` when the document can't be read. One of hz's own files never holds a
        draft (it is absent, so a resume performs it again, and is refused, HZH342)."""
        if self._protected.refusal(self._path(self._asset_of(key))) is not None:
            return "absent"
        lines = self._lines_or_none(key)
        if lines is None:
            return "unknown"
        return "present" if _Section(lines, key).present else "absent"

    def draft_state(self, key: str) -> DraftState:
        """Pending, approved (with the text as it now reads), rejected, or unknown."""
        lines = self._lines_or_none(key)
        if lines is None:
            return Unknown(f"cannot read {self._asset_of(key)}")
        section = _Section(lines, key)
        if not section.present:
            return Rejected()
        if not section.well_formed():
            return Unknown(
                f"the draft's markers in {self._asset_of(key)} no longer pair up "
                "(a hz:draft or hz:end comment was deleted or copied)"
            )
        if section.tagged():
            return Pending()
        return Approved(approver=self._approver, text=section.text())

    def read(self, asset: str) -> str:
        """The whole text of the document ``asset`` (HZH343 for one of hz's own files)."""
        path = self._path(asset)
        self._protected.check_read(path, asset)
        return self._decode(self._load(path), asset)

    def _lines_or_none(self, key: str) -> list[str] | None:
        """The document's lines; None when it can't be read or is one of hz's own files
        (no draft of hz's is ever there: `find` says absent, `draft_state` unknown)."""
        path = self._path(self._asset_of(key))
        if self._protected.refusal(path) is not None:
            return None
        try:
            return self._load(path).decode("utf-8").split("\n")
        except (CapabilityError, UnicodeDecodeError):
            return None

    def _path(self, asset: str) -> Path:
        scheme, _, written = asset.partition(":")
        if scheme != "file" or not written:
            raise CapabilityError(
                "HZH130",
                f"the documents adapter places drafts in file:<path> assets, not {asset}",
                "write the output's asset as file:report.md in the contract, then propose "
                "it: `hz heinzel amend NAME --from FILE`",
            )
        path = Path(written).expanduser()
        if not path.is_absolute():
            if self._base is None:
                raise CapabilityError(
                    "HZH116",
                    f"{asset} is relative and this contract has no folder to resolve it against",
                    "write an absolute path, or create the Heinzelmännchen with --from FILE",
                )
            path = self._base / path
        return Path(os.path.realpath(path))

    def _load(self, path: Path) -> bytes:
        """The document's bytes (a regular file, its links already resolved), after an
        interrupted in-place write of it is settled (`heinzel.capabilities.inplace`)."""
        try:
            recover(path)
            return read_capped(path, MAX_DOCUMENT_BYTES, follow=False)
        except OSError as error:
            raise CapabilityError(
                "HZH131",
                f"cannot read {path}: {error.strerror or error}",
                "create the document first, or fix the asset's path",
            ) from None
        except LedgerError as error:
            if error.code == "HZL004":
                raise CapabilityError(
                    "HZH136",
                    f"{path} is larger than {MAX_DOCUMENT_BYTES} bytes",
                    "start a new document for the drafts (archive the old weeks)",
                ) from None
            raise CapabilityError(
                "HZH131", f"{path} is not a regular file", "point the asset at a Markdown file"
            ) from None

    @staticmethod
    def _decode(data: bytes, asset: str) -> str:
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as error:
            raise CapabilityError(
                "HZH135",
                f"{asset} is not UTF-8 text (byte {error.start})",
                "save the document as UTF-8",
            ) from None

    def _load_or_new(self, path: Path) -> bytes | None:
        """The document's bytes, or None when it does not exist yet but its folder does
        (the first draft creates it); a missing folder is HZH131."""
        if not path.exists() and not path.is_symlink() and path.parent.is_dir():
            return None
        if not path.exists() and not path.parent.is_dir():
            raise CapabilityError(
                "HZH131",
                f"cannot create {path}: the folder {path.parent} does not exist",
                f"create the folder (mkdir -p {path.parent}) or fix the output's asset path",
            )
        return self._load(path)

    def _replace(self, path: Path, original: bytes | None, updated: bytes) -> bool:
        """Replace the file with ``updated`` unless it no longer holds ``original`` (None:
        the file must still not exist; it is created 0600). hz's own places are checked
        again right before the write, so a link planted meanwhile is not written through."""
        self._protected.check_write(path, str(path))
        if original is None:
            if path.exists():
                return False
            write_atomic(path, updated)
            os.chmod(path, 0o600)
            return True
        if self._load(path) != original:
            return False
        replace_document(path, updated)  # in place when hard-linked (`inplace`)
        return True


def _section_lines(key: str, body: str, tag: str) -> list[str]:
    return [tag, _START.format(key=key), "", body, "", _END.format(key=key)]


def _same(part: str) -> str:
    """A key's asset part in one form (shortened), so both forms of an asset compare equal."""
    return part if _SHORT_RE.match(part) else short_asset(part)


def _superseded(lines: list[str], key: str) -> list[tuple[int, int]]:
    """The pending sections of the same Heinzelmännchen and asset as ``key``: (first line,
    last line) each, tag line included."""
    owner, asset = key.split("@", 1)[0], _same(asset_of_key(key))
    found = []
    for line in lines:
        match = _START_RE.match(line.strip())
        other = match.group(1) if match else None
        if other is None or other == key or other.split("@", 1)[0] != owner:
            continue
        try:
            if _same(asset_of_key(other)) != asset:
                continue
        except CapabilityError:
            continue
        section = _Section(lines, other)
        if section.well_formed() and section.tagged():
            found.append((section.starts[0] - 1, section.ends[0]))
    return sorted(found)


def _placed(current: str, key: str, body: str, tag: str, place: str) -> str:
    """The document with the draft section placed (see the module's docstring)."""
    lines = current.split("\n")
    section = _section_lines(key, body, tag)
    old = _superseded(lines, key)
    if old:
        for first, last in reversed(old[1:]):
            del lines[first : last + 1 + (last + 1 < len(lines) and not lines[last + 1])]
        first, last = old[0]
        lines[first : last + 1] = section
        return "\n".join(lines)
    at = _insertion(lines, place)
    if at is None:
        return _appended(current, section)
    return "\n".join([*lines[:at], *section, "", *lines[at:]])


def _insertion(lines: list[str], place: str) -> int | None:
    """The line index a new section goes before; None for the end."""
    if place == "top":
        if lines and lines[0].startswith("# "):
            at = 1
            while at < len(lines) and not lines[at].strip():
                at += 1
            return at if at < len(lines) else None
        return 0 if any(line.strip() for line in lines) else None
    if place.startswith("under:"):
        wanted = place.removeprefix("under:").strip()
        for i, line in enumerate(lines):
            if line.startswith("#") and line.lstrip("#").strip() == wanted:
                at = i + 1
                while at < len(lines) and not lines[at].strip():
                    at += 1
                return at if at < len(lines) else None
    return None


def _appended(current: str, section: list[str]) -> str:
    prefix = current
    if prefix and not prefix.endswith("\n"):
        prefix += "\n"
    if prefix and not prefix.endswith("\n\n"):
        prefix += "\n"
    return prefix + "\n".join([*section, ""])


def refuse_planted(key: str, presence: str) -> None:
    """HZH280 when markers for ``key`` are in its document before hz ever started to
    place it (the spine has no effect for the key): a planted or copied marker."""
    if presence == "present":
        raise CapabilityError(
            "HZH280",
            f"{asset_of_key(key)} already holds hz:draft markers for {key}, "
            "which hz never placed (planted or copied)",
            "delete that hz:draft ... hz:end section from the document, then wake it again",
        )
