"""The graph of one home (``hz graph``, docs/graph.md): Heinzelmännchen and artifacts,
joined by reads and writes, each edge *declared* by the approved contract, *observed* in
the action log (`heinzel.session.actions`), or both, kept apart.

Artifacts are named by refs, never by content: a document or file by its asset ref (made
absolute as hz stores it), any other source by ``capability.method?arg=value&...``. Heights
are the declared graph's topological heights (a Heinzelmännchen reading its own output is
no edge for them), and `find_cycle` finds a loop between two or more, which ``hz approve``
refuses (HZC100).
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import field
from itertools import pairwise
from pathlib import Path
from typing import Any

from heinzel.capabilities.documents import absolute_asset
from heinzel.errors import HeinzelError
from heinzel.session.actions import EXPIRED, action_log
from heinzel.session.sessions import Sessions
from heinzel.store.home import Home
from heinzel.store.sources import absolute_args
from ledger.records import frozen_record, mutable_record

__all__ = [
    "READ_VERBS",
    "SCHEMA",
    "WRITE_VERBS",
    "Declared",
    "Filters",
    "GraphBuilder",
    "declared_of",
    "filter_graph",
    "find_cycle",
    "heights",
    "local_graph",
    "source_ref",
]

SCHEMA = 1
"""The JSON schema version of a graph (raised only when a field changes meaning)."""

READ_VERBS = frozenset({"read", "checked", "looked-up"})
"""``report`` entry verbs that observe a read of their target."""
WRITE_VERBS = frozenset({"wrote", "updated", "created", "placed", "posted"})
"""``report`` entry verbs that observe a write of their target."""


def _arg(value: Any) -> str:
    if isinstance(value, list):
        return ",".join(_arg(v) for v in value)
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def source_ref(capability: str, method: str, args: Mapping[str, Any]) -> str:
    """The artifact an input reads: a document's or file's asset ref, else the source in
    one canonical form (``tracker.issues_updated?project=CHK``)."""
    if (capability, method) == ("documents", "read") and isinstance(args.get("doc"), str):
        return str(args["doc"])
    if (capability, method) == ("files", "read") and args.get("path"):
        return "file:" + str(args["path"])
    query = "&".join(f"{k}={_arg(v)}" for k, v in sorted(args.items()))
    return f"{capability}.{method}" + (f"?{query}" if query else "")


@frozen_record
class Declared:
    """What one contract version declares: its inputs' and outputs' artifacts."""

    version: int
    inputs: dict[str, str]
    outputs: dict[str, str]
    aliases: tuple[str, ...] = ()


def declared_hz(hz: Mapping[str, Any], base: Path | None, version: int) -> Declared:
    """The artifacts of a compiled ``hz`` frontmatter; ``base`` None keeps refs as written
    (the team graph), else file refs are made absolute against it as the index does."""
    inputs: dict[str, str] = {}
    for name, spec in (hz.get("inputs") or {}).items():
        capability, _, method = str(spec["from"]).partition(".")
        args = dict(spec.get("args") or {})
        if base is not None:
            args = absolute_args(capability, method, args, base)
        inputs[str(name)] = source_ref(capability, method, args)
    outputs = {
        str(name): str(spec["asset"]) if base is None else absolute_asset(str(spec["asset"]), base)
        for name, spec in (hz.get("outputs") or {}).items()
    }
    return Declared(version, inputs, outputs, tuple(hz.get("alias") or ()))


def compiled_hz(home: Home, heinzel_id: str, version: int) -> dict[str, Any]:
    """The ``hz`` frontmatter of a stored contract version's compiled form."""
    path = home.contract_json_path(heinzel_id, version)
    data = json.loads(path.read_text(encoding="utf-8"))
    hz: dict[str, Any] = data["compiled"]["frontmatter"]["hz"]
    return hz


def _origin(db: Any, heinzel_id: str) -> Path:
    row = db.execute("SELECT origin FROM tick_origins WHERE heinzel = ?", [heinzel_id]).fetchone()
    return Path(row[0]) if row and row[0] else Path.cwd()


def declared_of(home: Home, db: Any, heinzel_id: str, version: int) -> Declared:
    """What version ``version`` of ``heinzel_id`` declares, refs absolute as stored."""
    return declared_hz(compiled_hz(home, heinzel_id, version), _origin(db, heinzel_id), version)


