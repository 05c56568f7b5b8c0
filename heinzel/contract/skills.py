"""Skills: advice for how, in the Agent Skills format, that can grant nothing (``HZC051``).

A skill is ``<dir>/<name>/SKILL.md``: YAML frontmatter with ``name`` (the directory's
name), ``description`` and optionally ``hz.applies`` (asset types, roles, capabilities it
applies to), then Markdown. Other Agent Skills keys (license, metadata, compatibility...)
are tolerated so the same file works in Claude Code, Codex or Cursor, but a key that would
grant an input, a tool, a target or a cap (``allowed-tools``, ``inputs``, ``max_usd``...)
is refused with ``HZC051``, wherever it appears in the frontmatter's top level or ``hz:``.
Contracts name skills in ``hz.uses``; `resolve_skills` finds them in skill directories
given in layer order, general to specific, the most specific copy winning.
`skills_for_turn` is what every turn runs: the contract's ``uses`` and, after them, the
skills whose ``applies`` match what the turn's contract touches.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from heinzel.contract.source import LineMap, load_yaml, split
from heinzel.errors import ContractError
from heinzel.ids import is_slug

__all__ = [
    "GRANT_KEYS",
    "SKILL_FILE",
    "Applies",
    "Skill",
    "Turn",
    "copies",
    "load_skill",
    "resolve_skills",
    "skills_for_turn",
]

SKILL_FILE = "SKILL.md"

GRANT_KEYS = frozenset(
    {
        "agent",
        "allowed-tools",
        "allowed_tools",
        "approvers",
        "budget",
        "caps",
        "hooks",
        "input",
        "inputs",
        "max_usd",
        "mcp-servers",
        "mcp_servers",
        "model",
        "outputs",
        "permissions",
        "publishes",
        "requires",
        "schedule",
        "target",
        "targets",
        "tools",
    }
)
"""Frontmatter keys that would grant something: refused in a skill with ``HZC051``."""


class Applies(BaseModel):
    """Where a skill applies by itself, without a contract naming it."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True, defer_build=True)

    asset_types: list[str] = []
    roles: list[str] = []
    capabilities: list[str] = []


