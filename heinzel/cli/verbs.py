"""The commands of the tick and the user's verbs: ``hz system daemon tick|run`` and
``hz heinzel chat|resume|stop|retry``, each a few lines over `Tick` and `Verbs`."""

from __future__ import annotations

import re
import signal
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from heinzel.cli.base import (
    emit,
    exit_if_ended_badly,
    given_home,
    home_option,
    hz,
    json_option,
    open_app,
    request_id_option,
)
from heinzel.cli.commands import daemon, heinzel

if TYPE_CHECKING:
    from heinzel.tick.verbs import Verbs


def _verbs(home: str | None) -> Verbs:
    return open_app(home).verbs()


@daemon.command("tick")
@click.option(
    "--strict",
    is_flag=True,
    help="Exit 1 when a turn it ran failed or a source or Heinzelmännchen reported an error.",
)
@home_option
@json_option
def tick(strict: bool, home: str | None, as_json: bool) -> None:
    """One tick (for cron, systemd or launchd): wake what is due. A tick that ran exits 0
    even when some turns or sources failed (each is on stderr, coded, and tried again by
    a later tick); --strict exits 1 for those too.

    \b
    Example:
      hz system daemon tick
      hz system daemon tick --strict   # exit 1 when anything in it failed
    """
    app = open_app(home)
    if _show_tick(app, app.tick(sleep=time.sleep).run().to_json(), as_json) and strict:
        click.get_current_context().exit(1)


def _show_tick(app: Any, report: dict[str, Any], as_json: bool) -> bool:
    """Print one tick's report by name, and what failed on stderr, coded; True when a turn
    it ran failed or was abandoned, or an error was reported (``problems`` counts them)."""
    data = _named(app, report)
    data["problems"] = sum(1 for w in data["woken"] for e in w.get("ended", []) if _badly(e)) + len(
        data["errors"]
    )
    emit(data, as_json, render_tick)
    failed = [(w, e) for w in data["woken"] for e in w.get("ended", []) if _badly(e)]
    for woken, ended in failed:  # design.md: what failed goes to stderr, coded
        click.echo(_failure_text(woken.get("name") or woken["id"], ended), err=True)
    for error in data["errors"]:
        who = error.get("name") or error["id"]
        click.echo(f"{error['code']}: {who}: {error.get('message') or 'failed'}", err=True)
        if error.get("hint"):
            click.echo(f"hint: {error['hint']}", err=True)
    return bool(failed or data["errors"])


def _failure_text(who: str, ended: dict[str, Any]) -> str:
    """``CODE: name: message`` and a hint line for a turn the tick ran that failed or was
    abandoned (its cause when one was recorded, else its reason)."""
    cause = ended.get("cause") or {}
    how = ended.get("disposition") or ended.get("state") or "ended"
    error = str(ended.get("error") or "")
    coded = re.fullmatch(r"HZ[A-Z]\d{3}", error) is not None  # else a text, as max-resumes'
    code = cause.get("code") or (error if coded else "") or "HZH222"
    why = ended.get("reason") or "no reason"
    message = cause.get("message") or f"its turn ended {how} ({why})" + (
        f": {error}" if error and not coded else ""
    )
    hint = cause.get("hint") or f"`hz heinzel show {who}` shows the turn"
    return f"{code}: {who}: {message}\nhint: {hint}"


def _badly(ended: dict[str, Any]) -> bool:
    return bool({ended.get("state"), ended.get("disposition")} & {"failed", "abandoned"})


def _named(app: Any, report: dict[str, Any]) -> dict[str, Any]:
    """The tick's report with each Heinzelmännchen's name beside its id, and the cause
    (code, message, hint) of each turn that failed or was abandoned."""
    from heinzel.errors import HeinzelError

    names: dict[str, str] = {}

    def name(heinzel_id: str) -> str:
        if heinzel_id not in names:
            try:
                names[heinzel_id] = str(app.service.queries.row(heinzel_id)["name"])
            except (HeinzelError, KeyError, TypeError):
                names[heinzel_id] = heinzel_id
        return names[heinzel_id]

    for part in ("woken", "skipped", "handed", "busy", "errors"):
        for entry in report.get(part, []):
            entry["name"] = name(str(entry["id"]))
    for woken in report["woken"]:
        for ended in woken.get("ended", []):
            if _badly(ended):
                from heinzel.turns.failure import cause_of  # a turn's records: by need

                where = app.service.home.session_dir(str(woken["id"]))
                ended["cause"] = cause_of(where, ended.get("turn"))
            if ended.get("disposition") == "learned" and ended.get("turn"):
                # an approval read is `learned` even when the edits taught nothing: count
                found = app.service.read_db.execute(
                    "SELECT COUNT(*) FROM lessons WHERE turn = ?", [ended["turn"]]
                ).fetchone()
                ended["lessons"] = int(found[0]) if found else 0
    return report


