"""The AgentRunner protocol and the one result shape every runner returns.

A runner runs a coding agent once, bounded by a timeout and a budget, with a
read-only tools profile, and reports what happened as an `AgentResult`: the
report, the tool calls by name, turns, usage, cost, duration, why it did not
complete and which limits it could not enforce. A timeout, a budget stop, a
failing CLI and missing or empty output are results; only a misconfigured
runner or a bad request raises (`RunnerError`).

The protocol is synchronous: a run is one child process whose pipes are drained
by threads, and the turn engine calls a sync tool in a worker thread, so an
async signature would add an event loop to the runners and buy nothing.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from heinzel.runners.errors import RunnerError

__all__ = ["AgentResult", "AgentRunner", "Status", "Usage", "check_limits", "select_tools"]

Status = Literal["completed", "timeout", "budget", "failed"]
"""completed: a report came back; timeout: stopped at the deadline; budget: stopped by a
money or turn limit it was given; failed: anything else (exit status, error result, bad
or missing output)."""


class Usage(BaseModel):
    """Tokens the agent's model calls used, summed over the run."""

    model_config = ConfigDict(frozen=True)

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0


class AgentResult(BaseModel):
    """What one run of a coding agent gave back, whatever the agent."""

    model_config = ConfigDict(frozen=True)

    runner: str
    """The runner's name (the ``[runners.<name>]`` table)."""
    model: str | None
    """The model the agent reported using; None when it did not say."""
    status: Status
    report: str
    """The agent's final text; may be partial or empty when the run did not complete."""
    tool_calls: dict[str, int] = Field(default_factory=dict)
    turns: int = 0
    usage: Usage = Usage()
    cost_usd: float | None = None
    """What the agent reported spending; None when it reports no cost."""
    duration_s: float = 0.0
    reason: str | None = None
    """Why it did not complete (None when it did)."""
    unenforced_limits: tuple[str, ...] = ()
    """The limits this run asked for that the runner could not enforce."""
    transcript: str = ""
    """The agent's raw output (stream-json, pi events, text), for the turn body only."""


@runtime_checkable
class AgentRunner(Protocol):
    """Runs a coding agent once, read-only and bounded, and reports what it did."""

    name: str

    def run(
        self,
        prompt: str,
        *,
        contract: str,
        tools: Sequence[str],
        timeout: float,
        budget: float | None,
        working_dir: Path | None = None,
    ) -> AgentResult:
        """Run the agent on ``prompt`` with ``contract`` as standing instructions.

        ``tools`` must be a subset of the runner's profile (empty: the whole profile);
        ``timeout`` is in seconds; ``budget`` in USD (None: uncapped); ``working_dir`` is
        where the agent runs (None: a fresh empty private directory, removed afterwards).
        """
        ...


def select_tools(runner: str, profile: Sequence[str], requested: Sequence[str]) -> tuple[str, ...]:
    """The tools for one run: the requested ones, each in the profile (HZR030), or the profile."""
    if not requested:
        return tuple(profile)
    outside = [tool for tool in requested if tool not in profile]
    if outside:
        raise RunnerError(
            "HZR030",
            f"runner {runner!r} was asked for tools outside its profile: {', '.join(outside)}",
            f"ask only for {', '.join(profile) or 'no tools'}, or add the tool to "
            f"[runners.{runner}] tools if it only reads",
        )
    return tuple(requested)


def check_limits(runner: str, timeout: float, budget: float | None) -> None:
    """Refuse a timeout or budget that is not a positive finite number (HZR031)."""
    if not (math.isfinite(timeout) and timeout > 0):
        raise RunnerError(
            "HZR031",
            f"runner {runner!r} got timeout {timeout!r}; it must be a positive number of seconds",
            "give the run a share of the turn's remaining time greater than zero",
        )
    if budget is not None and not (math.isfinite(budget) and budget > 0):
        raise RunnerError(
            "HZR031",
            f"runner {runner!r} got budget {budget!r}; it must be a positive amount of USD",
            "give the run a share of the turn's remaining cap greater than zero, or None",
        )
