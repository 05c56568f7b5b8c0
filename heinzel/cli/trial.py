"""``hz heinzel try``: the last turns thought again under a proposed contract, model or
lesson set, side by side with what was placed (`heinzel.turns.trial`, docs/try.md)."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import click

from heinzel.cli.base import emit, home_option, json_option, open_app
from heinzel.cli.commands import heinzel
from heinzel.strings.usd import usd_text


@heinzel.command("try")
@click.argument("name")
@click.option(
    "--version",
    "version",
    type=click.IntRange(min=1),
    default=None,
    help="The contract version to try (default: the pending amendment, else the approved one).",
)
@click.option(
    "--model", "model", default=None, help="The model to try instead of the configured one."
)
@click.option(
    "--without-lesson",
    "without_lesson",
    default=None,
    metavar="SEQ",
    help="Try without this lesson (its number in `hz heinzel lessons`).",
)
@click.option(
    "--turns",
    "turns",
    type=click.IntRange(min=1),
    default=5,
    show_default=True,
    help="How many of the last turns to try.",
)
@click.option(
    "--max-usd",
    "max_usd",
    type=click.FloatRange(min=0),
    default=None,
    help="What the trial may spend (default: the per-turn cap for each turn tried).",
)
@click.option(
    "--live",
    "live",
    is_flag=True,
    default=False,
    help="Fetch every search the tried think makes now (default: from the record or the "
    "source cache, else unavailable).",
)
@home_option
@json_option
def try_(  # noqa: PLR0917  (click passes the options by position)
    name: str,
    version: int | None,
    model: str | None,
    without_lesson: str | None,
    turns: int,
    max_usd: float | None,
    live: bool,
    home: str | None,
    as_json: bool,
) -> None:
    """Try a change on the last turns: think them again from their recorded inputs under
    the proposed contract version, model or lessons; places nothing, starts no turn. Its
    model requests are real, capped and recorded as `usage {kind: trial}`.

    \b
    Example:
      hz heinzel try weekly-report
      hz heinzel try weekly-report --model offline --turns 3 --max-usd 0.20
    """
    from heinzel.turns.host import TurnHost
    from heinzel.turns.trial import run_trial

    app = open_app(home)
    report = run_trial(
        app.service,
        TurnHost(app.service),
        name,
        adapters=app.adapters,
        version=version,
        model=model,
        without_lesson=without_lesson,
        turns=turns,
        max_usd=None if max_usd is None else Decimal(str(max_usd)),
        live=live,
    )
    emit(report, as_json, render_trial)


def render_trial(data: dict[str, Any]) -> str:
    """Each turn's placed and tried drafts side by side (a unified diff), the proposed
    version's checks on both, the cost of each, and a one-line summary."""
    lines = [
        f"{data['name']}: trying v{data['version']} with {data['model']}"
        + (f" without lesson {data['without_lesson']}" if data.get("without_lesson") else "")
    ]
    for turn in data["turns"]:
        lines.append("")
        lines.append(f"turn {turn['turn']} ({turn['at'][:16]}, {turn['cause']}): {turn['verdict']}")
        lines.append(
            f"  cost: placed {usd_text(turn['placed_usd'])} USD, "
            f"tried {usd_text(turn['tried_usd'])} USD"
        )
        if turn.get("error"):
            lines.append(f"  not tried to the end: {turn['error']}")
        tried = {c["item"]: c for c in turn.get("tried_checks") or []}
        if turn["placed_checks"]:
            lines.append("  done-when (placed | tried):")
        for check in turn["placed_checks"]:
            other = tried.get(check["item"])
            lines.append(f"    {_mark(check)} | {_mark(other)}  {check['item']}")
        if turn.get("placed") is None:
            lines.append(f"  placed: nothing ({turn.get('placed_disposition')})")
        for said in turn.get("would") or []:
            lines.append(f"  would: {said}")
        for call in turn.get("tools") or []:
            lines.append(
                f"  tool: {call['tool']}({call['method']}, {call['window']}): "
                + _ANSWERED.get(call["answered"], call["answered"])
            )
        if turn.get("diff"):
            lines += ["  " + line for line in turn["diff"].splitlines()]
        elif turn.get("tried") is not None:
            lines.append("  the tried draft is the placed one")
    for gone in data["expired"]:
        when = f" (expired {gone['expired'][:10]})" if gone.get("expired") else ""
        lines.append(
            f"\nturn {gone['turn']} ({gone['at'][:16]}): not replayable{when}: {gone['why']}"
        )
    lines += ["", data["summary"]]
    return "\n".join(lines)


_ANSWERED = {
    "record": "answered from the record",
    "cache": "answered from the source cache",
    "live": "fetched live",
    "unavailable": "unavailable (not in the record or the cache)",
}


def _mark(check: dict[str, Any] | None) -> str:
    if check is None or check.get("met") is None:
        return "  -  "
    return " met " if check["met"] else "unmet"
