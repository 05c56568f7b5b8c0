"""The team graph (docs/graph.md): two users' homes sharing one team repository (a local
bare git repository, as tests/team/ has it) print the same ``hz graph --team``, built from
the team contract as written and the receipts on ``hz/state``; Ana's artifacts, which
Ben's machine cannot read, show on his as names, and no content shows on either."""

from __future__ import annotations

import json
import subprocess
from datetime import timedelta
from pathlib import Path

from tests.team.test_two_machines import START, Machine

CONTRACT = """---
name: team-report
kind: responsibility
hz:
  namespace: team
  schedule: "0 9 * * *"
  timezone: UTC
  owner: ana
  delegates: [ben]
  requires: [documents:read, documents:write]
  inputs:
    notes: {from: documents.read, args: {doc: "file:notes.md"}}
  outputs:
    report: {asset: "file:team-report.md"}
  publishes: [documents.place_draft]
  agent: {max_usd: 0.01}
  alias: [checkout-report]
---

### Goal

Keep the team report true.

### Done when

- [ ] it is true
"""
SECRET = "ANA-ONLY-LINE the checkout launch slips a week"


def test_two_homes_print_the_same_team_graph(tmp_path: Path) -> None:
    remote = tmp_path / "team.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    subprocess.run(
        ["git", "-C", str(remote), "symbolic-ref", "HEAD", "refs/heads/main"], check=True
    )
    ana, ben = Machine(tmp_path, "ana", remote), Machine(tmp_path, "ben", remote)
    for machine in (ana, ben):
        work = machine.root / "work"
        work.mkdir()
        (work / "team-report.prose.md").write_text(CONTRACT, encoding="utf-8")
        machine.hz(START, "heinzel", "new", "--from", str(work / "team-report.prose.md"))
        machine.hz(START, "approve", "team-report")
    # only Ana's machine holds the notes and the report; Ben's can read neither
    (ana.root / "work" / "notes.md").write_text(f"# notes\n\n- {SECRET}\n", encoding="utf-8")
    (ana.root / "work" / "team-report.md").write_text("# team report\n", encoding="utf-8")

    now = START + timedelta(hours=12)
    ana.hz(now, "system", "daemon", "tick")  # runs the 09:00 slot, pushes its receipts
    assert SECRET in (ana.root / "work" / "team-report.md").read_text(encoding="utf-8")
    later = now + timedelta(minutes=5)
    ben.hz(later, "system", "daemon", "tick")  # fetches hz/state
    ana.hz(later, "system", "daemon", "tick")

    shown = {m: m.hz(later, "graph", "--team", "--json").stdout for m in (ana, ben)}
    assert shown[ana] == shown[ben]
    graph = json.loads(shown[ana])
    assert graph["scope"] == "team" and graph["schema"] == 1
    [node] = [n for n in graph["nodes"] if n["kind"] == "heinzel"]
    assert node["id"].startswith("tm-") and node["name"] == "team-report"
    assert node["aliases"] == ["checkout-report"] and node["ran_by"] == ["ana"]
    edges = {(e["from"], e["kind"], e["to"]): e for e in graph["edges"]}
    reads = edges[("file:notes.md", "reads", node["id"])]
    writes = edges[(node["id"], "writes", "file:team-report.md")]
    assert reads["mark"] == writes["mark"] == "both"
    assert reads["declared"] == {"input": "notes", "version": 1}
    assert writes["observed"]["turns"] == 1

    text = {m: m.hz(later, "graph", "--team").stdout for m in (ana, ben)}
    assert text[ana] == text[ben]
    assert "file:team-report.md" in text[ben]  # a name on Ben's machine
    for out in (*shown.values(), *text.values()):
        assert "ANA-ONLY-LINE" not in out and "launch" not in out
        assert str(ana.root) not in out and str(ben.root) not in out
