"""The inbox: ``<id>/inbox/<request id>.json``, every user message written before anything
reads it (ADR 0049 statement 14).

A request file holds what the spine never does: the text of a chat message, a retry's
hint, a stop request. It is written atomically and privately before any spine line names
it, so a crash loses no message, and it is idempotent by request id: writing the same
request again changes nothing, writing another text under a taken id is ``HZH230``. The
spine records only ``request_id`` and the text's ``hash``. A running turn belongs to the
process that holds the spine's lock; that host reads `Inbox.pending` at its step
boundaries (steers, a stop) and marks each request ``taken``. Files expire with the turn
bodies under ``retention_days`` (`Inbox.prune`), never as a side effect of a read.
A chat also leaves an empty mark ``<home>/heinzel/pending/<id>@<request id>``, written
after its file, so the tick finds chats nobody took with one directory listing
(`Inbox.marked`) and drops the mark once a turn has the request. A sender killed between
the two (``HZ_CRASH_AT=at:inboxed``) leaves a file without its mark: the tick's
housekeeping marks it again (`Inbox.remark`), so the message is delivered all the same.

A ``context.edit`` that ``hz heinzel forget`` could not write because another process held
the spine's lock (a turn running there) is a request too (kind ``edit``, its id beginning
``rq-edit``): the next process that holds the lock to run a turn writes it first
(`apply_edits`), so it takes effect from the next turn, as forgetting promises.

A wake the tick hands to a turn running in another process (kind ``requested``,
`Inbox.hand`) is a request too: its message is the wake's ``{cause, key}``, its id derived
from the key (so a tick that hands it again changes nothing), and it is marked like a chat.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Final

from heinzel.errors import HeinzelError
from heinzel.store.home import Home
from ledger.event import canonical, format_ts, parse_ts, sha256_hex
from ledger.files import ensure_private_dir, write_atomic
from ledger.lazy import lazy_pattern
from ledger.records import frozen_record
from ledger.spine import Spine

__all__ = ["EDIT_PREFIX", "KINDS", "Inbox", "Request", "apply_edits", "handed"]

KINDS: Final = ("chat", "stop", "retry", "wake", "requested", "edit")
MARKED: Final = ("chat", "requested")
"""The kinds the tick looks for (`Inbox.marked`) until a turn has them."""


_name_re = lazy_pattern(r"^rq-[0-9A-Za-z]{1,64}\.json$")
_id_re = lazy_pattern(r"^rq-[0-9A-Za-z]{1,64}$")


EDIT_PREFIX: Final = "rq-edit"
"""How the id of a queued ``context.edit`` begins (`apply_edits` lists only those)."""


@frozen_record
class Request:
    """One message to a Heinzelmännchen: a chat text, a stop, a retry with its hint."""

    request_id: str
    heinzel: str
    kind: str
    message: str
    at: str
    hash: str
    taken: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"v": 1, **asdict(self)}


class Inbox:
    """The request files of one Heinzelmännchen."""

    def __init__(self, home: Home, heinzel_id: str) -> None:
        self.heinzel = heinzel_id
        self.directory = home.inbox_dir(heinzel_id)
        self.marks = home.heinzel_dir / "pending"
        """``<heinzel>@<request id>``: a chat the tick checks until a turn has it."""

    def path(self, request_id: str) -> Path:
        if not _id_re().match(request_id):
            raise HeinzelError(
                "HZH231",
                f"not a request id: {request_id!r}",
                "a request id is rq- and up to 64 letters or digits",
            )
        return self.directory / f"{request_id}.json"

    def write(self, request_id: str, kind: str, message: str, *, at: datetime) -> Request:
        """Write the request durably (or find it written); the same id with another
        kind or text is HZH230."""
        if kind not in KINDS:
            raise HeinzelError("HZH232", f"not a request kind: {kind!r}", ", ".join(KINDS))
        digest = _digest(message)
        existing = self.read(request_id)
        if existing is not None:
            if (existing.kind, existing.hash) != (kind, digest):
                raise HeinzelError(
                    "HZH230",
                    f"request {request_id} was already sent with another message",
                    "send a new message without --request-id, or repeat the same one",
                )
            return existing
        request = Request(request_id, self.heinzel, kind, message, format_ts(at), digest)
        ensure_private_dir(self.directory)
        write_atomic(self.path(request_id), (canonical(request.to_json()) + "\n").encode())
        if kind in MARKED:
            from machines.crashkit.crash import crash_at

            crash_at("inboxed")  # HZ_CRASH_AT=at:inboxed: the request written, not its mark
            self._mark(request_id)
        return request

    def _mark(self, request_id: str) -> None:
        ensure_private_dir(self.marks)
        write_atomic(self.marks / f"{self.heinzel}@{request_id}", b"")

    def remark(self) -> list[str]:
        """Mark again each request the tick should find that nobody took and whose mark is
        missing (its sender was killed between the file and the mark); the ids marked."""
        found = []
        for request in self.pending():
            if request.kind not in MARKED:
                continue
            if not (self.marks / f"{self.heinzel}@{request.request_id}").exists():
                self._mark(request.request_id)
                found.append(request.request_id)
        return found

    def hand(self, cause: str, key: str, *, at: datetime) -> Request:
        """A wake for the turn running in another process (ADR 0049 statement 14): its
        host records ``turn.requested{cause}`` under ``key`` and runs it as a follow-up.
        The request id is the key's hash, so handing the same wake twice is one request."""
        message = canonical({"cause": cause, "key": key})
        return self.write(_handed_id(key), "requested", message, at=at)

    def take_handed(self, key: str, *, at: datetime) -> None:
        """Take the wake handed for ``key`` (if one was) and drop its mark: a wake that
        turned out to have nothing to run (`heinzel.turns.approval.nothing_to_learn`)."""
        request_id = _handed_id(key)
        if self.read(request_id) is not None:
            self.take(request_id, at=at)
        self.unmark(request_id)

    def unmark(self, request_id: str) -> None:
        """Forget the tick's mark of a chat that a turn has (or that is gone)."""
        (self.marks / f"{self.heinzel}@{request_id}").unlink(missing_ok=True)

    @staticmethod
    def marked(home: Home) -> dict[str, list[str]]:
        """The chats marked for the tick, request ids by Heinzelmännchen: one directory
        listing, however many Heinzelmännchen there are."""
        found: dict[str, list[str]] = {}
        directory = home.heinzel_dir / "pending"
        if not directory.is_dir():
            return found
        for entry in sorted(directory.iterdir()):
            heinzel, _, request_id = entry.name.partition("@")
            if _id_re().match(request_id) and not entry.is_symlink():
                found.setdefault(heinzel, []).append(request_id)
        return found

    def read(self, request_id: str) -> Request | None:
        """The request, or None when there is none (a link or a garbled file is HZH233)."""
        path = self.path(request_id)
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except FileNotFoundError:
            return None
        except OSError as error:
            raise HeinzelError(
                "HZH233",
                f"cannot read the request {path}: {error.strerror or error}",
                "it must be a file hz wrote; move it away",
            ) from None
        with os.fdopen(fd, "rb") as handle:
            try:
                data = json.loads(handle.read().decode("utf-8"))
                return _request(data, request_id, self.heinzel)
            except (ValueError, TypeError) as error:
                raise HeinzelError(
                    "HZH233",
                    f"the request {path} is not readable: {error}",
                    "move it away; the sender can send it again",
                ) from None

    def take(self, request_id: str, *, at: datetime) -> Request:
        """Mark a request taken (its spine line is written); taking twice changes nothing."""
        found = self.read(request_id)
        if found is None:
            raise HeinzelError(
                "HZH234", f"no request {request_id} in the inbox", "it may have expired"
            )
        if found.taken is not None:
            return found
        taken = Request(**{**asdict(found), "taken": format_ts(at)})
        write_atomic(self.path(request_id), (canonical(taken.to_json()) + "\n").encode())
        return taken

    def answered_chats(self) -> dict[str, str]:
        """``{chat request id: asking turn}`` of the chats recorded as a question's answer
        (`heinzel.turns.answer_text` keeps the request id in ``answer-<turn>.json``): such a
        chat is that answer, whose follow-up is ``<id>@answer:<turn>``, never a turn of its
        own (a process killed between recording the answer and taking the chat)."""
        found: dict[str, str] = {}
        if not self.directory.is_dir():
            return found
        for path in self.directory.glob("answer-*.json"):
            try:
                request = json.loads(path.read_text(encoding="utf-8")).get("request")
            except (OSError, ValueError, AttributeError):
                continue
            if isinstance(request, str):
                found[request] = path.stem.removeprefix("answer-")
        return found

    def pending(self, kind: str | None = None) -> list[Request]:
        """Requests not yet taken, oldest first (ids are ULIDs, so names sort by time)."""
        if not self.directory.is_dir():
            return []
        found = []
        for entry in sorted(self.directory.iterdir()):
            if not _name_re().match(entry.name) or entry.is_symlink():
                continue
            request = self.read(entry.name.removesuffix(".json"))
            if request and request.taken is None and (kind is None or request.kind == kind):
                found.append(request)
        return found

    def prune(self, now: datetime, retention_days: int) -> list[str]:
        """Delete requests sent more than ``retention_days`` before ``now`` (0 keeps all);
        only names hz writes, never through a link. Returns the names deleted."""
        if retention_days <= 0 or not self.directory.is_dir():
            return []
        cutoff = now - timedelta(days=retention_days)
        deleted = []
        for entry in sorted(self.directory.iterdir()):
            if not _name_re().match(entry.name) or entry.is_symlink():
                continue
            request = self.read(entry.name.removesuffix(".json"))
            if request is not None and parse_ts(request.at) < cutoff:
                entry.unlink()
                deleted.append(entry.name)
        return deleted


