"""The daily discovery (ADR 0049 statement 12): a ``discover`` hint, a wake of cause
discovered once per source, the offline model's amendment, approve and decline, through
real ``hz`` processes."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from heinzel.contract import check_amendment, compile_contract, widenings
from heinzel.engine.offline_discover import amended_text
from heinzel.errors import ContractError
from tests import forkhz, inprocess
from tests.tick.homes import HZ

WED, THU, FRI = "2026-11-04T08:00:00Z", "2026-11-05T08:00:00Z", "2026-11-06T08:00:00Z"

CONTRACT = """---
name: incident-digest
kind: responsibility
hz:
  schedule: "0 15 * * FRI"
  timezone: Europe/Berlin
  requires: [documents:read, documents:write, files:read]
  inputs:
    notes: {from: files.read, args: {path: notes.md}}
  discover:
    incident_doc: {from: documents.read, match: "*incident*", instead_of: notes, recheck: 1h}
  outputs:
    digest: {asset: "file:digest.md"}
  publishes: [documents.place_draft]
---

### Goal

Every Friday, a digest of the week's incidents.

### Requires

- `notes`: the on-call notes

### Done when

- [ ] every incident is listed
"""


def _env(folder: Path, now: str) -> dict[str, str]:
    return {
        "PATH": "/usr/bin:/bin",
        "HZ_HOME": str(folder / "home"),
        "HZ_NOW": now,
        "HZ_MODEL": "offline",
        "HZ_MODEL_FAST": "offline",
        "HZ_MODEL_BEST": "offline",
        "HZ_LOG_LEVEL": "error",
        "XDG_CONFIG_HOME": str(folder / "config"),
    }


def run(folder: Path, now: str, *args: str) -> subprocess.CompletedProcess[str]:
    """``hz ARGS`` at ``now`` in ``folder``'s home, the way a person runs it."""
    done = forkhz.run(
        [HZ, *args], cwd=folder, env=_env(folder, now), capture_output=True, text=True, check=False
    )
    assert "Traceback" not in done.stderr, done.stderr
    return done


def tick(folder: Path, now: str) -> dict[str, Any]:
    done = run(folder, now, "system", "daemon", "tick", "--json")
    assert done.returncode == 0, done.stderr
    report: dict[str, Any] = json.loads(done.stdout)
    return report


def spine(folder: Path) -> list[dict[str, Any]]:
    [path] = (folder / "home" / "heinzel").glob("hz-*/session.jsonl")
    return [json.loads(line) for line in path.read_text("utf-8").splitlines()]


def discovered_turns(folder: Path) -> list[dict[str, Any]]:
    return [
        e
        for e in spine(folder)
        if e["kind"] == "turn.started" and e["data"]["cause"] == "discovered"
    ]


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """A folder with the contract, its notes and its digest; created and approved on
    Wednesday morning."""
    (tmp_path / "incident-digest.prose.md").write_text(CONTRACT, encoding="utf-8")
    (tmp_path / "notes.md").write_text("- nothing paged\n", encoding="utf-8")
    (tmp_path / "digest.md").write_text("# Digest\n", encoding="utf-8")
    # set-up, in this process (tests/inprocess.py); the ticks and approvals under test run hz
    env = _env(tmp_path, WED)
    made = inprocess.hz(["heinzel", "new", "--from", "incident-digest.prose.md"], env, tmp_path)
    assert made.returncode == 0, made.stderr
    assert inprocess.hz(["approve", "incident-digest"], env, tmp_path).returncode == 0
    return tmp_path


class TestDiscovery:
    def test_a_new_document_is_proposed_once_and_approved(self, folder: Path) -> None:
        """A document the hint matches wakes the Heinzelmännchen once (at the next day's
        discovery), its amendment reads it instead of the replaced input, `hz approve`
        makes it v2, and no later discovery wakes for it again."""
        assert tick(folder, WED)["woken"] == []
        (folder / "checkout-incidents.md").write_text("# Incidents\n", encoding="utf-8")
        assert tick(folder, "2026-11-04T12:00:00Z")["woken"] == []  # today's ran already
        report = tick(folder, THU)
        [woken] = report["woken"]
        [wake] = woken["wakes"]
        assert wake["cause"] == "discovered"
        assert wake["key"].endswith("@discovered:documents.read:file:checkout-incidents.md")
        assert woken["ended"][0]["disposition"] == "proposed"
        proposed = [e for e in spine(folder) if e["kind"] == "amendment.proposed"]
        assert [(e["data"]["by"], e["data"]["widens"]) for e in proposed] == [("heinzel", False)]

        assert run(folder, THU, "approve", "incident-digest").returncode == 0
        shown = json.loads(run(folder, THU, "heinzel", "show", "incident-digest", "--json").stdout)
        assert shown["contract_version"] == 2
        v2 = (folder / "home" / "heinzel" / woken["id"] / "contract" / "v2.prose.md").read_text()
        inputs = compile_contract(v2).hz.inputs
        assert sorted(inputs) == ["incident_doc"]
        assert inputs["incident_doc"].args == {"doc": "file:checkout-incidents.md"}

        tick(folder, FRI)
        assert len(discovered_turns(folder)) == 1

    def test_a_declined_source_is_never_proposed_again(self, folder: Path) -> None:
        """Declined in `hz heinzel decline`, the same document wakes nothing on later
        days; another document under the same hint is refused HZH079 and files nothing."""
        (folder / "checkout-incidents.md").write_text("# Incidents\n", encoding="utf-8")
        tick(folder, THU)
        assert run(folder, THU, "heinzel", "decline", "incident-digest").returncode == 0
        tick(folder, FRI)
        assert len(discovered_turns(folder)) == 1
        (folder / "incidents-2027.md").write_text("# More\n", encoding="utf-8")
        tick(folder, "2026-11-07T08:00:00Z")
        assert len(discovered_turns(folder)) == 2
        refused = [e["data"]["code"] for e in spine(folder) if e["kind"] == "amendment.refused"]
        assert refused == ["HZH079"]
        kinds = [e["kind"] for e in spine(folder)]
        assert kinds.count("amendment.proposed") == 1
        tick(folder, "2026-11-08T08:00:00Z")
        assert len(discovered_turns(folder)) == 2