@daemon.command("run")
@click.option(
    "--interval",
    type=click.FloatRange(min=1.0),
    default=300.0,
    help="Seconds between ticks (at least 1).",
)
@home_option
def run(interval: float, home: str | None) -> None:
    """Tick in a loop until SIGTERM or SIGINT (it ends after the tick in progress); each
    tick printed as `hz system daemon tick` prints it. The daemon imports hz and
    pydantic-ai once and runs each tick in a forked process of its own: a turn that
    crashes ends that process (HZH520 on stderr), never the daemon, and the next tick
    resumes it.

    \b
    Example:
      hz system daemon run --interval 300
    """
    from heinzel.tick.resident import in_child, preload, status_text

    preload()
    stop = threading.Event()
    for number in (signal.SIGTERM, signal.SIGINT):
        signal.signal(number, lambda *_: stop.set())

    while True:
        status = in_child(lambda: daemon_tick(home))
        if status not in (0, 1):
            click.echo(
                f"HZH520: the tick's process ended with {status_text(status)} before the "
                "tick ended; the daemon goes on\nhint: the next tick resumes the turn it was "
                "running (woken_by: recovery); `hz heinzel show NAME` shows where it stopped",
                err=True,
            )
        if stop.wait(interval):
            return


def daemon_tick(home: str | None) -> int:
    """One tick of the resident daemon, in its forked process: the home opened afresh,
    the report printed, the index closed; 0, or 1 when the tick could not run."""
    from ledger.errors import HzError

    app = None
    try:
        app = open_app(home)
        _show_tick(app, app.tick(sleep=time.sleep).run().to_json(), False)
    except HzError as error:
        click.echo(error.render(), err=True)
        return 1
    except Exception as error:  # a bug in hz: one coded line, and the daemon goes on
        message = f"the tick failed unexpectedly: {type(error).__name__}: {error}"
        hint = "a bug in hz: report it with this line; the next tick runs as usual"
        click.echo(f"HZH521: {message[:300]}\nhint: {hint}", err=True)
        return 1
    finally:
        if app is not None:
            app.service.close()
    return 0


def _reported(home: str | None, data: dict[str, Any], as_json: bool) -> None:
    """A verb's answer; a turn it ran that failed or was abandoned exits 1 with its cause
    (a resend that ran nothing exits 0, whatever its first delivery's turn became)."""
    from heinzel.turns.failure import cause_of

    said = str(data.get("delivered") or "")
    if said.startswith("already delivered") and "resumed now" not in said:
        emit(open_app(home).service.in_words(data), as_json, render_verb)
        return
    if data.get("state") in ("failed", "abandoned") or data.get("disposition") in (
        "failed",
        "abandoned",
    ):
        app = open_app(home)
        heinzel_id = app.service.resolve(str(data["name"]))["id"]
        data["cause"] = cause_of(app.service.home.session_dir(heinzel_id), data.get("turn"))
    elif data.get("name"):
        data = open_app(home).service.in_words(data)
    emit(data, as_json, render_verb)
    exit_if_ended_badly(data)


def render_verb(data: dict[str, Any]) -> str:
    """A verb's answer, one ``key: value`` line each (a failed turn's cause goes to stderr,
    coded, not here)."""
    from heinzel.cli.render import questions_lines, reply_lines

    hidden = ("cause", "questions", "reply")
    shown = [
        f"{key}: {value}"
        for key, value in data.items()
        if key not in hidden and value is not None  # never `reason: None`
    ]
    questions = questions_lines(data.get("questions") or [], indent="", own=data.get("turn"))
    return "\n".join([*shown, *reply_lines(data), *questions])


