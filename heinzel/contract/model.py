"""The typed frontmatter of a contract: ``name``, ``kind`` and everything hz needs under ``hz:``.

Every model forbids unknown keys and validates strictly (YAML's ``yes`` is not a string,
``"0.5"`` is not a number). Sets (``requires``, ``publishes``, ``approvers``) are kept
sorted and without repeats, so their order in the file is not part of the contract's
meaning. `docs/contract.md` documents every field.
"""

from __future__ import annotations

import fnmatch
import re
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    model_serializer,
    model_validator,
)
from pydantic_core import PydanticCustomError

from heinzel.contract.types import (
    AssetRef,
    Cron,
    Duration,
    Identifier,
    MethodRef,
    Requirement,
    Slug,
    TimeZone,
    cron_expression,
    parse_duration,
)

__all__ = [
    "MAX_TURN_USD",
    "Agent",
    "Discover",
    "Escalate",
    "Frontmatter",
    "Hz",
    "Input",
    "ModelClass",
    "Namespace",
    "NeededBy",
    "Output",
    "RenderOnSchedule",
    "SourceChanged",
]

MAX_TURN_USD = 100.0
"""A per-turn cap above this is refused as a typo (``HZC041``)."""

Namespace = Literal["me", "team"]
RenderOnSchedule = Literal["always", "if-moved"]
SourceChanged = Literal["wake", "at-slot"]
ModelClass = Literal["fast", "standard", "best"]
Unanswered = Literal["fall-back", "abandon"]
ArgValue = str | int | float | bool | list[str | int | float | bool]

_APPROVER = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")


def _choice(code: str, what: str, options: tuple[str, ...]) -> BeforeValidator:
    def check(value: Any) -> Any:
        if not isinstance(value, str) or value not in options:
            raise PydanticCustomError(
                code,
                f"{what} is one of {', '.join(options)}, not {{value}}",
                {"value": repr(value)},
            )
        return value

    return BeforeValidator(check)


def _max_usd(value: Any) -> Any:
    number = isinstance(value, int | float) and not isinstance(value, bool)
    if not number or not 0 < value <= MAX_TURN_USD:
        raise PydanticCustomError(
            "HZC041",
            f"agent.max_usd is a number above 0 and at most {MAX_TURN_USD:g}, not {{value}}",
            {"value": repr(value)},
        )
    return float(value)


def _sorted_set(values: list[str]) -> list[str]:
    return sorted(set(values))


def _approvers(values: list[str]) -> list[str]:
    if not values:
        raise PydanticCustomError("HZC042", "approvers may not be empty", {})
    for value in values:
        if not _APPROVER.fullmatch(value):
            raise PydanticCustomError(
                "HZC042",
                "not an approver: {value} (owner or a roster handle)",
                {"value": repr(value)},
            )
    return sorted(set(values))


def _skills(values: list[str]) -> list[str]:
    if len(set(values)) != len(values):
        raise PydanticCustomError("HZC044", "a skill is named twice in uses", {})
    return values


class _Strict(BaseModel):
    model_config = ConfigDict(
        extra="forbid", strict=True, frozen=True, populate_by_name=True, defer_build=True
    )


def _deadline(value: Any) -> Any:
    try:
        return cron_expression(value)
    except PydanticCustomError:
        raise PydanticCustomError(
            "HZC105",
            'needed_by.at is a cron expression such as "0 12 * * FRI" (in the contract\'s '
            "timezone), not {value}",
            {"value": repr(value)[:80]},
        ) from None


class Escalate(_Strict):
    """Who is told when the fallback itself is late: the reader has placed no draft
    ``after`` the deadline passed."""

    after: Duration
    to: Slug
    """A roster handle, or ``owner`` (the reader's own user)."""


