"""``hz heinzel migrate PATH... [--dry-run]``: today's contracts become Heinzelmännchen at
v1, asleep (`heinzel.service.migrate`)."""

from __future__ import annotations

from typing import Any

import click

from heinzel.cli.base import emit, home_option, json_option, open_app
from heinzel.cli.commands import heinzel


@heinzel.command("migrate")
@click.argument("paths", nargs=-1, required=True)
@click.option("--dry-run", is_flag=True, help="Say what it would do; write nothing.")
@home_option
@json_option
def migrate(paths: tuple[str, ...], dry_run: bool, home: str | None, as_json: bool) -> None:
    """Make every .prose.md under PATH... a Heinzelmännchen at v1, asleep (approved, as it
    was in use); a file that does not compile is listed with its code and skipped (exit 1);
    one already migrated is left as it is, so running it twice changes nothing.

    \b
    Example:
      hz heinzel migrate ~/contracts --dry-run
      hz heinzel migrate ~/contracts
    """
    from heinzel.service.migrate import migrate as run

    done = run(open_app(home).service, list(paths), dry_run=dry_run)
    emit(done, as_json, _render)
    if done["skipped"]:
        raise SystemExit(1)


def _render(done: dict[str, Any]) -> str:
    lines = []
    for one in done["files"]:
        result, name = one["result"], one.get("name")
        if result == "migrated":
            lines.append(f"migrated  {name}: v1, {one['state']} ({one['file']})")
        elif result == "would":
            lines.append(f"would migrate {name}: v1, asleep ({one['file']})")
        elif result == "already":
            lines.append(f"already   {name}: {one['state']}, left as it is ({one['file']})")
        else:
            lines.append(f"skipped   {one['file']}: {one['code']}: {one['message']}")
    counts = ", ".join(
        f"{done[r]} {r if r != 'would' else 'would be migrated'}"
        for r in ("migrated", "would", "already", "skipped")
        if done[r]
    )
    lines.append(counts + (" (dry run: nothing written)" if done["dry_run"] else ""))
    if done["skipped"]:
        lines.append("fix the skipped files, then run migrate again: the others stay migrated")
    return "\n".join(lines)
