"""The commands of the tick and the user's verbs: ``hz system daemon tick|run`` and
``hz heinzel chat|resume|stop|retry``, each a few lines over `Tick` and `Verbs`."""

from __future__ import annotations

import signal
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from heinzel.cli.base import emit, home_option, hz, json_option, open_app
from heinzel.cli.commands import daemon, heinzel

if TYPE_CHECKING:
    from heinzel.tick.verbs import Verbs


def _verbs(home: str | None) -> Verbs:
    return open_app(home).verbs()


@daemon.command("tick")
@home_option
@json_option
def tick(home: str | None, as_json: bool) -> None:
    """One tick (for cron, systemd or launchd): wake what is due.

    \b
    Example:
      hz system daemon tick
    """
    report = open_app(home).tick(sleep=time.sleep).run()
    emit(report.to_json(), as_json, render_tick)


@daemon.command("run")
@click.option("--interval", type=float, default=300.0, help="Seconds between ticks.")
@home_option
def run(interval: float, home: str | None) -> None:
    """Tick in a loop until SIGTERM or SIGINT (it ends after the tick in progress).

    \b
    Example:
      hz system daemon run --interval 300
    """
    from heinzel.tick.daemon import run_loop

    app = open_app(home)
    stop = threading.Event()
    for number in (signal.SIGTERM, signal.SIGINT):
        signal.signal(number, lambda *_: stop.set())
    run_loop(
        lambda: app.tick(sleep=time.sleep).run(),
        interval=interval,
        wait=stop.wait,
        on_report=lambda report: click.echo(render_tick(report.to_json())),
        on_error=lambda error: click.echo(error.render(), err=True),
    )


def render_verb(data: dict[str, Any]) -> str:
    """A verb's answer, one ``key: value`` line each."""
    return "\n".join(f"{key}: {value}" for key, value in data.items())


def render_tick(report: dict[str, Any]) -> str:
    """One tick in a few lines: who woke and why, skips, deferrals, notices, errors."""
    lines = [f"tick at {report['at']}: {len(report['woken'])} woken, {report['fetches']} fetched"]
    for woken in report["woken"]:
        what = woken.get("woken_by") or ", ".join(w["cause"] for w in woken.get("wakes", []))
        lines.append(f"  {woken['id']}: {what}")
    lines += [f"  {s['id']}: skipped ({s['reason']})" for s in report["skipped"]]
    if report["deferred"]:
        lines.append(f"  {len(report['deferred'])} more wait for the next tick")
    lines += [f"  notice: {n}" for n in report["notices"]]
    lines += [f"  {e['id']}: {e['code']}" for e in report["errors"]]
    return "\n".join(lines)


@heinzel.command("chat")
@click.argument("name")
@click.argument("text")
@click.option("--request-id", default=None, help="Resend the same message idempotently.")
@home_option
@json_option
def chat(name: str, text: str, request_id: str | None, home: str | None, as_json: bool) -> None:
    """Send a message to its session (steers a running turn, else starts one).

    \b
    Example:
      hz heinzel chat weekly-report 'keep it under ten lines'
    """
    emit(_verbs(home).chat(name, text, request_id=request_id), as_json, render_verb)


@heinzel.command("resume")
@click.argument("name")
@home_option
@json_option
def resume(name: str, home: str | None, as_json: bool) -> None:
    """Resume a waiting turn now.

    \b
    Example:
      hz heinzel resume weekly-report
    """
    emit(_verbs(home).resume(name), as_json, render_verb)


@heinzel.command("stop")
@click.argument("name")
@home_option
@json_option
def stop_(name: str, home: str | None, as_json: bool) -> None:
    """Stop the running turn (abandoned, reason stopped).

    \b
    Example:
      hz heinzel stop weekly-report
    """
    emit(_verbs(home).stop(name), as_json, render_verb)


@heinzel.command("retry")
@click.argument("name")
@click.argument("hint", required=False, default="")
@click.option("--request-id", default=None, help="Resend the same retry idempotently.")
@home_option
@json_option
def retry(name: str, hint: str, request_id: str | None, home: str | None, as_json: bool) -> None:
    """Fork the last turn after its gather, with a hint.

    \b
    Example:
      hz heinzel retry weekly-report shorter
    """
    emit(_verbs(home).retry(name, hint, request_id=request_id), as_json, render_verb)


@hz.command("demo")
@home_option
def demo(home: str | None) -> None:
    """The worked example (Priya's weekly report), offline, narrated, in a fresh home.

    \b
    Example:
      hz demo
      hz demo --home /tmp/priya
    """
    import tempfile

    from heinzel.cli.demo import run_demo

    where = Path(home).expanduser().resolve() if home else Path(tempfile.mkdtemp(prefix="hz-demo-"))
    run_demo(where, click.echo)