def heights(feeds: Mapping[str, Iterable[str]], nodes: Iterable[str]) -> dict[str, int]:
    """Topological height: 0 for a node nothing feeds, else one more than its highest
    feeder (``feeds[node]``: the nodes it reads from; cycles are cut, self-loops ignored)."""
    memo: dict[str, int] = {}

    def height(node: str, path: frozenset[str]) -> int:
        if node not in memo:
            ups = [u for u in feeds.get(node, ()) if u != node and u not in path]
            memo[node] = 1 + max((height(u, path | {node}) for u in ups), default=-1)
        return memo[node]

    return {n: height(n, frozenset()) for n in sorted(set(nodes))}


def find_cycle(feeds: Mapping[str, Iterable[str]], start: str) -> list[str] | None:
    """A loop through ``start`` between two or more nodes, or None: the path
    ``[start, n1, ..., start]`` in the direction data flows (``n1`` reads what ``start``
    writes, and so on back to ``start``)."""
    parent: dict[str, str] = {}
    queue = deque([start])
    seen = {start}
    while queue:
        node = queue.popleft()
        for up in sorted(set(feeds.get(node, ()))):
            if up == node:
                continue
            if up == start:
                path = [node]
                while path[-1] != start:
                    path.append(parent[path[-1]])
                return [start, *path]
            if up not in seen:
                seen.add(up)
                parent[up] = node
                queue.append(up)
    return None


def feeds_of(declared: Mapping[str, Declared]) -> dict[str, set[str]]:
    """For each Heinzelmännchen, the others whose declared outputs it reads."""
    writers: dict[str, set[str]] = {}
    for heinzel, d in declared.items():
        for asset in d.outputs.values():
            writers.setdefault(asset, set()).add(heinzel)
    return {
        heinzel: {w for asset in d.inputs.values() for w in writers.get(asset, ()) if w != heinzel}
        for heinzel, d in declared.items()
    }


# -- building ----------------------------------------------------------------------


@mutable_record
class _Edge:
    source: str
    target: str
    kind: str
    declared: dict[str, Any] | None = None
    turns: set[str] = field(default_factory=set)
    first: str | None = None
    last: str | None = None

    def observe(self, turn: str, at: str) -> None:
        self.turns.add(turn)
        self.first = min(self.first or at, at)
        self.last = max(self.last or at, at)

    def to_json(self) -> dict[str, Any]:
        observed = (
            {"turns": len(self.turns), "first": self.first, "last": self.last}
            if self.turns
            else None
        )
        both = self.declared is not None and observed is not None
        mark = "both" if both else ("declared" if self.declared is not None else "observed")
        return {
            "from": self.source,
            "to": self.target,
            "kind": self.kind,
            "mark": mark,
            "declared": self.declared,
            "observed": observed,
        }


class GraphBuilder:
    """Nodes and edges gathered, then the graph in its JSON schema."""

    def __init__(self) -> None:
        self.nodes: dict[str, dict[str, Any]] = {}
        self.edges: dict[tuple[str, str, str], _Edge] = {}

    def artifact(self, ref: str) -> str:
        self.nodes.setdefault(ref, {"id": ref, "kind": "artifact", "name": ref})
        return ref

    def edge(self, heinzel: str, ref: str, kind: str) -> _Edge:
        self.artifact(ref)
        source, target = (ref, heinzel) if kind == "reads" else (heinzel, ref)
        return self.edges.setdefault((source, target, kind), _Edge(source, target, kind))

    def graph(self, scope: str) -> dict[str, Any]:
        def order(node: dict[str, Any]) -> tuple[Any, ...]:
            first = 0 if node["kind"] == "heinzel" else 1
            return (first, node.get("height") or 0, str(node.get("name") or ""), node["id"])

        return {
            "schema": SCHEMA,
            "scope": scope,
            "nodes": sorted(self.nodes.values(), key=order),
            "edges": [e.to_json() for _, e in sorted(self.edges.items())],
        }


def _observe(
    builder: GraphBuilder,
    sessions: Sessions,
    heinzel_id: str,
    versions: dict[int, Declared],
) -> None:
    """The edges the action log shows: inputs read, drafts and effects written, the
    ``report`` tool's entries."""
    db = sessions.index.db
    log = action_log(sessions, heinzel_id)
    for turn in log["turns"]:
        version = turn.get("version")
        declared = None
        if isinstance(version, int):
            if version not in versions:
                try:
                    versions[version] = declared_of(sessions.home, db, heinzel_id, version)
                except (OSError, ValueError, KeyError):
                    versions[version] = Declared(version, {}, {})
            declared = versions[version]
        at, name = str(turn["at"]), str(turn["turn"])
        if turn["read"] != EXPIRED and declared is not None:
            for item in turn["read"]:
                ref = declared.inputs.get(str(item.get("name")))
                if ref is not None:  # hz's own inputs (a learning turn's draft) are no edge
                    builder.edge(heinzel_id, ref, "reads").observe(name, at)
        for wrote in turn["wrote"]:
            if wrote.get("asset"):
                builder.edge(heinzel_id, str(wrote["asset"]), "writes").observe(name, at)
        if turn["entries"] != EXPIRED:
            known = {
                **(declared.inputs if declared else {}),
                **(declared.outputs if declared else {}),
            }
            for entry in turn["entries"]:
                verb, target = str(entry.get("verb")), str(entry.get("target") or "")
                kind = "reads" if verb in READ_VERBS else "writes" if verb in WRITE_VERBS else None
                ref = known.get(target) or (target if _is_ref(target) else None)
                if kind and ref:
                    builder.edge(heinzel_id, ref, kind).observe(name, at)


