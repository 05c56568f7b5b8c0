"""Idempotency keys of wakes and effects, the key rule, and coalescing.

Every key starts with the owner's id and ``@`` (ADR 0049 statement 5, 13):

| cause / effect | key |
|---|---|
| schedule | ``<id>@<slot>`` |
| source-changed | ``<id>@<input>:<fingerprint>`` |
| discovered | ``<id>@discovered:<source>`` (once per source) |
| asked | ``<id>@<request id>`` |
| approval | ``<id>@approval:<output>:#<16 hex of the draft key>`` (once per placed draft) |
| created | ``<id>@created`` (once ever) |
| retry | ``<id>@retry:<request id>`` (old form: ``<id>@retry:<parent turn>:<request id>``) |
| stale | ``<id>@stale:<output>:<valid_until>`` |
| place_draft effect | ``<id>@v<contract version>@<slot>@<asset>`` |
| question effect | ``<id>@question:<turn>:<n>`` |

A key must fit the spine's label cap (200 characters, HZL024). A key that fits keeps the
readable form above, so every key already written reads the same. A place_draft key that
would not (a deep folder's absolute asset) has its asset replaced by ``short_asset``
(``<scheme>:#<16 hex of its SHA-256>:<file name>``) and a long slot by ``#<16 hex>``; the
documents adapter records each shortened asset so it can find the file again.

The rule: a key with ``turn.started`` and no end resumes that turn; a key with
``turn.finished`` or ``turn.skipped`` does nothing; an unseen key starts a turn.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import field
from typing import Literal

from ledger.guard import MAX_PLAIN
from ledger.records import frozen_record
from machines.errors import bad_key_part
from machines.host_vocabulary import HZ, Vocabulary
from machines.stores.journal import Journal
from machines.vocabulary import TERMINAL_KINDS


def _part(name: str, value: str, *, allow_at: bool = False) -> str:
    text = str(value)
    if not text or any(c.isspace() for c in text) or ("@" in text and not allow_at):
        raise bad_key_part(name, text)
    return text


def _hashed(text: str) -> str:
    """``#<16 hex>``: a long key part by its hash (never holds ``@`` or a space)."""
    return "#" + hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def short_asset(asset: str) -> str:
    """``<scheme>:#<16 hex>:<file name>``: a long asset in a key, its file name kept."""
    scheme, sep, rest = asset.partition(":")
    if not sep or not scheme.isalnum() or len(scheme) > 20:
        scheme, rest = "asset", asset
    name = "".join(c for c in rest.rstrip("/").rsplit("/", 1)[-1] if c.isprintable())[-40:]
    return f"{scheme}:{_hashed(asset)}" + (f":{name}" if name else "")


def schedule(owner: str, slot: str) -> str:
    """``<id>@<slot>``: one turn per schedule slot."""
    return f"{_part('id', owner)}@{_part('slot', slot)}"


def source_changed(owner: str, input_name: str, fingerprint: str) -> str:
    """``<id>@<input>:<fingerprint>``: one turn per input fingerprint."""
    return f"{_part('id', owner)}@{_part('input', input_name)}:{_part('fingerprint', fingerprint)}"


def discovered(owner: str, source: str) -> str:
    """``<id>@discovered:<source>``: a discovered source wakes at most once."""
    return f"{_part('id', owner)}@discovered:{_part('source', source)}"


def asked(owner: str, request_id: str) -> str:
    """``<id>@<request id>``: one turn per chat message or wake request."""
    return f"{_part('id', owner)}@{_part('request id', request_id)}"


def approval(owner: str, output: str, draft_key: str) -> str:
    """``<id>@approval:<output>:#<16 hex>``: one learning turn per placed draft, named by
    the hash of its key (`_hashed`), so two drafts of the same text are two approvals."""
    return f"{_part('id', owner)}@approval:{_part('output', output)}:{_hashed(draft_key)}"


def approval_parts(key: str) -> tuple[str, str, str]:
    """What `approval` built the key from: the owner, the output and the draft's part (the
    hash of its key; a key written before issue 38 has the draft's text hash there);
    empty strings for the parts a key that is not an approval key lacks."""
    owner, _, rest = key.partition("@approval:")
    output, _, draft = rest.partition(":")
    return owner, output, draft


def approval_names(key: str, draft_key: str, draft_hash: str | None) -> bool:
    """Whether the approval ``key`` names the draft ``draft_key`` (of text hash
    ``draft_hash``): its part is the hash of that key, or, in a key written before
    issue 38 (``<id>@approval:<output>:<text hash>``), that text hash."""
    part = approval_parts(key)[2]
    if part.startswith("#"):
        return part == _hashed(draft_key)
    return bool(part) and part == (draft_hash or "unhashed")


def created(owner: str) -> str:
    """``<id>@created``: the first turn, which compiles version 1."""
    return f"{_part('id', owner)}@created"


