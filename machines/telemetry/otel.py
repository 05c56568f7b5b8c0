"""OpenTelemetry spans of turns and steps, for a host that turns them on.

``Settings(..., observers=(Tracing(),))`` makes one span per turn run (a process
driving a turn until it waits or ends; a resumed turn is a new span with the same
``machines.turn``) and, inside it, one span per step. Their attributes:

- ``machines.turn``, ``machines.key`` (the turn's first key), ``machines.cause``;
- ``machines.step`` on a step's span;
- at the end: ``machines.state`` (finished, waiting, failed...),
  ``machines.disposition`` (when the turn ended), ``machines.cost_usd`` (the turn's
  spend so far; a step's span: what that step spent), ``machines.reason`` and
  ``machines.error`` when the turn ended with one.

A failed turn's span (and the span of the step that raised) has status ERROR and the
exception recorded. A step's span is the current span while the step runs, so spans
the host's own code opens nest under it.

Only this module imports OpenTelemetry (the ``otel`` extra: ``opentelemetry-api``);
`machines` loads it only when the host imports it, and a host without observers pays
nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from opentelemetry import context, trace
from opentelemetry.trace import Span, Status, StatusCode

if TYPE_CHECKING:
    from machines.core.fold import TurnState

__all__ = ["Tracing"]


@dataclass
class _Open:
    span: Span
    token: object
    spent: float
    exception: BaseException | None


class Tracing:
    """An `machines.telemetry.observe.Observer` that makes OpenTelemetry spans of turns and steps
    (from ``tracer_provider``, else the global one)."""

    def __init__(self, tracer_provider: trace.TracerProvider | None = None) -> None:
        self._tracer = trace.get_tracer("machines", tracer_provider=tracer_provider)
        self._turns: dict[str, _Open] = {}
        self._steps: dict[str, _Open] = {}

    def _open(self, name: str, state: TurnState, **extra: str) -> _Open:
        attributes = {"machines.turn": state.turn, **extra}
        if state.keys:
            attributes["machines.key"] = state.keys[0]
        if state.cause is not None:
            attributes["machines.cause"] = state.cause
        span = self._tracer.start_span(name, attributes=attributes)
        token = context.attach(trace.set_span_in_context(span))
        return _Open(span, token, state.spend_usd, state.exception)

    def _close(self, held: _Open, state: TurnState, *, spent: float) -> None:
        span = held.span
        span.set_attribute("machines.state", state.state)
        span.set_attribute("machines.cost_usd", spent)
        if state.final:
            span.set_attribute("machines.disposition", str(state.disposition))
            for name in ("reason", "error"):
                value = getattr(state, name)
                if value is not None:
                    span.set_attribute(f"machines.{name}", str(value))
        error = state.exception
        if error is not None and error is not held.exception:
            span.record_exception(error)
        raised = error is not None and error is not held.exception
        if state.state == "failed" or raised:
            why = state.error or (type(error).__name__ if raised else "failed")
            span.set_status(Status(StatusCode.ERROR, str(why)))
        context.detach(held.token)  # type: ignore[arg-type]
        span.end()

    def turn_began(self, state: TurnState) -> None:
        """Open the turn's span."""
        self._turns[state.turn] = self._open("turn", state)

    def step_began(self, state: TurnState, step: str) -> None:
        """Open the step's span, inside the turn's."""
        self._steps[state.turn] = self._open(f"turn.{step}", state, **{"machines.step": step})

    def step_ended(self, state: TurnState, step: str) -> None:
        """Close the step's span with what the step spent."""
        held = self._steps.pop(state.turn, None)
        if held is not None:
            self._close(held, state, spent=round(state.spend_usd - held.spent, 6))

    def turn_ended(self, state: TurnState) -> None:
        """Close the turn's span with its state, disposition and spend."""
        held = self._turns.pop(state.turn, None)
        if held is not None:
            self._close(held, state, spent=state.spend_usd)
