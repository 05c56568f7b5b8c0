"""The team graph (``hz graph --team``, docs/graph.md): built only from what every
member's machine has alike, so two members' homes sharing one team repository print the
same graph.

- The team contracts (``hz.namespace: team``), which every member creates from the same
  reviewed file: inputs and outputs as written there (never made absolute against one
  machine's folder), each Heinzelmännchen named by its team id.
- The receipts on the fetched ``hz/state`` that the lint admits (`sort_records`):
  ``turn.finished`` with input fingerprints observes the reads, ``draft.placed`` the
  writes, ``approval.observed`` the approvals and the last approved ``output_fp``.

No content and nothing local (no state, no path, no local id): an artifact is a ref, shown
by name whether or not this machine can read it. No network: the ``hz/state`` last fetched.
"""

from __future__ import annotations

from typing import Any

from heinzel.errors import HeinzelError
from heinzel.session.graph import (
    Declared,
    GraphBuilder,
    compiled_hz,
    declared_hz,
    feeds_of,
    heights,
)
from heinzel.session.sessions import Sessions
from heinzel.team.lease import Lease
from heinzel.team.placement import lease_grants
from heinzel.team.receipts import sort_records
from heinzel.team.team import Team

__all__ = ["team_graph"]


def _receipts(team: Team) -> list[dict[str, Any]]:
    """Every receipt on the fetched ``hz/state`` the lint admits, in branch order."""
    git = team.git
    if not (git.mirror / "HEAD").exists():
        return []
    tip = git.state_tip()
    if tip is None:
        return []
    texts = git.read_many(tip, None)
    lines = [
        (f"{path}:{n}", line)
        for path, text in sorted(texts.items())
        for n, line in enumerate(text.splitlines(), start=1)
    ]
    leases = {tid: Lease.from_message(m) for tid, (_, m) in git.leases().items()}
    seen = team.leases_seen(leases)
    soft = {tid for tid in seen if leases.get(tid) is None}
    admitted, _ = sort_records(
        lines, team.roster(), seen, lease_grants(leases), climb=soft, unsigned=team.unsigned()
    )
    return admitted


def team_graph(sessions: Sessions) -> dict[str, Any]:
    """The team graph of this home's team repository (HZH383 without ``[team]``)."""
    team = Team.configured(sessions)
    if team is None:
        raise HeinzelError(
            "HZH383",
            "this home has no team repository, so there is no team graph",
            "set [team] repository and handle (docs/team.md), or run `hz graph` alone",
        )
    db = sessions.index.db
    declared: dict[str, Declared] = {}
    names: dict[str, str] = {}
    for member in team.local_members().values():
        row = db.execute(
            "SELECT contract_version FROM heinzel WHERE id = ?", [member.local]
        ).fetchone()
        version = int(row[0])
        hz = compiled_hz(sessions.home, member.local, version)
        declared[member.team] = declared_hz(hz, None, version)
        names[member.team] = member.name
    builder = GraphBuilder()
    height = heights(feeds_of(declared), declared)
    for tid, d in declared.items():
        builder.nodes[tid] = {
            "id": tid,
            "kind": "heinzel",
            "name": names[tid],
            "aliases": list(d.aliases),
            "namespace": "team",
            "version": d.version,
            "height": height.get(tid, 0),
        }
        for name, ref in d.inputs.items():
            builder.edge(tid, ref, "reads").declared = {"input": name, "version": d.version}
        for name, ref in d.outputs.items():
            builder.edge(tid, ref, "writes").declared = {"output": name, "version": d.version}
    for record in _receipts(team):
        tid, kind, at = str(record.get("team")), record.get("kind"), str(record.get("at"))
        node = builder.nodes.get(tid)
        if node is None:  # receipts of a team Heinzelmännchen whose contract is not here
            node = builder.nodes[tid] = {
                "id": tid,
                "kind": "heinzel",
                "name": None,
                "aliases": [],
                "namespace": "team",
                "version": None,
                "height": 0,
            }
        mine = declared.get(tid)
        receipt = str(record.get("id"))
        if kind == "turn.finished":
            node["ran_by"] = sorted({*node.get("ran_by", []), str(record.get("by"))})
            if mine is not None and record.get("input_fps"):
                for ref in mine.inputs.values():
                    builder.edge(tid, ref, "reads").observe(receipt, at)
        elif kind == "draft.placed" and mine is not None:
            for ref in mine.outputs.values():
                builder.edge(tid, ref, "writes").observe(receipt, at)
        elif kind == "approval.observed" and record.get("output_fp"):
            node["approved"] = int(node.get("approved", 0)) + 1
            node["output_fp"] = record.get("output_fp")
    return builder.graph("team")