BAD_HINTS = [
    ("{from: code-host.merged_pull_requests, match: acme/*}", "HZH175"),
    ('{from: documents.read, match: "*x*"}', "HZH176"),
    ('{from: documents.read, match: ""}', "HZH177"),
    ('{from: documents.read, match: "*x*", colour: red}', "HZC004"),
]


@pytest.mark.parametrize(("hint", "code"), BAD_HINTS)
def test_a_bad_hint_is_refused_with_its_code(tmp_path: Path, hint: str, code: str) -> None:
    """`hz heinzel new` refuses a hint discovery can't serve, one named like an input, an
    empty pattern and an unknown key, each with its code and exit 1."""
    text = CONTRACT.replace(
        '{from: documents.read, match: "*incident*", instead_of: notes, recheck: 1h}', hint
    )
    if code == "HZH176":
        text = text.replace("    incident_doc: {", "    notes: {")
    text = text.replace("requires: [documents:read,", "requires: [code-host:read, documents:read,")
    (tmp_path / "bad.prose.md").write_text(text, encoding="utf-8")
    done = run(tmp_path, WED, "heinzel", "new", "--from", "bad.prose.md")
    assert done.returncode == 1
    assert done.stderr.startswith(f"{code}: "), done.stderr


def test_a_hint_needs_read_granted() -> None:
    """A hint whose capability ``requires`` grants only for writing is HZC033."""
    with pytest.raises(ContractError) as caught:
        compile_contract(CONTRACT.replace("[documents:read, ", "["))
    assert caught.value.code == "HZC033"


RECORD: dict[str, Any] = {
    "input": "incident_doc",
    "from": "documents.read",
    "args": {"doc": "file:checkout-incidents.md"},
    "instead_of": "notes",
    "recheck": "1h",
}


class TestWidening:
    def test_the_offline_amendment_widens_nothing(self) -> None:
        """The rule's text adds the hinted source and drops the hint and the replaced
        input: the Heinzelmännchen may propose it."""
        old = compile_contract(CONTRACT)
        text = amended_text(CONTRACT, RECORD)
        assert text is not None
        new = compile_contract(text)
        assert widenings(old, new) == []
        assert "notes" not in new.hz.inputs and not new.hz.discover
        check_amendment(old, new, proposed_by="heinzel")

    def test_a_source_the_hint_does_not_name_widens(self) -> None:
        """The same amendment reading a document the pattern does not match is HZC050."""
        record = {**RECORD, "args": {"doc": "file:payroll.md"}}
        text = amended_text(CONTRACT, record)
        assert text is not None
        with pytest.raises(ContractError) as caught:
            check_amendment(
                compile_contract(CONTRACT), compile_contract(text), proposed_by="heinzel"
            )
        assert caught.value.code == "HZC050"
        assert "inputs.incident_doc" in caught.value.message

    def test_a_new_hint_widens(self) -> None:
        """A hint grants the source it names, so adding one is the user's to write."""
        old = compile_contract(CONTRACT)
        wider = CONTRACT.replace(
            "  outputs:", '    runbook: {from: documents.read, match: "*runbook*"}\n  outputs:'
        )
        assert widenings(old, compile_contract(wider)) == ["discover.runbook"]

    def test_no_hints_keep_the_old_fingerprint(self) -> None:
        """A contract without hints compiles to a form without the key (old fingerprints
        stay)."""
        plain = (
            CONTRACT.split("  discover:\n", maxsplit=1)[0] + CONTRACT.split("recheck: 1h}\n", 1)[1]
        )
        assert "discover" not in compile_contract(plain).to_json()


def test_a_folder_that_is_gone_is_reported_and_the_tick_goes_on(tmp_path: Path) -> None:
    """The contract's folder moved away: the tick reports HZH178 for that Heinzelmännchen
    and wakes nothing (no traceback); with the folder back, the next day's discovery finds
    the document."""
    work = tmp_path / "work"
    work.mkdir()
    (work / "incident-digest.prose.md").write_text(CONTRACT, encoding="utf-8")
    (work / "notes.md").write_text("- nothing paged\n", encoding="utf-8")
    (work / "digest.md").write_text("# Digest\n", encoding="utf-8")
    (work / "checkout-incidents.md").write_text("# Incidents\n", encoding="utf-8")
    new = run(tmp_path, WED, "heinzel", "new", "--from", "work/incident-digest.prose.md")
    assert new.returncode == 0, new.stderr
    assert run(tmp_path, WED, "approve", "incident-digest").returncode == 0
    work.rename(tmp_path / "moved")
    done = run(tmp_path, THU, "system", "daemon", "tick", "--json", "--strict")
    assert done.returncode == 1  # the tick's errors (the input's file is gone too)
    report = json.loads(done.stdout)
    assert ("discovery", "HZH178") in [(e.get("part"), e["code"]) for e in report["errors"]]
    assert report["woken"] == []
    (tmp_path / "moved").rename(work)
    [woken] = tick(tmp_path, FRI)["woken"]
    assert [w["cause"] for w in woken["wakes"]] == ["discovered"]
