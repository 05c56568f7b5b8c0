"""The ``hz`` command line: a thin surface over `heinzel.app.App`.

`base` holds the click group, the shared options and the rendering of coded errors;
`commands` the Heinzelmännchen's commands; `verbs` the tick and the user's verbs; `render`
the text forms; `demo` the worked example. `main` is the console script.
"""

from __future__ import annotations

__all__ = ["main"]


def main() -> None:
    """Entry point of the ``hz`` console script (and of ``python -m heinzel``)."""
    from heinzel.cli import (  # noqa: F401  (they register the subcommands)
        commands,
        credential,
        serve,
        verbs,
    )
    from heinzel.cli.base import hz

    hz(prog_name="hz")
