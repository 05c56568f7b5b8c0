"""A turn's inputs: the contract's declared inputs as source requests, staged first.

Inputs are fetched through the adapters into the source cache (`heinzel.store.sources`)
before ``turn.started`` is written, with local paths made absolute against the
contract's origin folder (``heinzel.created``'s ``origin``). The gather step then only
reads the cache, so a resumed turn does not fetch again, unless a power cut took an entry
(entries are not fsynced): then gather fetches it again (`read_staged`), and the resume
records the input it regained. The rest of what a turn reads
is here too: the default adapters, an asked turn's messages from the inbox, the settled
messages of recent turns, and the last approved draft as the document has it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from heinzel.capabilities.protocols import Approved, ReadCapability, Window
from heinzel.capabilities.targets import Protected
from heinzel.config import Settings
from heinzel.contract import CompiledContract
from heinzel.contract.types import parse_duration, split_method
from heinzel.engine.spec import InputSpec, ReadMethod, SpineView
from heinzel.errors import HeinzelError
from heinzel.store.credentials import stored_secret
from heinzel.store.discovered import read_found
from heinzel.store.home import Home
from heinzel.store.sources import SourceCache, SourceRequest, TickFetch, absolute_args, fetch_once
from heinzel.store.targets import protected_places
from ledger.bodies import Bodies

if TYPE_CHECKING:
    from pydantic_ai.messages import ModelMessage
    from sqlite_utils import Database

__all__ = [
    "INBOX_CAUSES",
    "SearchCapability",
    "asked_inputs",
    "default_adapters",
    "discovered_inputs",
    "input_requests",
    "last_approved",
    "read_staged",
    "recent_bodies",
    "refuse_unfetched",
    "render_input",
    "search_capabilities",
    "stage",
]


INBOX_CAUSES = ("asked", "retry", "discovered")
"""Causes whose turn reads what was written for it first (`asked_inputs`)."""


def default_adapters(
    settings: Settings, fixtures_dir: Path | None = None, *, protected: Protected | None = None
) -> dict[str, object]:
    """The adapter map of a tick or a wake: files, git, documents, the fixture sources
    when set, and each ``[adapters.<capability>]`` table's backend (GitHub, CalDAV...).
    ``protected``: hz's own places, never read or written as an input or a draft (by
    default the configured home's and this environment's credential store)."""
    if protected is None:
        protected = protected_places(Home(settings.heinzel.home), os.environ)
    approver = settings.heinzel.approver or settings.team.handle or "owner"
    fixtures = fixtures_dir or settings.heinzel.fixture_sources
    assets = Home(settings.heinzel.home).heinzel_dir / "assets"
    if not settings.adapters:  # no [adapters.*] table: no table models (pydantic) to load
        from heinzel.capabilities.builtin import builtin_adapters

        return builtin_adapters(
            approver=approver, fixtures=fixtures, asset_names=assets, protected=protected
        )
    from heinzel.capabilities.configured import build_adapters

    return build_adapters(
        settings.adapters,
        approver=approver,
        http_cache=Home(settings.heinzel.home).heinzel_dir / "http",
        environ=os.environ,
        fixtures=fixtures,
        stored=lambda provider: stored_secret(provider, os.environ),
        asset_names=assets,
        protected=protected,
    )


def asked_inputs(home: Home, heinzel_id: str, wake_keys: Sequence[str]) -> tuple[InputSpec, ...]:
    """The user's words for a turn from the inbox: the messages of asked keys
    ``<id>@<request id>`` as inputs ``message``, ``message-2``..., a retry's hint
    (key ``<id>@retry:<parent>:<request id>``) as ``hint``, and the answer to a question
    (key ``<id>@answer:<turn>``) as ``answer``; an unreadable one: no input. Each input's
    source is ``inbox:<file stem>`` (the request id), so an amendment can cite it."""
    found: list[InputSpec] = []
    for key in wake_keys:
        tail = key.split("@", 1)[-1]
        if tail.startswith("discovered:"):
            found += discovered_inputs(home, heinzel_id, tail.removeprefix("discovered:"))
            continue
        retry = tail.startswith("retry:")
        if tail.startswith("answer:"):
            tail = "answer-" + tail.removeprefix("answer:")
        path = home.inbox_dir(heinzel_id) / f"{tail.rsplit(':', 1)[-1] if retry else tail}.json"
        try:
            message = json.loads(path.read_text(encoding="utf-8")).get("message")
        except (OSError, ValueError, AttributeError):
            continue
        if not message:
            continue
        asked = [i for i in found if i.name.startswith("message")]
        name = "hint" if retry else ("message" if not asked else f"message-{len(asked) + 1}")
        name = "answer" if tail.startswith("answer-") else name
        found.append(InputSpec(name, str(message), f"inbox:{path.stem}"))
    return tuple(found)


def discovered_inputs(home: Home, heinzel_id: str, source: str) -> list[InputSpec]:
    """A discovered turn's inputs: ``discovered`` (the record the daily discovery wrote:
    hint, method, args, the input it would replace) and ``contract`` (the text of the
    version it was found under, which an amendment starts from); none when unreadable."""
    record = read_found(home, heinzel_id, source)
    if record is None:
        return []
    try:
        version = int(record["version"])
        text = home.contract_text_path(heinzel_id, version).read_text(encoding="utf-8")
    except (KeyError, TypeError, ValueError, OSError):
        return []
    shown = json.dumps(record, sort_keys=True, ensure_ascii=False)
    return [InputSpec("discovered", shown, "discovery"), InputSpec("contract", text, "contract")]


def recent_bodies(bodies: Bodies, view: SpineView, keep: int) -> dict[str, list[ModelMessage]]:
    """The settled messages of the last ``keep`` turns whose bodies are still there."""
    from heinzel.engine.body import Saved  # pydantic-ai: read when a turn thinks

    turns = list(dict.fromkeys(r.turn for r in view.records if r.turn))[-keep:] if keep else []
    out: dict[str, list[ModelMessage]] = {}
    for turn in turns:
        records = bodies.read(turn)
        if records:
            settled = Saved.fold(records).settled
            if settled:
                out[turn] = list(settled)
    return out


def last_approved(
    db: Database, heinzel_id: str, documents: Any, session_dir: Path | None = None
) -> str | None:
    """The text of the last approved draft: as the document now has it while hz's markers
    are there, else as the approval turn kept it in its body (None: none)."""
    rows = list(
        db.query(
            "SELECT key FROM drafts WHERE heinzel = ? AND state = 'approved' "
            "ORDER BY placed_at DESC LIMIT 1",
            [heinzel_id],
        )
    )
    if not rows:
        return None
    key = rows[0]["key"]
    state = documents.draft_state(key) if documents is not None else None
    if isinstance(state, Approved):
        return state.text
    if session_dir is None:
        return None
    turns = db.query(
        "SELECT id FROM turns WHERE heinzel = ? AND cause = 'approval' "
        "ORDER BY started_at DESC, start_seq DESC LIMIT 5",
        [heinzel_id],
    )
    bodies = Bodies(session_dir)
    for turn in turns:
        for record in bodies.read(str(turn["id"])) or []:
            value = record.get("value")
            if isinstance(value, dict) and value.get("approved") == key:
                return str(value.get("text", ""))
    return None


def input_requests(
    heinzel_id: str, contract: CompiledContract, origin: Path
) -> list[SourceRequest]:
    """One `SourceRequest` per declared input, paths made absolute against ``origin``."""
    requests = []
    for name, spec in contract.hz.inputs.items():
        capability, method = split_method(spec.from_)
        requests.append(
            SourceRequest(
                watcher=heinzel_id,
                input=name,
                capability=capability,
                method=method,
                args=absolute_args(capability, method, spec.args, origin),
                window=spec.window,
                facet=spec.facet,
            )
        )
    return requests


def stage(
    requests: Sequence[SourceRequest],
    adapters: Mapping[str, ReadCapability],
    now: datetime,
    cache: SourceCache,
) -> TickFetch:
    """Fetch every request once into the cache (before any ``turn.started``)."""
    return fetch_once(requests, adapters, now, cache=cache)


def render_input(result: Any) -> str:
    """An input's content as the engine reads it: text as is, anything else as JSON lines."""
    if isinstance(result, str):
        return result
    if isinstance(result, list):
        return "\n".join(json.dumps(item, sort_keys=True, ensure_ascii=False) for item in result)
    return json.dumps(result, sort_keys=True, ensure_ascii=False)


