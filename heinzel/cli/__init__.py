"""The ``hz`` command line: a thin surface over `heinzel.app.App`.

`base` holds the click group, the shared options and the rendering of coded errors;
`commands` the Heinzelmännchen's commands; `verbs` the tick and the user's verbs; `render`
the text forms; `demo` the worked example. `main` is the console script.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import click

__all__ = ["group", "main", "undecodable"]


def group() -> click.Group:
    """The ``hz`` group with every command registered (each module registers its own)."""
    from heinzel.cli import (  # noqa: F401  (they register the subcommands)
        commands,
        credential,
        graph,
        migrate,
        report,
        serve,
        team,
        trial,
        verbs,
    )
    from heinzel.cli.base import hz

    return hz


def main() -> None:
    """Entry point of the ``hz`` console script (and of ``python -m heinzel``)."""
    refused = undecodable(sys.argv[1:])
    if refused is not None:
        print(refused, file=sys.stderr)
        sys.exit(2)
    group()(prog_name="hz")


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