class Skill(BaseModel):
    """A loaded skill: its name, description, where it applies, its text and fingerprint.

    ``text`` is the Markdown after the frontmatter; ``fingerprint`` is ``sha256:`` of the
    file's bytes, as a turn records it in ``turn.started``.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    name: str
    description: str
    applies: Applies | None = None
    text: str
    fingerprint: str
    path: str


def _bad(message: str, hint: str, source: str, line: int | None) -> ContractError:
    return ContractError("HZC053", message, hint, file=source, line=line)


def _check_grants(data: dict[Any, Any], lines: LineMap, source: str) -> None:
    places: list[tuple[tuple[str, ...], Any]] = [((), data)]
    if isinstance(data.get("hz"), dict):
        places.append((("hz",), data["hz"]))
    for prefix, mapping in places:
        for key in mapping:
            if str(key).lower() in GRANT_KEYS:
                path = (*prefix, str(key))
                raise ContractError(
                    "HZC051",
                    f"a skill can't grant anything, and {'.'.join(path)} would",
                    "a skill is advice for how; inputs, tools, targets and caps belong "
                    "in the contract, which the user approves",
                    file=source,
                    line=lines.line(path),
                )


def load_skill(path: Path) -> Skill:
    """Load ``path`` (a ``SKILL.md`` file or its directory), or raise a ``HZC05x`` error."""
    file = path / SKILL_FILE if path.is_dir() else path
    source = str(file)
    try:
        raw = file.read_bytes()
        text = raw.decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        message = f"can't read the skill: {exc}"
        raise _bad(message, "check the path and encoding", source, None) from None
    try:
        parts = split(text, source=source)
    except ContractError as exc:  # the fences: said for a skill, not for a contract
        raise ContractError(exc.code, exc.message, _FENCES, file=source, line=exc.line) from None
    data, lines = load_yaml(parts.yaml_text, offset=parts.yaml_line, source=source)
    if not isinstance(data, dict):
        raise _bad("the frontmatter is not a mapping", _SHAPE, source, parts.yaml_line)
    _check_grants(data, lines, source)
    name = data.get("name")
    if not isinstance(name, str) or not is_slug(name):
        raise _bad(
            f"not a valid skill name: {name!r}",
            f"name: {file.parent.name} (the directory's name: lowercase letters and digits "
            "joined by single hyphens)",
            source,
            lines.line(("name",)),
        )
    if name != file.parent.name:
        raise ContractError(
            "HZC054",
            f"the skill is named {name!r} but lives in {file.parent.name!r}",
            "name the directory after the skill (Agent Skills format)",
            file=source,
            line=lines.line(("name",)),
        )
    description = data.get("description")
    if not isinstance(description, str) or not description.strip():
        raise _bad(
            "the skill has no description",
            "add description: one line saying what the skill is for and when it applies",
            source,
            lines.line(("description",)),
        )
    return Skill(
        name=name,
        description=" ".join(description.split()),
        applies=_applies(data.get("hz"), lines, source),
        text=parts.body.strip() + "\n",
        fingerprint="sha256:" + hashlib.sha256(raw).hexdigest(),
        path=source,
    )


_SHAPE = "a SKILL.md starts with frontmatter: name (the directory's name) and description"
_FENCES = (
    "start SKILL.md with a line '---', then name: (the directory's name) and description:, "
    "then '---' and the advice in Markdown"
)


def _applies(hz: Any, lines: LineMap, source: str) -> Applies | None:
    if hz is None:
        return None
    if not isinstance(hz, dict) or set(hz) - {"applies"}:
        raise _bad(
            "hz: in a skill holds only applies",
            "remove the other keys",
            source,
            lines.line(("hz",)),
        )
    try:
        return Applies.model_validate(hz.get("applies") or {})
    except ValidationError as exc:
        loc = ("hz", "applies", *(str(p) for p in exc.errors()[0]["loc"]))
        raise _bad(
            f"bad hz.applies: {exc.errors()[0]['msg']}",
            "applies lists asset_types, roles and capabilities",
            source,
            lines.line(loc),
        ) from None


def resolve_skills(uses: Sequence[str], dirs: Sequence[Path]) -> list[Skill]:
    """Load each skill named in ``uses`` from ``dirs`` (layer order, general to specific).

    A later directory's copy of a skill shadows an earlier one. A name found nowhere is
    ``HZC052``.
    """
    skills = []
    for name in uses:
        found = copies(name, dirs)
        if not found:
            raise ContractError(
                "HZC052",
                f"the skill {name!r} is not in any skill directory",
                "searched: "
                + (", ".join(str(d) for d in dirs) or "no directories")
                + f"; put it in {name}/SKILL.md in one of them (docs/configuration.md, "
                f"'Skill directories'), or remove {name} from the contract's hz.uses",
                file="<uses>",
            )
        skills.append(load_skill(found[-1]))
    return skills


class Turn(BaseModel):
    """What a turn touches, for ``applies``: its outputs' asset types (``doc`` of
    ``doc:team/report``) and the capabilities it reads, writes or publishes to."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    asset_types: frozenset[str] = frozenset()
    capabilities: frozenset[str] = frozenset()


def _matches(skill: Skill, turn: Turn) -> bool:
    """One of the skill's asset types or capabilities is the turn's (``roles`` match no
    turn yet: hz knows no user roles, so such a skill comes in through ``uses``)."""
    if skill.applies is None:
        return False
    return bool(
        turn.asset_types.intersection(skill.applies.asset_types)
        or turn.capabilities.intersection(skill.applies.capabilities)
    )


def copies(name: str, dirs: Sequence[Path]) -> list[Path]:
    """Every ``SKILL.md`` of ``name`` in ``dirs``, in layer order."""
    return [d / name / SKILL_FILE for d in dirs if (d / name / SKILL_FILE).is_file()]


def skills_for_turn(uses: Sequence[str], dirs: Sequence[Path], turn: Turn) -> list[Skill]:
    """The skills of one turn: ``uses`` in the contract's order (`resolve_skills`), then
    every other skill whose ``applies`` matches ``turn``, in layer order (general to
    specific) and by name, the most specific copy of each name winning. A skill file that
    does not load (bad YAML, a granting key: its ``ContractError``) stops only the turns
    of the contracts that use it; for the others it applies to nothing (its ``applies``
    cannot be read)."""
    chosen = resolve_skills(uses, dirs)
    named = set(uses)
    seen: dict[str, Path] = {}
    for folder in dirs:
        if folder.is_dir():
            for file in sorted(folder.glob(f"*/{SKILL_FILE}")):
                if file.parent.name not in named:
                    seen.setdefault(file.parent.name, file)
    for name in seen:
        try:
            skill = load_skill(copies(name, dirs)[-1])
        except ContractError:
            continue  # a skill that does not load applies to nobody; its users stop on it
        if _matches(skill, turn):
            chosen.append(skill)
    return chosen
