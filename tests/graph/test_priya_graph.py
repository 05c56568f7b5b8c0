"""``hz graph`` on the worked example (docs/graph.md), through the real ``hz`` executable:
weekly-report reads the tracker and writes the report document, each edge declared by
its contract and observed in its action log, kept apart. Played up to Tuesday, so v2's new
input ``incidents`` is declared and not observed yet (no v2 turn has run)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from heinzel.cli.demo import Week
from tests import forkhz

GOLDEN = Path(__file__).parent / "golden" / "priya-graph.json"
HZ = Path(sys.executable).parent / "hz"


def hz(week: Week, *args: str) -> subprocess.CompletedProcess[str]:
    env = week.env("2026-11-03T10:00:00Z", None)
    return subprocess.run(
        [str(HZ), *args], env=env, cwd=week.work, capture_output=True, text=True, check=False
    )


def normal(text: str, week: Week) -> Any:
    """The graph with this run's tmp folder and random ids named."""
    text = text.replace(str(week.work), "<fixture>")
    text = re.sub(r"hz-[0-9A-Z]{26}", "<weekly-report>", text)
    return json.loads(text)


@pytest.fixture(scope="module")
def week(tmp_path_factory: pytest.TempPathFactory) -> Week:
    # set-up, its processes forked (tests/forkhz.py); `hz graph` under test is the real hz
    played = Week(tmp_path_factory.mktemp("priya") / "home", crashes=False, run=forkhz.run)
    played.setup()
    played.play(until=4)  # created, Friday's draft, Monday's approval, Tuesday's v2
    return played


@pytest.mark.slow
def test_golden_json(week: Week) -> None:
    done = hz(week, "graph", "--json")
    assert done.returncode == 0, done.stderr
    graph = normal(done.stdout, week)
    if os.environ.get("HZ_UPDATE_GOLDEN"):
        GOLDEN.write_text(json.dumps(graph, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    assert graph == json.loads(GOLDEN.read_text(encoding="utf-8"))
    edges = {(e["from"], e["kind"], e["to"]): e for e in graph["edges"]}
    board = edges[("tracker.issues_updated?project=CHK", "reads", "<weekly-report>")]
    assert board["mark"] == "both"
    assert board["declared"] == {"input": "board", "version": 2}
    assert board["observed"]["turns"] == 2  # Friday's draft and Tuesday's chat
    report = edges[("<weekly-report>", "writes", "file:<fixture>/weekly-report.md")]
    assert report["mark"] == "both"
    assert report["declared"]["output"] == "section"
    [incidents] = [e for e in graph["edges"] if (e["declared"] or {}).get("input") == "incidents"]
    assert incidents["mark"] == "declared" and incidents["observed"] is None


@pytest.mark.slow
def test_text_and_filters(week: Week) -> None:
    done = hz(week, "graph")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("weekly-report (me, v2, ")
    assert re.search(
        r"reads\s+board\s+tracker.issues_updated\?project=CHK\s+both\s+2 turns", done.stdout
    )
    assert re.search(r"writes\s+section\s+file:\S+/weekly-report.md\s+both", done.stdout)

    near = json.loads(
        hz(week, "graph", "--artifact", "weekly-report.md", "--depth", "1", "--json").stdout
    )
    assert {n["kind"] for n in near["nodes"]} == {"artifact", "heinzel"}
    assert len(near["edges"]) == 1 and near["edges"][0]["kind"] == "writes"

    for args, code in (
        (("--name", "nobody"), "HZH381"),
        (("--artifact", "doc:nowhere"), "HZH382"),
        (("--depth", "1"), "HZH380"),
    ):
        refused = hz(week, "graph", *args)
        assert refused.returncode == 1 and code in refused.stderr, refused.stderr
