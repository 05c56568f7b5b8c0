"""``hz graph``: Heinzelmännchen and artifacts, reads and writes, declared and observed
apart (docs/graph.md); ``--team`` the team graph from the team contracts and ``hz/state``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import click

from heinzel.cli.base import emit, home_option, hz, json_option, open_app
from heinzel.cli.forms import artifact_forms


@hz.command("graph")
@click.option("--name", "names", multiple=True, help="Start from this one (name, alias or id).")
@click.option("--artifact", "artifacts", multiple=True, help="Start from this artifact.")
@click.option(
    "--namespace", type=click.Choice(["me", "team"]), default=None, help="Only this namespace."
)
@click.option("--depth", type=int, default=None, help="At most N edges from a start.")
@click.option("--team", "team", is_flag=True, help="The team graph (team contracts, hz/state).")
@home_option
@json_option
def graph(  # noqa: PLR0917  (click passes the options by position)
    names: tuple[str, ...],
    artifacts: tuple[str, ...],
    namespace: str | None,
    depth: int | None,
    team: bool,
    home: str | None,
    as_json: bool,
) -> None:
    """Who reads what and who writes what: each edge declared, observed or both.

    \b
    Example:
      hz graph
      hz graph --name weekly-report --depth 1 --json
      hz graph --artifact weekly-report.md
      hz graph --team
    """
    from heinzel.session.graph import Filters, filter_graph, local_graph

    app = open_app(home)
    if team:
        from heinzel.team.graph import team_graph

        data = team_graph(app.service)
    else:
        data = local_graph(app.service)
    forms = tuple(artifact_forms(a) or (a,) for a in artifacts)
    filters = Filters(names=names, artifacts=forms, namespace=namespace, depth=depth)
    emit(filter_graph(data, filters), as_json, render_text)


def render_text(graph: Mapping[str, Any]) -> str:
    """The graph as lines a person reads: one block per Heinzelmännchen in height order,
    each edge with its input or output, its artifact, its mark and its turns."""
    nodes = {n["id"]: n for n in graph["nodes"]}
    heinzels = [n for n in graph["nodes"] if n["kind"] == "heinzel"]
    if not heinzels:
        return "no Heinzelmännchen in the graph"
    lines: list[str] = []
    for node in heinzels:
        aka = f" aka {', '.join(node['aliases'])}" if node.get("aliases") else ""
        facts = [node.get("namespace"), f"v{node.get('version')}", node.get("state")]
        if graph.get("scope") == "team" and node.get("ran_by"):
            facts.append("ran by " + ",".join(node["ran_by"]))
        facts.append(f"height {node.get('height', 0)}")
        name = node.get("name") or node["id"]
        lines.append(f"{name}{aka} ({', '.join(str(f) for f in facts if f)})")
        mine: list[tuple[str, str, str, str, str]] = []
        for e in graph["edges"]:
            if node["id"] not in (e["from"], e["to"]):
                continue
            ref = e["from"] if e["kind"] == "reads" else e["to"]
            label = (e.get("declared") or {}).get("input") or (e.get("declared") or {}).get(
                "output"
            )
            turns = (e.get("observed") or {}).get("turns")
            seen = f"{turns} turn{'s' if turns != 1 else ''}" if turns else ""
            mine.append((e["kind"], str(label or "-"), str(nodes[ref]["name"]), e["mark"], seen))
        widths = [max((len(m[i]) for m in mine), default=0) for i in range(4)]
        for m in sorted(mine, key=lambda m: (m[0], m[1], m[2])):
            cells = [m[i].ljust(widths[i]) for i in range(4)] + [m[4]]
            lines.append("  " + "  ".join(cells).rstrip())
    shared = _shared(graph)
    if shared:
        lines.append("")
        lines += [f"{ref}: written by {w}, read by {r}" for ref, w, r in shared]
    return "\n".join(lines)


def _shared(graph: Mapping[str, Any]) -> Sequence[tuple[str, str, str]]:
    """Artifacts one Heinzelmännchen writes and another reads: the graph's joints."""
    names = {n["id"]: str(n.get("name") or n["id"]) for n in graph["nodes"]}
    writers: dict[str, set[str]] = {}
    readers: dict[str, set[str]] = {}
    for e in graph["edges"]:
        if e["kind"] == "writes":
            writers.setdefault(e["to"], set()).add(names[e["from"]])
        else:
            readers.setdefault(e["from"], set()).add(names[e["to"]])
    return [
        (ref, ", ".join(sorted(writers[ref])), ", ".join(sorted(readers[ref])))
        for ref in sorted(writers)
        if readers.get(ref, set()) - writers[ref]
    ]
