"""``hz graph``: Heinzelmännchen and artifacts, reads and writes, declared and observed
apart (docs/graph.md); ``--team`` the team graph from the team contracts and ``hz/state``."""

from __future__ import annotations

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
    from heinzel.session.graph import Filters, filter_graph, local_graph, render_text

    app = open_app(home)
    if team:
        from heinzel.team.graph import team_graph

        data = team_graph(app.service)
    else:
        data = local_graph(app.service)
    forms = tuple(artifact_forms(a) or (a,) for a in artifacts)
    filters = Filters(names=names, artifacts=forms, namespace=namespace, depth=depth)
    emit(filter_graph(data, filters), as_json, render_text)
