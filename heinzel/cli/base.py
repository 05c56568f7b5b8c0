"""The ``hz`` command line: a thin layer over `heinzel.service`.

Every command takes ``--home``; listing and showing commands take ``--json``.
Errors go to stderr as ``CODE: message`` and a hint line, with exit status 1;
bad usage exits 2 (click's own). Heavy modules load inside the commands, so
``hz --help`` starts fast.
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import click

from ledger.errors import HzError

if TYPE_CHECKING:
    from heinzel.app import App

F = TypeVar("F", bound=Callable[..., Any])

__all__ = ["emit", "home_option", "hz", "json_option", "open_app"]


def home_option(func: F) -> F:
    """``--home DIR`` on every command (default ``$HZ_HOME``, then the user data dir)."""
    return click.option(
        "--home",
        "home",
        type=click.Path(file_okay=False),
        default=None,
        help="hz's data directory (default: $HZ_HOME, else the user data dir).",
    )(func)


def json_option(func: F) -> F:
    """``--json`` on every listing or showing command."""
    return click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")(func)


def open_app(home: str | None) -> App:
    """Build the application for this process: home, clock and settings from the
    environment."""
    from heinzel.app import App

    return App.from_environment(home, dict(os.environ))


def emit(payload: Any, as_json: bool, render: Callable[[Any], str]) -> None:
    """Print ``payload`` as JSON or through ``render``."""
    if as_json:
        # Indented output only for a few items: a long listing goes one item a line, through
        # json's C encoder (``indent`` forces the pure-Python one), still one JSON document.
        if isinstance(payload, list) and len(payload) > 20:
            items = (json.dumps(item, ensure_ascii=False, sort_keys=True) for item in payload)
            click.echo("[\n" + ",\n".join(items) + "\n]")
        else:
            click.echo(json.dumps(payload, indent=2, ensure_ascii=False, sort_keys=True))
    else:
        text = render(payload)
        if text:
            click.echo(text)


class HzGroup(click.Group):
    """A group that renders hz's coded errors instead of tracebacks."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except HzError as exc:
            click.echo(exc.render(), err=True)
            ctx.exit(1)
        except sqlite3.Error as exc:  # the index's last resort: never a bare traceback
            from pathlib import Path

            from ledger.index import sqlite_error

            click.echo(sqlite_error(Path("the index"), exc).render(), err=True)
            ctx.exit(1)


@click.group(cls=HzGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="heinzel", prog_name="hz")
def hz() -> None:
    """hz: a local-first engine for durable agents (Heinzelmännchen).

    \b
    Example:
      hz heinzel new --from weekly-report.prose.md
      hz approve weekly-report
      hz heinzel list
    """
