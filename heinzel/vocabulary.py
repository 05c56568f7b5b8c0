"""heinzel's own event kinds, frozen beside `machines.vocabulary` (additive only).

``tests/test_vocabulary_heinzel.py`` pins these lists; a kind whose payload changes
incompatibly gets a new name, never a new meaning.
"""

from __future__ import annotations

from typing import Final

from machines.vocabulary import MACHINE_KINDS

LIFECYCLE_KINDS: Final = (
    "heinzel.created",
    "heinzel.renamed",
    "heinzel.paused",
    "heinzel.unpaused",
    "heinzel.retired",
    "heinzel.unretired",
    "contract.proposed",
    "contract.approved",
    "amendment.proposed",
)
"""A Heinzelmännchen's life outside its turns (creation, approval of v1, pause, ...)."""

TURN_KINDS: Final = (
    "step.tool",
    "amendment.filed",
    "amendment.refused",
    "input.fell_back",
)
"""What heinzel's turns add to the machine's kinds: ``step.tool{tool, id, h, ok?}`` (a
read-only tool call of the think step that no model request sent on: the calls a request
sent are in its ``model.request``'s ``tools``; ``step.handoff`` is the spec's), and the
amendment an outcome asked for: filed with the service, or refused (``code``, HZC050);
``input.fell_back{input, upstream, output, deadline, approved_fp, approved_at, stale_s}``:
the flow's fallback (the spec's ``fell_back``), an input whose upstream missed its
``needed_by`` deadline read at its last approved version, how stale (no content)."""

TICK_KINDS: Final = ("notice.posted",)
"""What the tick adds: ``notice.posted{reason, day, message}``, the user told once a day
(key ``<id>@notice:<reason>:<day>``) that the daily cap skipped wakes, or once per draft
(key ``<id>@notice:superseded:<hash>``) that a superseded section was approved in the
document (`heinzel.tick.superseded`); the flow's ``needed-by``, ``fell-back`` and
``escalated`` notices add ``to`` (whose user is told) and ``until`` (`heinzel.index.flow`),
and ``unanswered`` a question's turn ended at ``max_wait``."""

HOST_HIDDEN: Final = frozenset(MACHINE_KINDS) | {"amendment.filed"}
"""Kinds the context builder never renders (checkpoints, not events a user reads)."""
