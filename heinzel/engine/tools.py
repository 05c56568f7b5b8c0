"""The tools of a turn, generated from its spec: read-only, typed, replay-safe or not.

`build_toolset` gives one ``FunctionToolset`` per turn (ADR 0050 statements 3
and 11): ``read_<input>()`` for each staged input, ``search_<capability>(...)``
for each capability's window-taking read methods, ``last_approved()``,
``lessons()``, ``previous_turns(n)``, ``report(verb, target, description)`` and,
only when a runner is bound, ``handoff(task, files, budget_share)``. Each carries
``metadata={"replay_safe": ...}``; each string it returns is cleaned and has its
email addresses redacted; a bad argument is a validation retry.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import field
from decimal import Decimal
from typing import Annotated, Any

from pydantic import Field, StringConstraints
from pydantic_ai import FunctionToolset, ModelRetry, RunContext

from heinzel.engine.clean import clean_value
from heinzel.engine.context import active_lessons, context_edits, lesson_scrub, render_events
from heinzel.engine.errors import BAD_TOOL_NAME, EngineError
from heinzel.engine.spec import (
    HandoffRequest,
    LessonView,
    ReadCapability,
    Runner,
    SpineView,
    TurnSpec,
)
from ledger.records import frozen_record, mutable_record

__all__ = [
    "INTERRUPTED",
    "NONE_YET",
    "Report",
    "TurnServices",
    "build_toolset",
    "replay_safety",
    "tool_name",
]

INTERRUPTED = "interrupted: this call was cut off by a crash and is not run again"
Verb = Annotated[str, StringConstraints(pattern=r"^[a-z][a-z-]{1,30}$")]
Short = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=300)]
NONE_YET = "(none yet)"
"""What ``last_approved`` answers before anything was approved."""
Window = Annotated[str, StringConstraints(pattern=r"^[1-9][0-9]{0,2}[hdw]$")]
_NAME = re.compile(r"[^a-z0-9_]+")


@frozen_record
class Report:
    """One ``report`` call: an entry for the Heinzelmännchen's own action log."""

    call_id: str
    verb: str
    target: str
    description: str


@mutable_record
class TurnServices:
    """What the tools read: the services the host hands one turn.

    ``remaining_usd`` tells handoff what is left of the cap; ``started`` and
    ``was_started`` journal unsafe calls in the body so a crash never reruns one.
    """

    view: SpineView = field(default_factory=SpineView)
    last_approved: str | None = None
    contract_text: str | None = None
    """The contract's full text at the turn's version (the ``contract`` tool; None: no tool)."""
    lessons: Sequence[LessonView] = ()
    capabilities: Sequence[ReadCapability] = ()
    runner: Runner | None = None
    remaining_usd: Callable[[], Decimal | None] = lambda: None
    started: Callable[[str, str], None] = lambda call_id, tool: None
    was_started: Callable[[str], bool] = lambda call_id: False
    reports: dict[str, Report] = field(default_factory=dict)
    interrupted: list[str] = field(default_factory=list)


def tool_name(prefix: str, name: str) -> str:
    """``prefix_name`` in lower snake case; refuses a name with nothing usable (HZE009)."""
    slug = _NAME.sub("_", name.lower()).strip("_")
    if not slug:
        raise EngineError(
            BAD_TOOL_NAME,
            f"{name!r} gives no tool name",
            "name inputs and capabilities with letters, digits or _",
        )
    return f"{prefix}_{slug}"


def _add(
    toolset: FunctionToolset[None],
    fn: Callable[..., Any],
    name: str,
    description: str,
    *,
    safe: bool = True,
) -> None:
    if name in toolset.tools:
        raise EngineError(
            BAD_TOOL_NAME,
            f"two tools would be named {name!r}",
            "give the inputs and capabilities distinct names",
        )
    toolset.add_function(fn, name=name, description=description, metadata={"replay_safe": safe})


def _add_reads(toolset: FunctionToolset[None], spec: TurnSpec) -> None:
    for item in spec.inputs:
        content = item.content

        def read(_content: str = content) -> str:
            return str(clean_value(_content))

        _add(
            toolset,
            read,
            tool_name("read", item.name),
            f"The input {item.name!r} as staged for this wake (never fetched again).",
        )


