"""``hz team lint|status``: the team repository's ``hz/state`` branch and leases."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from heinzel.cli.base import emit, home_option, hz, json_option, open_app
from heinzel.errors import HeinzelError

if TYPE_CHECKING:
    from heinzel.team import Team


@hz.group("team")
def team() -> None:
    """The team repository: receipts on hz/state, leases (docs/team.md)."""


def _team(home: str | None) -> Team:
    found = open_app(home).team()
    if found is None:
        raise HeinzelError(
            "HZH300",
            "no team repository is configured",
            "set [team] repository and [team] handle in your config.toml (docs/team.md)",
        )
    return found


@team.command("lint")
@home_option
@json_option
def lint(home: str | None, as_json: bool) -> None:
    """Fetch hz/state and lint every receipt on it (exit 1 on a problem).

    \b
    Example:
      hz team lint
    """
    problems = _team(home).lint()
    emit({"problems": problems, "ok": not problems}, as_json, _render_lint)
    if problems:
        raise SystemExit(1)


@team.command("status")
@home_option
@json_option
def status(home: str | None, as_json: bool) -> None:
    """The remote, the outbox and the leases (as last fetched).

    \b
    Example:
      hz team status
    """
    emit(_team(home).status(), as_json, _render_status)


def _render_lint(data: dict[str, Any]) -> str:
    if data["ok"]:
        return "hz/state: every receipt passes the lint"
    return "\n".join(["hz/state: the lint refuses:", *(f"  {p}" for p in data["problems"])])


def _render_status(data: dict[str, Any]) -> str:
    lines = [
        f"team repository {data['repository']} as {data['handle']} on {data['machine']}",
        f"  outbox: {data['outbox']} waiting, {data['refused']} refused",
    ]
    for lease in data["leases"]:
        mine = " (mine)" if lease["mine"] else ""
        on = f" on {lease['machine']}" if lease["machine"] else ""
        name = lease["name"] or lease["team"]
        state = "" if lease["state"] == "held" else f" [{lease['state']}]"
        lines.append(
            f"  lease {name}: {lease['holder']}{on}{mine}, token {lease['token']}, "
            f"until {lease['expiry']}{state}"
        )
        if lease["open"]:
            lines.append(f"    open claims: {', '.join(lease['open'])}")
        if lease["cause"]:
            lines += [f"    why: {lease['cause']}", f"    next: {lease['next']}"]
    for refusal in data["refusals"]:
        lines.append(f"  refused {refusal['file']}: {refusal['reason']}")
    if data["quarantined"]:
        lines.append(f"  hz/state: {len(data['quarantined'])} line(s) quarantined (not counted):")
        lines += [
            f"    {q['where']}: {q['problem']} (by {q['by']!r}, {q['kind']} {q['key']})"
            for q in data["quarantined"]
        ]
    return "\n".join(lines)
