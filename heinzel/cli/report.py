"""``hz heinzel report NAME``: the action log, per turn what it read, wrote and decided
(`heinzel.session.actions`)."""

from __future__ import annotations

from typing import Any

import click

from heinzel.cli.base import emit, home_option, json_option, open_app
from heinzel.cli.commands import heinzel
from heinzel.strings.usd import usd_text

EXPIRED = "expired"
"""`heinzel.session.actions.EXPIRED` (not imported here: ``hz --help`` stays light)."""


def _short(value: Any) -> str:
    text = str(value or "")
    return text.split(":", 1)[-1][:12] if text else "-"


def render_log(log: dict[str, Any]) -> str:
    """The action log as lines a person reads, one block per turn."""
    lines = [f"{log['name']}: {len(log['turns'])} turns"]
    for t in log["turns"]:
        d = t["decided"]
        ended = d.get("disposition") or d["state"]
        reason = f" ({d['reason']})" if d.get("reason") else ""
        lines.append(f"\n{t['turn']}  {t['at']}  cause {t['cause']}  v{t['version']}")
        if t.get("seqs"):
            first, last = t["seqs"]
            lines.append(f"  lines: seq {first} to {last}")
        if t["read"] == EXPIRED:
            lines.append("  read: expired")
        else:
            read = ", ".join(f"{i['name']} {_short(i['fingerprint'])}" for i in t["read"])
            lines.append(f"  read: {read or 'nothing'}")
        for w in t["wrote"]:
            lines.append(f"  wrote: {w['what']} {w['asset'] or w['key']} {_short(w['hash'])}")
        if t["entries"] == EXPIRED:
            lines.append("  log: expired")
        else:
            for e in t["entries"]:
                lines.append(f"  log: {e['verb']} {e['target']}: {e['description']}")
        lines.append(f"  decided: {ended}{reason}, {usd_text(d['usd'])} USD")
        if d.get("report"):
            lines.append(f"  report: {d['report']}")
    return "\n".join(lines)


@heinzel.command("report")
@click.argument("name")
@home_option
@json_option
def report(name: str, home: str | None, as_json: bool) -> None:
    """Its action log: per turn, what it read, what it wrote, what it decided.

    \b
    Example:
      hz heinzel report weekly-report --json
    """
    from heinzel.session.actions import action_log

    emit(action_log(open_app(home).service, name), as_json, render_log)