def _is_ref(target: str) -> bool:
    """Whether a ``report`` entry's target is an artifact ref (``doc:...``, ``file:...``,
    ``tracker.issues_updated?...``) rather than words; words name no edge."""
    scheme, colon, rest = target.partition(":")
    ref_like = bool(colon and rest and scheme.isascii() and scheme.replace("-", "").isalnum())
    return (ref_like or "?" in target) and " " not in target


def local_graph(sessions: Sessions, *, observed: bool = True) -> dict[str, Any]:
    """The whole graph of this home (every Heinzelmännchen with an approved contract,
    retired ones left out), in the JSON schema of docs/graph.md."""
    db = sessions.index.db
    rows = [
        dict(zip([d[0] for d in cursor.description], r, strict=True))
        for cursor in [
            db.execute(
                "SELECT id, name, namespace, state, hold, contract_version FROM heinzel "
                "WHERE contract_version IS NOT NULL ORDER BY name, id"
            )
        ]
        for r in cursor.fetchall()
    ]
    rows = [r for r in rows if r["hold"] != "retired" and r["state"] != "retired"]
    builder = GraphBuilder()
    declared: dict[str, Declared] = {}
    for row in rows:
        version = int(row["contract_version"])
        try:
            declared[row["id"]] = declared_of(sessions.home, db, row["id"], version)
        except (OSError, ValueError, KeyError):
            declared[row["id"]] = Declared(version, {}, {})
    height = heights(feeds_of(declared), declared)
    for row in rows:
        d = declared[row["id"]]
        builder.nodes[row["id"]] = {
            "id": row["id"],
            "kind": "heinzel",
            "name": row["name"],
            "aliases": list(d.aliases),
            "namespace": row["namespace"],
            "state": row["state"],
            "version": d.version,
            "height": height.get(row["id"], 0),
        }
        for name, ref in d.inputs.items():
            builder.edge(row["id"], ref, "reads").declared = {"input": name, "version": d.version}
        for name, ref in d.outputs.items():
            edge = builder.edge(row["id"], ref, "writes")
            edge.declared = {"output": name, "version": d.version}
        if observed:
            _observe(builder, sessions, row["id"], {d.version: d})
    return builder.graph("local")


# -- filters -----------------------------------------------------------------------


@frozen_record
class Filters:
    """``hz graph``'s filters (docs/graph.md, "Commands")."""

    names: tuple[str, ...] = ()
    artifacts: tuple[tuple[str, ...], ...] = ()
    """Each ``--artifact`` as the forms it may take (any matches)."""
    namespace: str | None = None
    depth: int | None = None


def _starts(graph: Mapping[str, Any], filters: Filters) -> set[str]:
    starts: set[str] = set()
    heinzels = [n for n in graph["nodes"] if n["kind"] == "heinzel"]
    for name in filters.names:
        found = [
            n["id"]
            for n in heinzels
            if name in (n["id"], n.get("name"), *n.get("aliases", ()))
            or name == f"{n.get('namespace')}/{n.get('name')}"
        ]
        if not found:
            known = ", ".join(sorted({str(n.get("name")) for n in heinzels})) or "none"
            raise HeinzelError(
                "HZH381",
                f"no Heinzelmännchen named {name!r} in the graph",
                f"a name, alias or id of one with an approved contract (known: {known[:300]})",
            )
        starts.update(found)
    artifacts = {n["id"] for n in graph["nodes"] if n["kind"] == "artifact"}
    for forms in filters.artifacts:
        hits = artifacts.intersection(forms)
        if not hits:
            raise HeinzelError(
                "HZH382",
                f"no artifact {forms[0]!r} in the graph",
                "`hz graph` lists every artifact; a file may be named by any path to it",
            )
        starts.update(hits)
    return starts


