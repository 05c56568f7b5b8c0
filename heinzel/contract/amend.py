"""Amendments: a Heinzelmännchen may narrow its contract, never widen it (``HZC050``).

`widenings` compares two compiled versions and names every way the new one grants more:

- ``requires``: a capability:mode the old version did not grant;
- ``inputs``: an input that is new, reads another method or other args, looks back further
  (a longer window), or drops or changes the old facet (a new facet only narrows); except
  a source one of the old version's ``discover`` hints names, under that hint's name (the
  user granted it when approving the hint);
- ``discover``: a hint that is new or changed (a hint grants the source it names);
- ``publishes``: a write method the old version did not name;
- ``outputs``: an output that is new or names another asset (a new target);
- ``agent.max_usd``: a higher cap, or none where there was one;
- ``schedule``: any change of the cron expression or of its time zone, except removing the
  schedule. Deciding whether one cron expression fires at a subset of another's times is
  not attempted: every other change counts as widening, which errs on the safe side;
- ``approvers`` and ``namespace``: any change (who may release a draft, who sees it).

The body may change freely. `check_amendment` refuses a widening proposed by the
Heinzelmännchen and accepts the same text from the user.
"""

from __future__ import annotations

from typing import Literal

from heinzel.contract.compiler import CompiledContract
from heinzel.contract.model import Hz, Input
from heinzel.errors import ContractError

__all__ = ["Proposer", "check_amendment", "widenings"]

Proposer = Literal["heinzel", "user"]


def _input_widens(new: Input, old: Input | None) -> bool:
    if old is None or (new.from_, new.args) != (old.from_, old.args):
        return True
    if old.facet is not None and new.facet != old.facet:
        return True
    if old.window is None or new.window is None:
        return old.window != new.window
    return new.window > old.window


def _cap_widens(new: float | None, old: float | None) -> bool:
    if old is None:
        return False
    return new is None or new > old


def widenings(old: CompiledContract, new: CompiledContract) -> list[str]:
    """What ``new`` grants beyond ``old``, one phrase each, in a fixed order."""
    before: Hz = old.hz
    after: Hz = new.hz
    found: list[str] = []
    found += [f"requires {r}" for r in after.requires if r not in before.requires]
    found += [
        f"inputs.{name}"
        for name, spec in after.inputs.items()
        if _input_widens(spec, before.inputs.get(name))
        and not (name in before.discover and before.discover[name].admits(spec.from_, spec.args))
    ]
    found += [
        f"discover.{name}"
        for name, hint in after.discover.items()
        if before.discover.get(name) != hint
    ]
    found += [f"publishes {p}" for p in after.publishes if p not in before.publishes]
    found += [
        f"outputs.{name}"
        for name, spec in after.outputs.items()
        if name not in before.outputs or spec.asset != before.outputs[name].asset
    ]
    if _cap_widens(after.agent.max_usd, before.agent.max_usd):
        found.append("agent.max_usd")
    if after.schedule is not None and (after.schedule, after.timezone) != (
        before.schedule,
        before.timezone,
    ):
        found.append("schedule")
    if after.approvers != before.approvers:
        found.append("approvers")
    if after.namespace != before.namespace:
        found.append("namespace")
    return found


def check_amendment(
    old: CompiledContract,
    new: CompiledContract,
    *,
    proposed_by: Proposer,
    source: str = "<amendment>",
) -> None:
    """Accept ``new`` as the next version of ``old``, or raise ``HZC050``.

    Anything the user writes is accepted; what the Heinzelmännchen proposes is accepted
    only when `widenings` finds nothing.
    """
    if proposed_by == "user":
        return
    found = widenings(old, new)
    if found:
        raise ContractError(
            "HZC050",
            "an amendment proposed by the Heinzelmännchen widens its contract: " + ", ".join(found),
            "only the user can widen a contract: ask the user to write this amendment, "
            "or propose one that keeps within the current version",
            file=source,
        )
