"""The graph's page (docs/graph.md): Priya's week drawn as an SVG on the server, behind
the token, with no script and nothing fetched from elsewhere."""

from __future__ import annotations

import re
from pathlib import Path

from starlette.testclient import TestClient

from heinzel.web.graph_svg import render_svg

from .conftest import web_app


def test_the_graph_is_drawn_on_the_server(client: TestClient) -> None:
    page = client.get("/graph")
    assert page.status_code == 200
    [svg] = re.findall(r"<svg.*?</svg>", page.text, flags=re.DOTALL)
    assert "weekly-report" in svg and "tracker.issues_updated?project=CHK" in svg
    assert 'role="img"' in svg and "<script" not in svg
    assert not re.search(r"(src|href)=\"(https?:)?//", page.text)  # no CDN, nothing remote
    assert 'class="edge both"' in svg  # the week's edges are declared and observed
    assert "<td>weekly-report</td><td>reads" not in page.text  # reads go artifact -> one
    assert re.search(r"<td>weekly-report</td><td>writes <span[^>]*>section</span>", page.text)
    assert '<a href="/graph">' in client.get("/").text


def test_the_graph_needs_the_token(home: Path, children: list) -> None:  # type: ignore[type-arg]
    with TestClient(web_app(home, children), follow_redirects=False) as anonymous:
        assert anonymous.get("/graph").status_code in (401, 403)


def test_names_are_text_in_the_picture() -> None:
    evil = '<script>alert("x")</script>'
    graph = {
        "nodes": [
            {"id": "hz-1", "kind": "heinzel", "name": evil, "height": 0},
            {"id": "doc:" + evil, "kind": "artifact", "name": "doc:" + evil},
        ],
        "edges": [
            {"from": "hz-1", "to": "doc:" + evil, "kind": "writes", "mark": "declared"},
        ],
    }
    svg = render_svg(graph)
    assert "<script" not in svg and "&lt;script&gt;" in svg
    assert 'stroke-dasharray="6 4"' in svg
