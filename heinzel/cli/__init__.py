"""The ``hz`` command line: a thin surface over `heinzel.app.App`.

`base` holds the click group, the shared options and the rendering of coded errors;
`commands` the Heinzelmännchen's commands; `verbs` the tick and the user's verbs; `render`
the text forms; `demo` the worked example. `main` is the console script.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import click

__all__ = ["group", "main", "undecodable"]


MODULES = (
    "commands",
    "credential",
    "graph",
    "migrate",
    "report",
    "serve",
    "team",
    "trial",
    "verbs",
)
"""The modules that register ``hz``'s commands (each registers its own)."""
OWNERS: dict[tuple[str, ...], str] = {
    **{
        ("heinzel", name): "commands"
        for name in (
            "amend",
            "answer",
            "decline",
            "dismiss",
            "forget",
            "lessons",
            "list",
            "new",
            "pause",
            "prune",
            "reindex",
            "rename",
            "retire",
            "show",
            "unpause",
            "unretire",
            "verify",
            "wake",
        )
    },
    ("approve",): "commands",
    ("drafts",): "commands",
    ("mcp",): "commands",
    ("system", "doctor"): "commands",
    ("system", "credential"): "credential",
    ("graph",): "graph",
    ("heinzel", "migrate"): "migrate",
    ("heinzel", "report"): "report",
    ("system", "serve"): "serve",
    ("team",): "team",
    ("heinzel", "try"): "trial",
    ("system", "daemon"): "verbs",
    **{("heinzel", name): "verbs" for name in ("chat", "resume", "retry", "stop")},
    ("demo",): "verbs",
}
"""Which module registers the command (or the whole group) a command line names by its
first words; `tests/heinzel/test_lazy_commands.py` checks it against the registered tree."""


def group(args: Sequence[str] | None = None) -> click.Group:
    """The ``hz`` group with every command registered, or, for ``args`` that begin with a
    command `OWNERS` knows (``heinzel wake ...``), with only that command's module and
    the groups it sits in: a wake does not load the team's, the graph's or the daemon's
    commands (about 14 M instructions). Anything else (a group's ``--help``, an option
    first, a mistyped command) loads them all, so the help and click's suggestions are
    whole."""
    owner = None if args is None else _owner(args)
    for name in MODULES if owner is None else ("commands", owner):
        importlib.import_module(f"heinzel.cli.{name}")
    from heinzel.cli.base import hz

    return hz


def _owner(args: Sequence[str]) -> str | None:
    """The module `OWNERS` names for the first two words of ``args``, else the first one."""
    return OWNERS.get(tuple(args[:2])) or OWNERS.get(tuple(args[:1]))


def main() -> None:
    """Entry point of the ``hz`` console script (and of ``python -m heinzel``)."""
    refused = undecodable(sys.argv[1:])
    if refused is not None:
        print(refused, file=sys.stderr)
        sys.exit(2)
    group(sys.argv[1:])(prog_name="hz")


def undecodable(args: list[str]) -> str | None:
    """``HZH345`` and its hint for the first argument that is not UTF-8 text, else None:
    no command can use such a string, so the whole command line is refused before any
    command runs, as bad usage (exit 2)."""
    from heinzel.strings.text import is_text, not_text

    for n, arg in enumerate(args, start=1):
        if not is_text(arg):
            hint = "hz reads its arguments as UTF-8: type them in a UTF-8 terminal, or pass "
            return not_text("HZH345", f"argument {n}", arg, hint + "the text from a file").render()
    return None