def render_tick(report: dict[str, Any]) -> str:
    """One tick in a few lines: who woke and why, skips, deferrals, notices, errors."""
    lines = [f"tick at {report['at']}: {len(report['woken'])} woken, {report['fetches']} fetched"]
    for woken in report["woken"]:
        who = woken.get("name") or woken["id"]
        what = woken.get("woken_by") or ", ".join(w["cause"] for w in woken.get("wakes", []))
        ends = [_end_text(e) for e in woken.get("ended", [])]
        lines.append(f"  {who}: {what}" + (f" -> {'; '.join(ends)}" if ends else ""))
        for ended in woken.get("ended", []):
            if ended.get("cause"):
                cause = ended["cause"]
                lines.append(f"    {cause['code']}: {cause['message']}")
                if cause.get("hint"):
                    lines.append(f"    hint: {cause['hint']}")
    lines += [f"  {s.get('name') or s['id']}: skipped ({s['reason']})" for s in report["skipped"]]
    lines += [
        f"  {h.get('name') or h['id']}: a turn runs in another process; "
        f"{', '.join(h['causes'])} handed to it (turn.requested, run after it)"
        for h in report.get("handed", [])
    ]
    lines += [
        f"  {b.get('name') or b['id']}: a turn runs in another process; "
        f"{', '.join(b['causes']) or 'its wakes'} wait for the next tick"
        for b in report.get("busy", [])
    ]
    if report["deferred"]:
        lines.append(f"  {len(report['deferred'])} more wait for the next tick")
    lines += [f"  notice: {n}" for n in report["notices"]]
    if report.get("pruned"):
        lines.append(f"  pruned {report['pruned']} expired files (retention_days)")
    for error in report["errors"]:
        who = error.get("name") or error["id"]
        message = f": {error['message']}" if error.get("message") else ""
        lines.append(f"  {who}: {error['code']}{message}")
    if report.get("problems"):
        lines.append(
            f"the tick ran; {report['problems']} of its parts failed (coded on stderr; a "
            "later tick tries again): exit 0 (--strict: exit 1)"
        )
    return "\n".join(lines)


def _end_text(ended: dict[str, Any]) -> str:
    if ended.get("approval") == "rejected":
        return "no turn: the draft was read as rejected (its markers are gone; no lesson)"
    if ended.get("approval"):
        return "no turn: nothing to learn (no approved draft under its key)"
    how = ended.get("disposition") or ended.get("state") or "ended"
    if how == "learned" and ended.get("lessons") == 0:
        return "approval read: nothing to learn (your edits changed no rule it keeps)"
    if how == "learned" and ended.get("lessons"):
        return f"learned {ended['lessons']} lesson(s) from your edits"
    code = (ended.get("cause") or {}).get("code") or ended.get("reason") or ended.get("error")
    return f"{how} ({code})" if code and _badly(ended) else str(how)


@heinzel.command("chat")
@click.argument("name")
@click.argument("text")
@request_id_option("message")
@home_option
@json_option
def chat(name: str, text: str, request_id: str | None, home: str | None, as_json: bool) -> None:
    """Send a message to its session (steers a running turn, else starts one).

    \b
    Example:
      hz heinzel chat weekly-report 'keep it under ten lines'
    """
    _reported(home, _verbs(home).chat(name, text, request_id=request_id), as_json)


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
    _reported(home, _verbs(home).resume(name), as_json)


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
@request_id_option("retry")
@home_option
@json_option
def retry(name: str, hint: str, request_id: str | None, home: str | None, as_json: bool) -> None:
    """Fork the last turn after its gather, with a hint.

    \b
    Example:
      hz heinzel retry weekly-report shorter
    """
    _reported(home, _verbs(home).retry(name, hint, request_id=request_id), as_json)


@hz.command("demo")
@click.option(
    "--home",
    "home",
    type=click.Path(file_okay=False),
    default=None,
    help="An empty folder to play the week in (default: a new temporary folder; "
    "$HZ_HOME is never used).",
)
def demo(home: str | None) -> None:
    """The worked example (Priya's weekly report), offline, narrated, in a fresh home.

    \b
    Example:
      hz demo
      hz demo --home /tmp/priya
    """
    import tempfile

    from heinzel.cli.demo import run_demo

    home = given_home(home)
    where = Path(home).expanduser().resolve() if home else Path(tempfile.mkdtemp(prefix="hz-demo-"))
    run_demo(where, click.echo)
