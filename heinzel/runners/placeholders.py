"""Placeholders of the command runner, validated before anything runs and filled per argument.

Each argument of ``command`` may hold ``{prompt_file}``, ``{contract_file}``,
``{output_file}``, ``{working_dir}``, ``{tools}``, ``{model}``,
``{timeout_seconds}`` and ``{max_usd}``; ``{{`` and ``}}`` are literal braces.
A value is substituted inside its own argument and never split, so no value
can become a second argument. Anything else in braces (an unknown name, an
index or attribute, a format spec like ``{x:>10}``, a conversion like
``{x!r}``, a lone brace) is refused with HZR011.
"""

from __future__ import annotations

import string
from collections.abc import Mapping, Sequence

from heinzel.runners.errors import RunnerError

__all__ = ["PLACEHOLDERS", "fill", "placeholders_used", "validate"]

PLACEHOLDERS = frozenset(
    {
        "prompt_file",
        "contract_file",
        "output_file",
        "working_dir",
        "tools",
        "model",
        "timeout_seconds",
        "max_usd",
    }
)
_FORMATTER = string.Formatter()


def _refuse(runner: str, arg: str, why: str) -> RunnerError:
    return RunnerError(
        "HZR011",
        f"[runners.{runner}] command argument {arg!r}: {why}",
        "use only "
        + ", ".join(f"{{{name}}}" for name in sorted(PLACEHOLDERS))
        + "; write {{ and }} for literal braces",
    )


def _fields(runner: str, arg: str) -> list[tuple[str, str | None]]:
    """The (literal, placeholder) pieces of one argument, validated."""
    try:
        parsed = list(_FORMATTER.parse(arg))
    except ValueError as exc:
        raise _refuse(runner, arg, f"malformed braces ({exc})") from None
    pieces: list[tuple[str, str | None]] = []
    for literal, field, spec, conversion in parsed:
        if field is None:
            pieces.append((literal, None))
            continue
        if field not in PLACEHOLDERS:
            raise _refuse(runner, arg, f"unknown placeholder {{{field}}}")
        if conversion is not None:
            raise _refuse(runner, arg, f"conversions like !{conversion} are not allowed")
        if spec:
            raise _refuse(runner, arg, f"format specs like :{spec} are not allowed")
        pieces.append((literal, field))
    return pieces


def validate(runner: str, command: Sequence[str]) -> None:
    """Refuse a command whose placeholders hz would not fill exactly (HZR011)."""
    for arg in command:
        _fields(runner, arg)


def placeholders_used(runner: str, command: Sequence[str]) -> frozenset[str]:
    """The placeholder names the command mentions."""
    return frozenset(
        field for arg in command for _, field in _fields(runner, arg) if field is not None
    )


def fill(runner: str, command: Sequence[str], values: Mapping[str, str]) -> list[str]:
    """The argument list with every placeholder replaced inside its own argument."""
    filled = []
    for arg in command:
        parts = []
        for literal, field in _fields(runner, arg):
            parts.append(literal)
            if field is not None:
                parts.append(values[field])
        filled.append("".join(parts))
    return filled