def _add_search(toolset: FunctionToolset[None], capability: ReadCapability) -> None:
    methods = {m.name: m for m in capability.methods if m.mode == "read" and m.takes_window}
    if not methods:
        return
    listing = "; ".join(f"{m.name}: {m.description}" for m in methods.values())

    async def search(method: str, window: Window = "7d", args: dict[str, str] | None = None) -> Any:
        if method not in methods:
            raise ModelRetry(f"method must be one of {sorted(methods)}")
        return clean_value(await capability.search(method, args or {}, window))

    _add(
        toolset,
        search,
        tool_name("search", capability.name),
        f"Read from {capability.name} over a window like 7d. Methods: {listing}",
    )


def build_toolset(
    spec: TurnSpec, services: TurnServices, instructions: str = ""
) -> FunctionToolset[None]:
    """The turn's tools. Names must be unique (HZE009 otherwise)."""
    toolset: FunctionToolset[None] = FunctionToolset()
    _add_reads(toolset, spec)
    for capability in services.capabilities:
        _add_search(toolset, capability)

    def last_approved() -> str:
        """The text as the user last approved it, or '(none yet)'."""
        text = services.last_approved
        return str(clean_value(text)) if text is not None else NONE_YET

    def lessons() -> list[str]:
        """The active lessons learned from the user's edits."""
        shown = active_lessons(services.view, services.lessons)  # context edits applied
        return [str(clean_value(lesson.sentence)) for lesson in shown]

    def previous_turns(n: Annotated[int, Field(ge=1, le=20)] = 3) -> list[str]:
        """The spine events of the last n turns, one compact line each."""
        view = services.view
        if view.earlier is not None:  # the turns before the context's, read only now
            view = view.earlier(n)
        records = view.records
        turns = list(dict.fromkeys(r.turn for r in records if r.kind == "turn.started" and r.turn))
        chosen = set(turns[-n:])
        lines = render_events([r for r in records if r.turn in chosen], context_edits(view)[0])
        scrub = lesson_scrub(view)
        return [str(clean_value(scrub(line))) for line in lines]

    def report(ctx: RunContext[None], verb: Verb, target: Short, description: Short) -> str:
        """Append one entry to your own action log (what you did, to what); nothing else."""
        call_id = ctx.tool_call_id or f"{verb}:{target}"
        services.reports[call_id] = Report(call_id, verb, target, str(clean_value(description)))
        return "recorded"

    for fn in (last_approved, lessons, previous_turns, report):
        _add(toolset, fn, fn.__name__, fn.__doc__ or "")
    if services.contract_text is not None:
        text = services.contract_text

        def contract() -> str:
            """Your contract's full text at this turn's version, frontmatter and body: the
            text an amendment starts from."""
            return text

        _add(toolset, contract, "contract", contract.__doc__ or "")
    runner = services.runner
    if runner is not None:

        async def handoff(
            ctx: RunContext[None],
            task: Short,
            files: dict[str, str],
            budget_share: Annotated[float, Field(gt=0, le=1)] = 0.5,
        ) -> str:
            """Run the bound coding agent once, read-only, on these files; returns its report."""
            call_id = ctx.tool_call_id or task
            if services.was_started(call_id):
                services.interrupted.append(call_id)
                return INTERRUPTED
            services.started(call_id, "handoff")
            left = services.remaining_usd()
            share = Decimal(str(budget_share)) * left if left is not None else Decimal(0)
            request = HandoffRequest(task, dict(files), share, instructions or spec.body)
            return str(clean_value(await runner(request)))

        _add(toolset, handoff, "handoff", handoff.__doc__ or "", safe=False)
    return toolset


def replay_safety(toolset: FunctionToolset[Any]) -> Mapping[str, bool]:
    """Each tool's ``replay_safe`` flag, by name (a tool without the flag counts as unsafe)."""
    return {
        name: bool((tool.metadata or {}).get("replay_safe", False))
        for name, tool in toolset.tools.items()
    }