def retry(owner: str, request_id: str) -> str:
    """``<id>@retry:<request id>``: a fork of a turn, once per request whatever turn it
    forks (the parent goes into ``turn.started``). Keys of the old form
    ``<id>@retry:<parent turn>:<request id>`` still read: `retry_request` gives their
    request id alike."""
    return f"{_part('id', owner)}@retry:{_part('request id', request_id)}"


def retry_request(key: str) -> str | None:
    """The request id of a retry key, of either form (``<id>@retry:<request id>`` or the
    old ``<id>@retry:<parent turn>:<request id>``); None for any other key."""
    tail = key.partition("@")[2]
    if not tail.startswith("retry:"):
        return None
    return tail.rsplit(":", 1)[-1]


def stale(owner: str, output: str, valid_until: str) -> str:
    """``<id>@stale:<output>:<valid_until>``: one turn per expiry of an approved output."""
    return f"{_part('id', owner)}@stale:{_part('output', output)}:{_part('until', valid_until)}"


def place_draft(owner: str, contract_version: int, slot: str, asset: str) -> str:
    """``<id>@v<contract version>@<slot>@<asset>``: the place_draft effect's key, with a
    long asset (and slot) shortened so the key always fits the spine."""
    head = f"{_part('id', owner)}@v{int(contract_version)}"
    slot, asset = _part("slot", slot), _part("asset", asset)
    key = f"{head}@{slot}@{asset}"
    if len(key) <= MAX_PLAIN:
        return key
    return f"{head}@{slot if len(slot) <= 80 else _hashed(slot)}@{short_asset(asset)}"


def question(owner: str, turn: str, index: int) -> str:
    """``<id>@question:<turn>:<n>``: the n-th question a turn asks, asked once."""
    return f"{_part('id', owner)}@question:{_part('turn', turn)}:{int(index)}"


@frozen_record
class Wake:
    """A reason to run a turn: its cause (a cause of ``vocabulary``) and its key."""

    cause: str
    key: str
    vocabulary: Vocabulary = field(default=HZ, compare=False, repr=False)

    def __post_init__(self) -> None:
        self.vocabulary.check_cause(self.cause)


@frozen_record
class KeyAction:
    """What the key rule says to do with a wake: start, resume ``turn``, or nothing."""

    action: Literal["start", "resume", "none"]
    turn: str | None = None


def key_action(journal: Journal, key: str) -> KeyAction:
    """The key rule of ADR 0049 statement 5 for one key. A key a ``turn.steered`` line
    speaks for was delivered into that turn (statement 14): it never starts one of its own.
    Over a `SpineJournal` it reads nothing from the spine: the key's events and whether
    its turn ended come from the journal's index (`turn_ended`)."""
    events = journal.key_events(key)
    if any(e.kind in TERMINAL_KINDS or e.kind == "turn.steered" for e in events):
        return KeyAction("none")
    started = [e for e in events if e.kind == "turn.started"]
    if not started:
        return KeyAction("start")
    turn = started[-1].turn
    if turn is not None and turn_ended(journal, turn):
        return KeyAction("none")
    return KeyAction("resume", turn)


def turn_ended(journal: Journal, turn: str) -> bool:
    """Whether ``turn`` has ended (a line of `TERMINAL_KINDS`). A journal that knows it
    without reading its record answers through its own ``turn_ended(turn)`` (True, False,
    or None for "not known here": `SpineJournal` answers from its `SpineIndex`, so the key
    rule costs no spine read per key); otherwise the turn's events are read."""
    known = getattr(journal, "turn_ended", None)
    answer = known(turn) if callable(known) else None
    if answer is not None:
        return bool(answer)
    return any(e.kind in TERMINAL_KINDS for e in journal.turn_events(turn))


@frozen_record
class Plan:
    """What to do with the wakes due together: turns to resume, one turn to start."""

    resume: tuple[str, ...]
    start: tuple[Wake, ...]

    @property
    def cause(self) -> str | None:
        """The new turn's ``cause``: the first of ``start`` in the spec's order."""
        return self.start[0].cause if self.start else None


def order(wakes: Iterable[Wake]) -> list[Wake]:
    """Wakes in the spec's cause order (stable within a cause), each key once."""
    unique: dict[str, Wake] = {}
    for wake in wakes:
        unique.setdefault(wake.key, wake)
    return sorted(unique.values(), key=lambda w: w.vocabulary.causes.index(w.cause))


def coalesce(journal: Journal, wakes: Iterable[Wake]) -> Plan:
    """Apply the key rule to each wake and coalesce the new ones into one turn."""
    resume: list[str] = []
    start: list[Wake] = []
    for wake in order(wakes):
        action = key_action(journal, wake.key)
        if action.action == "resume" and action.turn and action.turn not in resume:
            resume.append(action.turn)
        elif action.action == "start":
            start.append(wake)
    return Plan(tuple(resume), tuple(start))