def _handed_id(key: str) -> str:
    """The id of the request that hands the wake keyed ``key`` (the key's hash)."""
    return "rq-" + sha256_hex(key.encode("utf-8"))[:40]


def handed(request: Request) -> tuple[str, str] | None:
    """The ``(cause, key)`` a ``requested`` request hands on, or None (another kind, or
    a message that is not a wake)."""
    if request.kind != "requested":
        return None
    try:
        data = json.loads(request.message)
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    from machines.vocabulary import CAUSES  # only a handed wake reads it (start-up by need)

    cause, key = data.get("cause"), data.get("key")
    if cause not in CAUSES or not isinstance(key, str) or "@" not in key:
        return None
    return cause, key


def apply_edits(inbox: Inbox, spine: Spine) -> int:
    """Write each ``context.edit`` that ``hz heinzel forget`` left in the inbox while
    another process held the spine's lock (kind ``edit``, its message the line's data),
    oldest first, and delete its file (the line is its record; a crash in between writes
    the same edit again, which changes nothing); call it holding the lock, before a turn
    reads its context. The number written."""
    written = 0
    if not inbox.directory.is_dir():
        return written
    for path in sorted(inbox.directory.glob(f"{EDIT_PREFIX}*.json")):
        try:
            request = inbox.read(path.stem)
        except HeinzelError:
            request = None
        if request is None or request.kind != "edit":
            continue
        try:
            data = json.loads(request.message)
        except ValueError:
            data = None
        if isinstance(data, dict) and isinstance(data.get("target"), str):
            edit = {"target": data["target"], "replacement": data.get("replacement")}
            spine.append("context.edit", edit, short_text=("replacement",))
            written += 1
        path.unlink(missing_ok=True)  # the spine's line is its record now
    return written


def _digest(message: str) -> str:
    return "sha256:" + sha256_hex(message.encode("utf-8"))


def _request(data: dict[str, Any], request_id: str, heinzel: str) -> Request:
    """A request file as read: this module's form, or a bare ``{request, message, at}``
    that ``hz heinzel wake --message`` writes (kind ``wake``)."""
    if "request_id" not in data:
        message = str(data.get("message") or "")
        at = str(data.get("at", ""))
        return Request(request_id, heinzel, "wake", message, at, _digest(message), at or None)
    data.pop("v", None)
    return Request(**data)
