"""The MCP tools' typed outputs (pydantic): the fields a client can rely on are declared, and
whatever else the service returns rides along (``extra="allow"``), the same data as ``--json``."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "Approved",
    "ApprovedItem",
    "Changed",
    "ChatSent",
    "Created",
    "Draft",
    "Drafts",
    "Listing",
    "Pending",
    "Row",
    "Shown",
    "StateRow",
    "Stopped",
    "Tried",
    "TurnRun",
]


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow")


class _Where(BaseModel):
    """Which home a tool's answer was read from: an agent can tell its user where it looked
    (no `HZ_HOME` set means the platform's default home)."""

    home: str | None = Field(
        default=None, description="The hz home this answer was read from (its folder)."
    )
    home_exists: bool | None = Field(
        default=None,
        description="False when that folder holds no hz home yet: an empty answer then "
        "means no home, not no Heinzelmännchen.",
    )


class Pending(_Open):
    """What waits on the user: an approval, a draft, a question or an amendment."""

    kind: str
    ref: str | None = None


class Row(_Open):
    """One Heinzelmännchen as the index lists it (never read from a spine)."""

    id: str
    name: str
    namespace: str
    state: str
    contract_name: str | None = None
    contract_version: int | None = None
    next_due: str | None = None
    pending: Pending | None = None
    cost_today: float | None = None
    assets: list[str] = Field(default_factory=list)
    last_turn: str | None = None


class Listing(_Where):
    """``heinzel_list``: every Heinzelmännchen that matches the filters."""

    heinzelmaennchen: list[Row]


class Shown(Row, _Where):
    """``heinzel_show``: versions, timeline, lessons, drafts, the pending item, cost by cause."""

    turns: list[dict[str, Any]] = Field(default_factory=list)
    lessons: list[dict[str, Any]] = Field(default_factory=list)
    amendments: list[dict[str, Any]] = Field(default_factory=list)
    drafts: list[dict[str, Any]] = Field(default_factory=list)
    cost_month: dict[str, Any] = Field(default_factory=dict)
    summary: dict[str, Any] | None = None
    """The latest summary it wrote (``what it knows``), None before its first."""


class StateRow(_Open):
    """A Heinzelmännchen after a change: its id, name and state."""

    id: str
    name: str
    namespace: str
    state: str
    contract_version: int | None = None
    proposed_version: int | None = None


class Created(_Where):
    """``heinzel_new``: the Heinzelmännchen created (state: proposed)."""

    created: list[StateRow]


class ApprovedItem(_Open):
    """One approved item: v1 or an amendment (with the row after it), or a draft (its key)."""

    approved: str
    state: str
    id: str | None = None
    name: str | None = None


class Approved(_Where):
    """``approve``: each item approved, in the order given."""

    approved: list[ApprovedItem]


class Draft(_Open):
    """A draft placed and waiting for the user."""

    name: str
    key: str
    asset: str | None = None
    contract_version: int | None = None
    placed_at: str | None = None


class Drafts(_Where):
    """``drafts``: every waiting draft with its place."""

    drafts: list[Draft]


class TurnRun(_Open, _Where):
    """A turn run to its end or its wait (``turn`` is None when there was nothing to do)."""

    name: str
    turn: str | None = None
    state: str | None = None
    disposition: str | None = None
    reason: str | None = None
    error: str | None = None
    usd: float | None = None


class Tried(_Open, _Where):
    """``heinzel_try``: the last turns thought again under the proposed version, each placed
    draft beside the tried one with the checks and costs, and one summary line."""

    name: str
    version: int
    turns: list[dict[str, Any]] = Field(default_factory=list)
    expired: list[dict[str, Any]] = Field(default_factory=list)
    usd: float = 0.0
    summary: str


class ChatSent(_Open, _Where):
    """A chat message written to the inbox, and where it went."""

    name: str
    delivered: str
    request_id: str
    key: str | None = None
    turn: str | None = None
    """The turn it went into (``delivered into turn tn-...``), or that it is queued for."""


class Stopped(_Open, _Where):
    """A stop: the turn and how it ended (``abandoned stopped``, or requested of the
    process that runs it)."""

    name: str
    turn: str
    stop: str


class Changed(StateRow, _Where):
    """A lifecycle verb's answer: the Heinzelmännchen after the change."""
