"""The graph as a picture (docs/graph.md), an SVG drawn here on the server: no script, no
CDN, no Graphviz. Layers left to right: a Heinzelmännchen at ``2 x height + 1``; an
artifact one layer after its highest writer, or one before its lowest reader when nothing
writes it. Edges: solid when declared and observed, dashed when only declared, dotted
when only observed. Every text is escaped; the boxes are as wide as the longest name, so
no label is cut (the page scrolls the picture inside its card, never the page).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from xml.sax.saxutils import escape, quoteattr

__all__ = ["render_svg"]

WIDTH, HEIGHT = 220, 34
"""A node's box."""
LAYER, ROW, MARGIN = 270, 56, 16
"""A layer's width, a row's height, the picture's margin."""
DASH = {"both": "", "declared": "6 4", "observed": "2 3"}
CHAR, PAD = 8.2, 10
"""The widest a character of a label draws (13 px, bold), and a label's padding."""


def _layers(graph: Mapping[str, Any]) -> dict[str, int]:
    nodes = {n["id"]: n for n in graph["nodes"]}
    layer = {
        i: 2 * int(n.get("height") or 0) + 1 for i, n in nodes.items() if n["kind"] == "heinzel"
    }
    writers: dict[str, list[int]] = {}
    readers: dict[str, list[int]] = {}
    for e in graph["edges"]:
        if e["kind"] == "writes" and e["from"] in layer:
            writers.setdefault(e["to"], []).append(layer[e["from"]])
        elif e["kind"] == "reads" and e["to"] in layer:
            readers.setdefault(e["from"], []).append(layer[e["to"]])
    for i, n in nodes.items():
        if n["kind"] == "artifact":
            if i in writers:
                layer[i] = max(writers[i]) + 1
            else:
                layer[i] = min(readers.get(i, [1])) - 1
    return layer


def _box_width(names: list[str]) -> int:
    """A box wide enough for the longest name, whole (at most `CHAR` pixels a character
    of 13 px text, bold for a Heinzelmännchen), never narrower than `WIDTH`."""
    return max([WIDTH, *(int(len(n) * CHAR) + 2 * PAD for n in names)])


def render_svg(graph: Mapping[str, Any]) -> str:
    """The SVG text of ``graph`` (the JSON schema of docs/graph.md)."""
    layer = _layers(graph)
    box = _box_width([str(n.get("name") or n["id"]) for n in graph["nodes"]])
    step = box + LAYER - WIDTH
    rows: dict[int, int] = {}
    place: dict[str, tuple[int, int]] = {}
    for node in sorted(graph["nodes"], key=lambda n: (layer[n["id"]], str(n.get("name") or ""))):
        column = layer[node["id"]]
        row = rows.get(column, 0)
        rows[column] = row + 1
        place[node["id"]] = (MARGIN + column * step, MARGIN + row * ROW)
    width = max((x for x, _ in place.values()), default=0) + box + 2 * MARGIN
    height = max((y for _, y in place.values()), default=0) + HEIGHT + 2 * MARGIN
    count = sum(1 for n in graph["nodes"] if n["kind"] == "heinzel")
    label = f"The graph: {count} Heinzelmännchen and what they read and write"
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label={quoteattr(label)} '
        'class="graph">',
        '<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" '
        'markerWidth="7" markerHeight="7" orient="auto-start-reverse">'
        '<path d="M 0 0 L 10 5 L 0 10 z" fill="currentColor"/></marker></defs>',
    ]
    for e in graph["edges"]:
        if e["from"] not in place or e["to"] not in place:
            continue
        (x1, y1), (x2, y2) = place[e["from"]], place[e["to"]]
        dash = DASH.get(e["mark"], "")
        style = f' stroke-dasharray="{dash}"' if dash else ""
        out.append(
            f'<line x1="{x1 + box}" y1="{y1 + HEIGHT // 2}" x2="{x2}" y2="{y2 + HEIGHT // 2}" '
            f'stroke="currentColor" stroke-width="1.5"{style} marker-end="url(#arrow)" '
            f'class="edge {escape(e["mark"])}"><title>{escape(e["kind"])} ({escape(e["mark"])})'
            "</title></line>"
        )
    for node in graph["nodes"]:
        x, y = place[node["id"]]
        name = str(node.get("name") or node["id"])
        heinzel = node["kind"] == "heinzel"
        radius = 8 if heinzel else 2
        title = name if not heinzel else f"{name} (height {node.get('height', 0)})"
        weight = ' font-weight="bold"' if heinzel else ""
        fill = "#eef4ff" if heinzel else "#f6f6f6"
        out.append(
            f'<g class="node {escape(node["kind"])}"><title>{escape(title)}</title>'
            f'<rect x="{x}" y="{y}" width="{box}" height="{HEIGHT}" rx="{radius}" '
            f'fill="{fill}" stroke="currentColor"/>'
            f'<text x="{x + PAD}" y="{y + 22}" font-size="13"'
            f"{weight}>{escape(name)}</text></g>"
        )
    out.append("</svg>")
    return "".join(out)
