"""What a contract's frontmatter means, checked against the capability registry.

Every input reads a known read method of a capability ``requires`` grants with mode read;
every publish names a known write method of a capability granted with mode write; a
method that searches a window gets one and one that doesn't gets none; args are those the
method accepts; ``if-moved`` is refused for team contracts. All problems are found and
raised together, in document order (the first is the error's own code).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from heinzel.capabilities.registry import Method, Registry
from heinzel.contract.model import Discover, Frontmatter, Input
from heinzel.contract.source import LineMap, Path_
from heinzel.contract.types import split_method, split_requirement
from heinzel.errors import ContractError
from ledger.records import frozen_record

__all__ = ["DISCOVERABLE", "check_semantics"]

DISCOVERABLE = frozenset({"documents.read"})
"""The methods the daily discovery can list sources for (``discover`` hints)."""


@frozen_record
class _Problem:
    path: Path_
    code: str
    message: str
    hint: str


def check_semantics(
    frontmatter: Frontmatter,
    data: dict[str, Any],
    lines: LineMap,
    *,
    registry: Registry,
    source: str,
) -> None:
    """Raise every problem of meaning in ``frontmatter`` at once, in document order."""
    hz = frontmatter.hz
    raw_hz: dict[str, Any] = data["hz"]
    problems: list[_Problem] = []
    problems += _requires(hz.requires, raw_hz.get("requires"), registry)
    for name, spec in hz.inputs.items():
        problems += _input(name, spec, set(hz.requires), registry)
    problems += _publishes(hz.publishes, raw_hz.get("publishes"), set(hz.requires), registry)
    for name, hint in hz.discover.items():
        problems += _discover(name, hint, set(hz.requires), set(hz.inputs), registry)
    if hz.namespace == "team" and hz.render_on_schedule == "if-moved":
        problems.append(
            _Problem(
                ("hz", "render_on_schedule"),
                "HZC023",
                "render_on_schedule: if-moved is refused for team contracts",
                "use always: a team's slot that rightly did nothing would show as late",
            )
        )
    if problems:
        ordered = sorted(problems, key=lambda p: lines.line(p.path))
        raise ContractError.of(
            [
                ContractError(p.code, p.message, p.hint, file=source, line=lines.line(p.path))
                for p in ordered
            ]
        )


def _position(raw: Any, value: str) -> int | str:
    """Where ``value`` sits in the file's list (the model keeps sets sorted)."""
    if isinstance(raw, list) and value in raw:
        return raw.index(value)
    return value


def _unknown_capability(path: Path_, capability: str, registry: Registry) -> _Problem:
    return _Problem(
        path,
        "HZC030",
        f"unknown capability {capability!r}",
        "known capabilities: " + ", ".join(registry.names()),
    )


def _method(
    path: Path_, reference: str, registry: Registry
) -> tuple[Method | None, _Problem | None]:
    capability, method = split_method(reference)
    cap = registry.capability(capability)
    if cap is None:
        return None, _unknown_capability(path, capability, registry)
    found = cap.methods.get(method)
    if found is None:
        hint = f"{capability} offers: " + ", ".join(sorted(cap.methods))
        return None, _Problem(path, "HZC031", f"unknown method {reference!r}", hint)
    return found, None


def _requires(requires: Sequence[str], raw: Any, registry: Registry) -> list[_Problem]:
    problems = []
    for entry in requires:
        path = ("hz", "requires", _position(raw, entry))
        capability, mode = split_requirement(entry)
        cap = registry.capability(capability)
        if cap is None:
            problems.append(_unknown_capability(path, capability, registry))
        elif mode not in cap.modes():
            problems.append(
                _Problem(
                    path,
                    "HZC032",
                    f"{capability} has no {mode} methods, so {entry} grants nothing",
                    f"{capability} offers: " + ", ".join(sorted(cap.modes())),
                )
            )
    return problems