def filter_graph(graph: dict[str, Any], filters: Filters) -> dict[str, Any]:
    """The part of ``graph`` the filters keep: one namespace's Heinzelmännchen and their
    artifacts; then what is at most ``depth`` edges from a named start (every edge taken
    either way), or the whole connected part of the starts."""
    if filters.depth is not None and not (filters.names or filters.artifacts):
        raise HeinzelError(
            "HZH380",
            "--depth counts edges from a start, and none is given",
            "add --name NAME or --artifact REF",
        )
    if filters.depth is not None and filters.depth < 0:
        raise HeinzelError("HZH380", "--depth is 0 or more", "--depth 1: a node and its edges")
    nodes = {n["id"]: n for n in graph["nodes"]}
    edges = list(graph["edges"])
    if filters.namespace is not None:
        kept = {i for i, n in nodes.items() if n["kind"] == "heinzel"}
        kept = {i for i in kept if nodes[i].get("namespace") == filters.namespace}
        edges = [e for e in edges if e["from"] in kept or e["to"] in kept]
        touched = {e["from"] for e in edges} | {e["to"] for e in edges}
        nodes = {i: n for i, n in nodes.items() if i in kept or i in touched}
    starts = _starts({"nodes": list(nodes.values())}, filters)
    if starts or filters.names or filters.artifacts:
        near: dict[str, set[str]] = {}
        for e in edges:
            near.setdefault(e["from"], set()).add(e["to"])
            near.setdefault(e["to"], set()).add(e["from"])
        reached = dict.fromkeys(starts, 0)
        queue = deque(sorted(starts))
        while queue:
            node = queue.popleft()
            if filters.depth is not None and reached[node] >= filters.depth:
                continue
            for other in sorted(near.get(node, ())):
                if other not in reached:
                    reached[other] = reached[node] + 1
                    queue.append(other)
        nodes = {i: n for i, n in nodes.items() if i in reached}
        edges = [e for e in edges if e["from"] in nodes and e["to"] in nodes]
    order = [n for n in graph["nodes"] if n["id"] in nodes]
    return {**graph, "nodes": order, "edges": edges}


def _indexed(db: Any, leaving_out: str) -> dict[str, Declared]:
    """The approved contracts' reads and writes as the index holds them (``tick_inputs``,
    ``tick_outputs``: refs absolute), retired and held ones left out."""
    found: dict[str, Declared] = {}
    live = (
        "SELECT id FROM heinzel WHERE contract_version IS NOT NULL "
        "AND COALESCE(hold, '') != 'retired' AND id != ?"
    )
    for hid, name, capability, method, args in db.execute(
        f"SELECT heinzel, input, capability, method, args FROM tick_inputs "  # noqa: S608
        f"WHERE heinzel IN ({live})",
        [leaving_out],
    ).fetchall():
        mine = found.setdefault(hid, Declared(0, {}, {}))
        mine.inputs[name] = source_ref(capability, method, json.loads(args))
    for hid, name, asset in db.execute(
        f"SELECT heinzel, output, asset FROM tick_outputs WHERE heinzel IN ({live})",  # noqa: S608
        [leaving_out],
    ).fetchall():
        found.setdefault(hid, Declared(0, {}, {})).outputs[name] = str(asset)
    return found


def refuse_cycle(sessions: Sessions, heinzel_id: str, version: int) -> None:
    """``hz approve``'s check (HZC100): version ``version`` of ``heinzel_id`` may not
    close a loop in the declared graph with the approved contracts of the others."""
    from heinzel.errors import ContractError

    db = sessions.index.db
    names = {str(i): str(n) for i, n in db.execute("SELECT id, name FROM heinzel").fetchall()}
    declared = _indexed(db, heinzel_id)  # the others, from the index: no file read
    declared[heinzel_id] = declared_of(sessions.home, db, heinzel_id, version)
    upstream = find_cycle(feeds_of(declared), heinzel_id)
    if upstream is None:
        return
    flow = upstream  # writer first: each writes what the next reads
    parts = [names.get(flow[0], flow[0])]
    for writer, reader in pairwise(flow):
        shared = sorted(
            set(declared[writer].outputs.values()) & set(declared[reader].inputs.values())
        )
        parts += [shared[0] if shared else "?", names.get(reader, reader)]
    cycle = " -> ".join(parts)
    raise ContractError(
        "HZC100",
        f"this version closes a cycle in the graph: {cycle}",
        "one of them must stop reading what the other writes; amend the contract and "
        "approve again (`hz graph` shows who reads what)",
        file=f"{names.get(heinzel_id, heinzel_id)}@v{version}",
    )
