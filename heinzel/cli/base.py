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
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, TypeVar

import click

from ledger.errors import HzError

if TYPE_CHECKING:
    from heinzel.app import App

F = TypeVar("F", bound=Callable[..., Any])

ONE_A_LINE = 20
"""A JSON list longer than this prints one item a line (`emit_lines`), else indented."""

__all__ = [
    "ONE_A_LINE",
    "emit",
    "emit_lines",
    "exit_if_ended_badly",
    "given_home",
    "home_option",
    "hz",
    "json_option",
    "open_app",
    "request_id_option",
]


def home_option(func: F) -> F:
    """``--home DIR`` on every command (default ``$HZ_HOME``, then the user data dir)."""
    return click.option(
        "--home",
        "home",
        type=click.Path(file_okay=False),
        default=None,
        help="hz's data directory (default: $HZ_HOME, else the user data dir).",
    )(func)


def request_id_option(what: str) -> Callable[[F], F]:
    """``--request-id ID``: the caller's id for this ``what``, so that sending it again
    runs nothing twice (``rq-`` and up to 64 letters or digits, else HZH231)."""
    return click.option(
        "--request-id",
        default=None,
        metavar="rq-ID",
        help=f"Your id for this {what} (rq- and up to 64 letters or digits): sent again, "
        "it runs nothing twice.",
    )


def json_option(func: F) -> F:
    """``--json`` on every listing or showing command."""
    return click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")(func)


def given_home(home: str | None) -> str | None:
    """The ``--home`` given after the subcommand, else the one given before it (``hz
    --home DIR ...``), else None (then ``$HZ_HOME``, else the user data dir)."""
    if home is not None:
        return home
    context = click.get_current_context(silent=True)
    root = context.find_root().obj if context is not None else None
    found = root.get("home") if isinstance(root, dict) else None
    return found if isinstance(found, str) else None


def open_app(home: str | None) -> App:
    """Build the application for this process: home, clock and settings from the
    environment."""
    from heinzel.app import App

    context = click.get_current_context(silent=True)
    app = App.from_environment(given_home(home), dict(os.environ))
    if context is not None:  # the index closed keeping its WAL when the command ends
        context.call_on_close(app.service.close)
    return app


def emit(payload: Any, as_json: bool, render: Callable[[Any], str]) -> None:
    """Print ``payload`` as JSON or through ``render``."""
    if as_json:
        # Indented output only for a few items: a long listing goes one item a line, through
        # json's C encoder (``indent`` forces the pure-Python one), still one JSON document.
        if isinstance(payload, list) and len(payload) > ONE_A_LINE:
            emit_lines(json.dumps(item, ensure_ascii=False, sort_keys=True) for item in payload)
        else:
            click.echo(json.dumps(payload, indent=2, ensure_ascii=False, sort_keys=True))
    else:
        text = render(payload)
        if text:
            click.echo(text)


def emit_lines(items: Iterable[str]) -> None:
    """A JSON list of more than `ONE_A_LINE` items, each item's JSON given: one a line.
    ``color=True``: JSON escapes every control character, so there is no ANSI code for
    click to strip, and a pipe's megabytes are not searched for one."""
    click.echo("[\n" + ",\n".join(items) + "\n]", color=True)


def exit_if_ended_badly(data: dict[str, Any]) -> None:
    """A turn that failed or was abandoned: its cause (code, message, hint) on stderr and
    exit status 1; the machine's own code when no deeper cause was kept. A turn a signal
    stopped says so and names the one command that goes on."""
    signal = data.get("interrupted")
    if signal and data.get("reason") == "stopped":
        name = data.get("name") or "NAME"
        click.echo(
            f"HZH361: {signal}: turn {data.get('turn')} stopped "
            "and ended abandoned (stopped); nothing half-done is left\n"
            f"hint: `hz heinzel wake {name}` starts a new turn",
            err=True,
        )
        click.get_current_context().exit(1)
    if signal:
        how = data.get("disposition") or data.get("state")
        why = f" ({data['reason']})" if data.get("reason") else ""
        click.echo(f"{signal}: the turn ended {how}{why} before it could stop", err=True)
    if data.get("state") not in ("failed", "abandoned") and data.get("disposition") not in (
        "failed",
        "abandoned",
    ):
        cause = data.get("cause")
        if cause and data.get("reason") == "cap":  # skipped, not failed: a notice, exit 0
            click.echo(f"notice: {cause['code']}: {cause['message']}", err=True)
            click.echo(f"hint: {cause['hint']}", err=True)
        return
    cause = data.get("cause")
    if cause:
        text = f"{cause['code']}: {cause['message']}"
        if cause.get("hint"):
            text += f"\nhint: {cause['hint']}"
    else:
        text = _uncaused(data)
    click.echo(text, err=True)
    click.get_current_context().exit(1)


