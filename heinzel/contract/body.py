"""The Markdown body of a contract: OpenProse's sections and hz's ``### Done when``.

Sections start at ``### Title`` lines (outside code fences). Known titles are Goal,
Requires, Maintains (with ``#### facet`` sub-sections), Continuity and Done when; other
sections are kept as they are, and a ``####`` heading outside Maintains is part of the
text of the section it sits in. Items are written ``- `name`: description``; Done when is a
checklist (``- [ ] item``). `normalise` is the whitespace-blind form the fingerprint uses.
Every problem of a body is reported at once, in a fixed order: sections written twice, a
missing or empty Goal, a missing Done when, then its items.
"""

from __future__ import annotations

from dataclasses import field

from pydantic import BaseModel, ConfigDict

from heinzel.errors import ContractError
from ledger.lazy import lazy_pattern
from ledger.records import mutable_record

__all__ = ["Body", "Item", "Section", "normalise", "parse_body"]


_heading_re = lazy_pattern(r"^(#{3,4})\s+(.+?)\s*#*\s*$")
_fence_re = lazy_pattern(r"^\s*(```|~~~)")
_item_re = lazy_pattern(r"^[-*+]\s+`([^`]+)`\s*:\s*(.*)$")
_check_re = lazy_pattern(r"^[-*+]\s+\[[ xX]\]\s+(\S.*)$")
_bullet_re = lazy_pattern(r"^[-*+]\s")


_KNOWN = {"goal": "goal", "requires": "requires", "maintains": "maintains"}
_KNOWN |= {"continuity": "continuity", "done when": "done_when"}


class _Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True, defer_build=True)


class Item(_Frozen):
    """An item ``- `name`: description``."""

    name: str
    description: str


class Section(_Frozen):
    """A section (or a Maintains facet): its title, normalised text and items."""

    title: str
    text: str
    items: list[Item] = []


class Body(_Frozen):
    """The parsed body. ``done_when`` holds the checklist items in order."""

    preamble: str = ""
    goal: Section
    requires: Section | None = None
    maintains: Section | None = None
    facets: list[Section] = []
    continuity: Section | None = None
    done_when: list[str]
    other: list[Section] = []


def normalise(lines: list[str]) -> str:
    """Whitespace-blind text: runs of spaces collapsed, blank lines dropped."""
    return "\n".join(" ".join(line.split()) for line in lines if line.strip())


@mutable_record
class _Raw:
    title: str
    line: int
    level: int
    lines: list[str] = field(default_factory=list)


def _sections(body: str, first_line: int) -> tuple[list[str], list[_Raw]]:
    preamble: list[str] = []
    raws: list[_Raw] = []
    fenced = False
    for offset, line in enumerate(body.split("\n")):
        if _fence_re().match(line):
            fenced = not fenced
        heading = None if fenced else _heading_re().match(line)
        if heading:
            raws.append(_Raw(heading[2], first_line + offset, len(heading[1])))
        elif raws:
            raws[-1].lines.append(line)
        else:
            preamble.append(line)
    return preamble, raws


def _items(lines: list[str]) -> list[Item]:
    return [
        Item(name=m[1].strip(), description=" ".join(m[2].split()))
        for line in lines
        if (m := _item_re().match(line.strip()))
    ]


def _section(raw: _Raw, title: str | None = None) -> Section:
    heading = title or " ".join(raw.title.split())
    return Section(title=heading, text=normalise(raw.lines), items=_items(raw.lines))


def _checklist(raw: _Raw, source: str, problems: list[ContractError]) -> list[str]:
    items: list[str] = []
    before = len(problems)
    for offset, line in enumerate(raw.lines, start=1):
        stripped = line.strip()
        if (check := _check_re().match(stripped)) is not None:
            items.append(" ".join(check[1].split()))
        elif _bullet_re().match(stripped) and not line.startswith((" ", "\t")):
            problems.append(
                ContractError(
                    "HZC062",
                    "a ### Done when item is not a checklist item",
                    "write each condition as '- [ ] the condition'",
                    file=source,
                    line=raw.line + offset,
                )
            )
        elif stripped and items and line.startswith((" ", "\t")):
            items[-1] += " " + " ".join(stripped.split())
    if not items and len(problems) == before:
        problems.append(
            ContractError(
                "HZC061",
                "### Done when has no checklist items",
                "list what must hold before a draft is placed, as '- [ ] the condition'",
                file=source,
                line=raw.line,
            )
        )
    return items


def parse_body(body: str, *, first_line: int, source: str) -> Body:
    """Parse the Markdown after the frontmatter, or raise a ``HZC06x`` error carrying
    every problem found."""
    problems: list[ContractError] = []
    preamble, raws = _sections(body, first_line)
    known: dict[str, _Raw] = {}
    facets: list[Section] = []
    others: list[_Raw] = []
    current: str | None = None
    parent: _Raw | None = None
    for raw in raws:
        if raw.level == 4:
            if current == "maintains":
                facets.append(_section(raw))
            elif parent is not None:
                parent.lines.extend([f"#### {raw.title}", *raw.lines])
            else:
                preamble.extend([f"#### {raw.title}", *raw.lines])
            continue
        parent = raw
        current = _KNOWN.get(" ".join(raw.title.lower().split()))
        if current is None:
            others.append(raw)
        elif current in known:
            problems.append(
                ContractError(
                    "HZC063",
                    f"the section ### {raw.title} is written twice",
                    f"merge the two; the first is on line {known[current].line}",
                    file=source,
                    line=raw.line,
                )
            )
        else:
            known[current] = raw
    goal = known.get("goal")
    if goal is None or not normalise(goal.lines):
        problems.append(
            ContractError(
                "HZC064",
                "the contract has no ### Goal" if goal is None else "### Goal is empty",
                "say in a sentence or two what this Heinzelmännchen keeps true, under ### Goal",
                file=source,
                line=first_line if goal is None else goal.line,
            )
        )
    done = known.get("done_when")
    if done is None:
        problems.append(
            ContractError(
                "HZC060",
                "the contract has no ### Done when",
                "add a ### Done when checklist ('- [ ] ...') the model checks before a draft",
                file=source,
                line=first_line,
            )
        )
    done_when = [] if done is None else _checklist(done, source, problems)
    if problems or goal is None:
        raise ContractError.of(problems)
    return Body(
        preamble=normalise(preamble),
        goal=_section(goal, "Goal"),
        requires=_optional(known, "requires"),
        maintains=_optional(known, "maintains"),
        facets=facets,
        continuity=_optional(known, "continuity"),
        done_when=done_when,
        other=[_section(raw) for raw in others],
    )


def _optional(known: dict[str, _Raw], key: str) -> Section | None:
    raw = known.get(key)
    return None if raw is None else _section(raw, key.capitalize())