def _input(name: str, spec: Input, requires: set[str], registry: Registry) -> list[_Problem]:
    base: Path_ = ("hz", "inputs", name)
    method, problem = _method((*base, "from"), spec.from_, registry)
    if method is None:
        return [problem] if problem else []
    capability, _ = split_method(spec.from_)
    problems = []
    if method.mode != "read":
        problems.append(
            _Problem(
                (*base, "from"),
                "HZC035",
                f"input {name} reads from {spec.from_}, a write method",
                "inputs read; writes go under publishes",
            )
        )
    elif f"{capability}:read" not in requires:
        problems.append(
            _Problem(
                (*base, "from"),
                "HZC033",
                f"input {name} reads {capability}, which requires does not grant",
                f"add {capability}:read to hz.requires",
            )
        )
    if method.window and spec.window is None:
        problems.append(
            _Problem(
                base,
                "HZC036",
                f"input {name}: {spec.from_} searches a time window and needs one",
                "add window: 7d (or the span it should look back)",
            )
        )
    if not method.window and spec.window is not None:
        problems.append(
            _Problem(
                (*base, "window"),
                "HZC036",
                f"input {name}: {spec.from_} takes no window",
                "remove the window",
            )
        )
    for arg in sorted(set(spec.args) - method.args):
        accepted = ", ".join(sorted(method.args)) or "none"
        problems.append(
            _Problem(
                (*base, "args", arg),
                "HZC037",
                f"input {name}: {spec.from_} takes no argument {arg!r}",
                f"arguments it takes: {accepted}",
            )
        )
    for arg in sorted(method.required - set(spec.args)):
        problems.append(
            _Problem(
                (*base, "args") if spec.args else base,
                "HZC038",
                f"input {name}: {spec.from_} needs the argument {arg!r}",
                f"add args: {{{arg}: ...}}",
            )
        )
    return problems


def _discover(
    name: str, hint: Discover, requires: set[str], inputs: set[str], registry: Registry
) -> list[_Problem]:
    """A hint reads like an input would (HZC03x), a method discovery can list (HZH175),
    under a name no input has, instead of one that exists (HZH176)."""
    base: Path_ = ("hz", "discover", name)
    method, problem = _method((*base, "from"), hint.from_, registry)
    if method is None:
        return [problem] if problem else []
    capability, _ = split_method(hint.from_)
    if hint.from_ not in DISCOVERABLE:
        return [
            _Problem(
                (*base, "from"),
                "HZH175",
                f"discover {name}: discovery can't list sources of {hint.from_}",
                "discover hints read: " + ", ".join(sorted(DISCOVERABLE)),
            )
        ]
    if f"{capability}:read" not in requires:
        return [
            _Problem(
                (*base, "from"),
                "HZC033",
                f"discover {name} reads {capability}, which requires does not grant",
                f"add {capability}:read to hz.requires",
            )
        ]
    if name in inputs:  # instead_of may name an input a later version adds
        return [
            _Problem(
                base,
                "HZH176",
                f"discover {name}: {name} is already an input",
                "name the hint as the new input it would become",
            )
        ]
    return []


def _publishes(
    publishes: Sequence[str], raw: Any, requires: set[str], registry: Registry
) -> list[_Problem]:
    problems = []
    for reference in publishes:
        path = ("hz", "publishes", _position(raw, reference))
        method, problem = _method(path, reference, registry)
        if method is None:
            problems += [problem] if problem else []
            continue
        capability, _ = split_method(reference)
        if method.mode != "write":
            problems.append(
                _Problem(
                    path,
                    "HZC035",
                    f"{reference} is a read method and can't be published to",
                    "publishes names write methods such as documents.place_draft",
                )
            )
        elif f"{capability}:write" not in requires:
            problems.append(
                _Problem(
                    path,
                    "HZC034",
                    f"publishes {reference}, but requires does not grant {capability}:write",
                    f"add {capability}:write to hz.requires",
                )
            )
    return problems
