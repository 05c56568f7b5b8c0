"""The ``hz`` command line: a thin surface over `heinzel.app.App`.

`base` holds the click group, the shared options and the rendering of coded errors;
`commands` the Heinzelmännchen's commands; `verbs` the tick and the user's verbs; `render`
the text forms; `demo` the worked example. `main` is the console script.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import click

__all__ = ["group", "main"]


def group() -> click.Group:
    """The ``hz`` group with every command registered (each module registers its own)."""
    from heinzel.cli import (  # noqa: F401  (they register the subcommands)
        commands,
        credential,
        report,
        serve,
        team,
        verbs,
    )
    from heinzel.cli.base import hz

    return hz


def main() -> None:
    """Entry point of the ``hz`` console script (and of ``python -m heinzel``)."""
    group()(prog_name="hz")