ABANDONED: dict[str, tuple[str, str, str]] = {
    "stopped": (
        "HZH361",
        "was stopped (`hz heinzel stop`, the page's Stop or MCP heinzel_stop) and ended "
        "abandoned (stopped); nothing half-done is left",
        "`hz heinzel wake {name}` starts a new turn",
    ),
    "timeout": (
        "HZH362",
        "ran past its contract's timeout and ended abandoned (timeout)",
        "`hz heinzel report {name}` shows what it did; a longer `hz.timeout` is an "
        "amendment (`hz heinzel amend {name} --from FILE`)",
    ),
    "max-resumes": (
        "HZH363",
        "was interrupted more often than max_resumes allows and ended abandoned (max-resumes)",
        "`hz heinzel retry {name}` forks it from its last checkpoint",
    ),
    "superseded": (
        "HZH364",
        "was superseded by a newer turn and ended abandoned (superseded)",
        "`hz heinzel show {name}` shows the turn that replaced it",
    ),
}
"""A turn abandoned for a reason of the machine's, with no deeper cause kept: its code,
what happened, and the next step (``{name}`` filled in)."""


def _uncaused(data: dict[str, Any]) -> str:
    """``CODE: message`` and a hint for a turn that ended badly with no cause kept: the
    machine's own code when its error is one, the abandon reason's code, else HZH365."""
    name = data.get("name") or "NAME"
    turn = data.get("turn")
    error = str(data.get("error") or "")
    reason = str(data.get("reason") or "")
    if reason in ABANDONED:
        code, what, hint = ABANDONED[reason]
        return f"{code}: turn {turn} {what}\nhint: {hint.format(name=name)}"
    if error.startswith("HZ") and error[2:3].isalpha() and error[3:].isdigit():
        code, why = error, ""
    else:
        code, why = "HZH365", f" ({error or reason})" if (error or reason) else ""
    return (
        f"{code}: turn {turn} ended {data.get('state')}{why}\n"
        f"hint: `hz heinzel show {name}` shows the turn"
    )


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


def _version(ctx: click.Context) -> None:
    """``hz --version``: the package's version and the spine versions it writes (docs/spine.md,
    "Versions"); `machines` loads only here."""
    from importlib.metadata import version

    from ledger.event import ENVELOPE_VERSION
    from machines.vocabulary import VOCABULARY_VERSION

    click.echo(
        f"hz, version {version('heinzel')} (spine vocabulary {VOCABULARY_VERSION}, "
        f"envelope v{ENVELOPE_VERSION})"
    )
    ctx.exit()


@click.group(cls=HzGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--version",
    is_flag=True,
    expose_value=False,
    is_eager=True,
    callback=lambda ctx, _param, value: _version(ctx) if value else None,
    help="Show the version, the spine's vocabulary and envelope versions, and exit.",
)
@click.option(
    "--home",
    "home",
    type=click.Path(file_okay=False),
    default=None,
    help="hz's data directory for every subcommand (as if given to each).",
)
@click.pass_context
def hz(ctx: click.Context, home: str | None) -> None:
    """hz: a local-first engine for durable agents (Heinzelmännchen).

    \b
    Example:
      hz heinzel new --from weekly-report.prose.md
      hz approve weekly-report
      hz heinzel list
    """
    ctx.obj = {"home": home}