def read_staged(
    requests: Sequence[SourceRequest],
    cache: SourceCache,
    restage: Callable[[Sequence[SourceRequest]], TickFetch] | None = None,
) -> list[dict[str, str]]:
    """The staged inputs, read from the cache. An entry that is missing or torn (a power
    cut took it: the cache is written without fsyncs) is fetched again with ``restage``
    (`stage` with the turn's adapters): the source's error if that fails, HZH200 when
    there is no ``restage`` or it still is not there."""
    gone = [request for request in requests if cache.get(request.key) is None]
    if gone and restage is not None:
        for item in restage(gone).staged:
            if item.fetched is None and item.error is not None:
                raise item.error
    out = []
    for request in requests:
        fetched = cache.get(request.key)
        if fetched is None:
            raise HeinzelError(
                "HZH200",
                f"input {request.input} is not staged in the source cache",
                "the cache was pruned under a running turn; retry the turn (hz heinzel retry)",
            )
        out.append(
            {
                "name": request.input,
                "source": f"{request.capability}.{request.method}",
                "content": render_input(fetched.result),
                "fingerprint": fetched.fingerprint,
            }
        )
    return out


class SearchCapability:
    """An adapter's window-taking read methods as the engine's ``search_<capability>`` tool.

    Each search is a fresh fetch (read-only, replay-safe: its result is kept in the body
    with the messages, so a resume does not search again).
    """

    def __init__(self, name: str, adapter: ReadCapability, now: datetime) -> None:
        self._name = name
        self._adapter = adapter
        self._now = now

    @property
    def name(self) -> str:
        """The capability's name (``git``, ``code-host``, ...)."""
        return self._name

    @property
    def methods(self) -> Sequence[ReadMethod]:
        """The adapter's methods that take a window."""
        return [
            ReadMethod(m.name, f"{self._name}.{m.name} over a window", "read", takes_window=True)
            for m in self._adapter.methods.values()
            if m.window
        ]

    async def search(self, method: str, args: Mapping[str, str], window: str) -> Any:
        """Fetch ``method`` over the ``window`` ending now (``7d``); its result as text."""
        span = Window.ending_at(self._now, parse_duration(window))
        fetched = self._adapter.fetch(method, dict(args), span, now=self._now)
        return render_input(fetched.result)


def search_capabilities(
    contract: CompiledContract, adapters: Mapping[str, object], now: datetime
) -> list[SearchCapability]:
    """A search capability per ``<cap>:read`` the contract requires that has an adapter."""
    out = []
    for requirement in contract.hz.requires:
        name, _, mode = requirement.partition(":")
        adapter = adapters.get(name)
        if mode == "read" and adapter is not None and hasattr(adapter, "fetch"):
            capability = SearchCapability(name, adapter, now)  # type: ignore[arg-type]
            if capability.methods:
                out.append(capability)
    return out


def refuse_unfetched(staged: TickFetch, heinzel_id: str) -> None:
    """An input that could not be fetched stops the wake before ``turn.started``."""
    for item in staged.staged:
        if item.request.watcher == heinzel_id and item.fetched is None and item.error:
            raise item.error