class NeededBy(_Strict):
    """When the output an input reads (another Heinzelmännchen's) is needed: a deadline
    rule in the contract's timezone, the nudges before it, and an escalation
    (docs/turns-in-hz.md, "The flow")."""

    at: Annotated[str, BeforeValidator(_deadline)]
    nudge: list[Duration] = Field(default_factory=list)
    """Lead times before each deadline at which the upstream's user is nudged."""
    escalate: Escalate | None = None


class Input(_Strict):
    """One input: what it reads (``capability.method`` with args), how far back, how often,
    and by when it is needed (``needed_by``: only for an input that reads an asset)."""

    from_: MethodRef = Field(alias="from")
    args: dict[str, ArgValue] = Field(default_factory=dict)
    window: Duration | None = None
    recheck: Duration | None = None
    facet: Identifier | None = None
    needed_by: NeededBy | None = None

    @model_validator(mode="after")
    def _needs_an_asset(self) -> Input:
        if self.needed_by is not None and self.from_ not in ("documents.read", "files.read"):
            raise PydanticCustomError(
                "HZC106",
                "needed_by is for an input that reads another Heinzelmännchen's output "
                "(documents.read or files.read), not {value}",
                {"value": self.from_},
            )
        return self

    @model_serializer(mode="wrap")
    def _dump(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """No ``needed_by`` is left out, so contracts written before it keep their
        fingerprint."""
        data: dict[str, Any] = handler(self)
        if data.get("needed_by") is None:
            data.pop("needed_by", None)
        return data


def _glob(value: Any) -> Any:
    if not isinstance(value, str) or not value.strip() or len(value) > 200:
        raise PydanticCustomError(
            "HZH177",
            "match is a file-name pattern such as *incident*, not {value}",
            {"value": repr(value)},
        )
    return value


class Discover(_Strict):
    """A ``discover`` hint: a source the daily discovery may find and propose as the input
    named by the hint's key (docs/contract.md, "Discovery")."""

    from_: MethodRef = Field(alias="from")
    match: Annotated[str, BeforeValidator(_glob)]
    instead_of: Identifier | None = None
    recheck: Duration | None = None

    def admits(self, from_: str, args: dict[str, Any]) -> bool:
        """Whether an input reading ``from_`` with ``args`` is a source this hint names:
        the same method, and one ``doc: file:<path>`` whose path (or file name) matches."""
        doc = args.get("doc")
        if from_ != self.from_ or set(args) != {"doc"} or not isinstance(doc, str):
            return False
        scheme, _, path = doc.partition(":")
        pattern = self.match.casefold()
        name = path.rstrip("/").rsplit("/", 1)[-1]
        return scheme == "file" and any(
            fnmatch.fnmatchcase(part.casefold(), pattern) for part in (path, name)
        )


def _place(value: Any) -> Any:
    ok = isinstance(value, str) and (
        value in ("end", "top")
        or (value.startswith("under:") and value.removeprefix("under:").strip() != "")
    )
    if not ok:
        raise PydanticCustomError(
            "HZC073",
            "place is end, top or under:<heading>, not {value}",
            {"value": repr(value)},
        )
    return value


class Output(_Strict):
    """One output: the asset it keeps true, how long an approved version stays true, and
    where in the document a new draft goes."""

    asset: AssetRef
    valid_for: Duration | None = None
    place: Annotated[str, BeforeValidator(_place)] = "end"

    @model_serializer(mode="wrap")
    def _dump(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """The default ``place`` is left out, so contracts written before it keep their
        fingerprint."""
        data: dict[str, Any] = handler(self)
        if data.get("place") == "end":
            del data["place"]
        return data


class Agent(_Strict):
    """Hints for the turn engine: a per-turn cap in USD and a model class, never a vendor."""

    max_usd: Annotated[float, BeforeValidator(_max_usd)] | None = None
    model_class: Annotated[
        ModelClass, _choice("HZC015", "agent.model_class", ("fast", "standard", "best"))
    ] = "standard"


class Hz(_Strict):
    """Everything hz needs under ``hz:``."""

    namespace: Annotated[Namespace, _choice("HZC013", "namespace", ("me", "team"))] = "me"
    schedule: Cron | None = None
    timezone: TimeZone = "UTC"
    render_on_schedule: Annotated[
        RenderOnSchedule,
        _choice("HZC014", "render_on_schedule", ("always", "if-moved")),
    ] = "always"
    source_changed: Annotated[
        SourceChanged, _choice("HZH430", "source_changed", ("wake", "at-slot"))
    ] = "wake"
    """What an input that moved does to one with a schedule: wakes it (``wake``, ADR 0049
    statement 7), or waits for its slot (``at-slot``, which reads it staged then)."""
    requires: Annotated[list[Requirement], AfterValidator(_sorted_set)] = Field(
        default_factory=list
    )
    inputs: dict[Identifier, Input] = Field(default_factory=dict)
    outputs: dict[Identifier, Output] = Field(default_factory=dict)
    publishes: Annotated[list[MethodRef], AfterValidator(_sorted_set)] = Field(default_factory=list)
    approvers: Annotated[list[str], AfterValidator(_approvers)] = Field(
        default_factory=lambda: ["owner"]
    )
    agent: Agent = Field(default_factory=Agent)
    timeout: Duration = Field(default_factory=lambda: parse_duration("10m"))
    uses: Annotated[list[Slug], AfterValidator(_skills)] = Field(default_factory=list)
    owner: Slug | None = None
    """A team Heinzelmännchen's owner: the roster handle whose daemon runs it (docs/team.md)."""
    delegates: Annotated[list[Slug], AfterValidator(_sorted_set)] = Field(default_factory=list)
    """Roster handles whose daemons take it over when the owner's stops ticking."""
    discover: dict[Identifier, Discover] = Field(default_factory=dict)
    """Sources the daily discovery may propose, each as the input named by its key."""
    alias: Annotated[list[Slug], AfterValidator(_sorted_set)] = Field(default_factory=list)
    """Other names of this Heinzelmännchen inside the graph (docs/graph.md)."""
    unanswered: Annotated[Unanswered, _choice("HZC107", "unanswered", ("fall-back", "abandon"))] = (
        "fall-back"
    )
    """How a turn whose question is still unanswered at ``[heinzel] max_wait`` ends: it
    goes on without the answer (``fall-back``), or ends ``abandoned (unanswered)`` with a
    notice (``abandon``)."""

    @model_serializer(mode="wrap")
    def _dump(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """No hints and the default ``unanswered`` and ``source_changed`` are left out,
        so contracts written before them keep their fingerprint."""
        data: dict[str, Any] = handler(self)
        for hint in ("discover", "alias"):
            if not data.get(hint):
                data.pop(hint, None)
        if data.get("unanswered") == "fall-back":
            data.pop("unanswered", None)
        if data.get("source_changed") == "wake":
            data.pop("source_changed", None)
        return data


def _openprose_text(value: Any) -> Any:
    ok = isinstance(value, str | int | float) and not isinstance(value, bool)
    if not ok or str(value).strip() == "" or len(str(value)) > 200:
        raise PydanticCustomError(
            "HZC092",
            "OpenProse's id and version are short text or a number, not {value}",
            {"value": repr(value)[:80]},
        )
    return str(value)


class Frontmatter(_Strict):
    """The whole frontmatter: OpenProse's ``name``, ``kind``, ``id`` and ``version``, and
    ``hz``. ``id`` and ``version`` are OpenProse's own keys: kept as text, unused by hz."""

    name: Slug
    kind: Literal["responsibility"]
    id: Annotated[str, BeforeValidator(_openprose_text)] | None = None
    version: Annotated[str, BeforeValidator(_openprose_text)] | None = None
    hz: Hz

    @model_serializer(mode="wrap")
    def _dump(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """``id`` and ``version`` are left out when absent, so contracts written before
        them keep their fingerprint."""
        data: dict[str, Any] = handler(self)
        for key in ("id", "version"):
            if data.get(key) is None:
                data.pop(key, None)
        return data
