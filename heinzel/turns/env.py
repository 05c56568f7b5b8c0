"""`TurnEnv`: everything one turn of one Heinzelmännchen reads, gathered by the host and
handed to the steps (`heinzel.turns.steps`) and the act step (`heinzel.turns.act`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from heinzel.contract import CompiledContract
from heinzel.engine import (
    ContextSettings,
    Hold,
    InputSpec,
    LessonView,
    Pricing,
    ReadCapability,
    Skill,
    SpineView,
)
from heinzel.store.sources import SourceCache, SourceRequest, TickFetch
from heinzel.turns.chat import ChatReads, ChatWrites
from heinzel.turns.handoff import BoundHandoff
from heinzel.turns.record import SessionBody
from machines import Journal

if TYPE_CHECKING:  # pydantic-ai loads when a step first calls the model (`model`, `recent`)
    from pydantic_ai.messages import ModelMessage
    from pydantic_ai.models import Model

__all__ = ["TurnEnv"]


@dataclass
class TurnEnv:
    """Everything one turn of one Heinzelmännchen reads, gathered by the host."""

    heinzel_id: str
    name: str
    version: int
    contract: CompiledContract
    contract_body: str
    origin: Path
    requests: Sequence[SourceRequest]
    cache: SourceCache
    body: SessionBody
    make_model: Callable[[], Model]
    """Makes the turn's model (`model`): a resumed turn past think never calls it."""
    clock: Callable[[], datetime]
    pricing: Pricing
    settings_max_usd: Decimal | None
    day_usd: Decimal | None
    spent_today: Decimal
    context_settings: ContextSettings
    view: SpineView = field(default_factory=SpineView)
    lessons: Sequence[LessonView] = ()
    skills: Sequence[Skill] = ()
    """The turn's skills (`heinzel.turns.pins.turn_skills`), rendered after the contract."""
    runner: Callable[[str, Journal], BoundHandoff | None] | None = None
    """Makes the turn's handoff runner (None: no runner is bound, no handoff tool)."""
    extra_inputs: Sequence[InputSpec] = ()
    slot: str = "now"
    approval: Mapping[str, Any] | None = None
    documents: Any = None
    propose: Callable[[str, str, Mapping[str, str] | None], Mapping[str, Any]] | None = None
    """Files an amendment: its text, why, and the user's message it cites (None: its own)."""
    compile_contract: Callable[[str], object] | None = None
    read_recent: Callable[[], Mapping[str, Sequence[ModelMessage]]] = dict
    """Reads the settled messages of the last turns whose bodies are kept (`recent`)."""
    capabilities: Sequence[ReadCapability] = ()
    last_approved: str | None = None
    inbox: Path | None = None
    """Where a steering message's text is (``<request id>.json``), for ``turn.steered``."""
    writes: ChatWrites | None = None
    reads: ChatReads | None = None
    """hz's read operations as tools, for a chat turn (cause asked) only."""
    """The chat write gate of an asked turn (None: no write tools)."""
    reused: Sequence[Mapping[str, Any]] | None = None
    """A fork's inputs: what its parent's gather recorded (None: gather reads the cache)."""
    contract_text: str | None = None
    """The approved version's whole text (the model's ``contract`` tool, for amendments)."""
    sync: Callable[[], None] | None = None
    """Makes every line and body record written so far durable (`Spine.sync`): the
    engine calls it before a call that is not replay-safe."""
    poll: Callable[[], None] | None = None
    """Delivers the inbox's requests before each model request (`heinzel.turns.delivery`)."""
    stop_asked: Callable[[], str | None] | None = None
    """Who asked the running turn to stop (a signal, a stop request), None: nobody; read
    while a model request runs (`heinzel.turns.delivery.Delivery.stop_asked`)."""
    on_interrupt: Callable[[Callable[[], None]], Callable[[], None]] | None = None
    """Calls a function on a signal to this process; returns what undoes it
    (`heinzel.turns.interrupt.Interrupt.listen`)."""
    pending_draft: Callable[[str], str | None] = lambda _output: None
    """The key of an output's pending draft (None: none), for a wait on its approval."""
    upstream: frozenset[str] = frozenset()
    """The inputs that read another Heinzelmännchen's output
    (`heinzel.index.flow.upstream_inputs`): gather gives each as its approved text, every
    pending draft and hz line left out (`heinzel.capabilities.documents.approved_text`)."""
    fallbacks: Sequence[Mapping[str, Any]] = ()
    """The inputs whose upstream missed their ``needed_by`` deadline
    (`heinzel.index.flow.fallbacks`): gather reads their last approved version and
    records ``input.fell_back``."""
    restage: Callable[[Sequence[SourceRequest]], TickFetch] | None = None
    """Fetches inputs again into the cache (`heinzel.turns.inputs.stage` with the turn's
    adapters), for gather when a power cut took their entries (None: it cannot)."""
    hold_day: Hold | None = None
    """The home's spend lock with the day's spend (`heinzel.session.spend.hold_day`): each
    model request's reservation is made under it."""

    @cached_property
    def model(self) -> Model:
        """The turn's model, made when a step first runs one."""
        return self.make_model()

    @cached_property
    def recent(self) -> Mapping[str, Sequence[ModelMessage]]:
        """The settled messages of the last turns whose bodies are kept (the context shows
        them), read when the think step first builds its context."""
        return self.read_recent()
