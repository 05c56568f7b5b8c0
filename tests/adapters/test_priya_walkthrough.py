"""The worked example at the adapters' level: two Fridays of sources, drafts and approval."""

from __future__ import annotations

import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from heinzel.capabilities.documents import LocalDocuments, absolute_asset, draft_tag
from heinzel.capabilities.fixture_sources import fixture_sources
from heinzel.capabilities.protocols import Approved, Pending, ReadCapability
from heinzel.contract import load_contract
from heinzel.store.sources import SourceCache, SourceRequest, absolute_args, fetch_once

PRIYA = Path(__file__).resolve().parents[2] / "fixtures" / "priya"
HZ_ID = "hz-01JB8ZQ6N5R7T9V1X3Z5B7D9F1"
FRIDAY_1 = datetime(2026, 10, 30, 14, 0, tzinfo=UTC)
FRIDAY_2 = datetime(2026, 11, 6, 14, 0, tzinfo=UTC)


def requests(contract: Path, folder: Path, seen: dict[str, str]) -> list[SourceRequest]:
    hz = load_contract(contract).hz
    out = []
    for name, spec in sorted(hz.inputs.items()):
        capability, method = spec.from_.split(".")
        out.append(
            SourceRequest(
                watcher=HZ_ID,
                input=name,
                capability=capability,
                method=method,
                args=absolute_args(capability, method, spec.args, folder),
                window=spec.window,
                recheck=spec.recheck or timedelta(0),
                last_seen=seen.get(name),
            )
        )
    return out


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    return Path(shutil.copytree(PRIYA, tmp_path / "priya"))


class TestPriyaWeek:
    def test_two_fridays(self, folder: Path, tmp_path: Path) -> None:
        """Friday drafts v1 once, Monday approves with edits, the next Friday drafts v2."""
        adapters: dict[str, ReadCapability] = dict(fixture_sources(folder))
        cache = SourceCache(tmp_path / "home" / "heinzel" / "sources")
        docs = LocalDocuments("priya")
        asset = absolute_asset("file:weekly-report.md", folder)
        seen: dict[str, str] = {}

        friday = fetch_once(
            requests(folder / "weekly-report.prose.md", folder, seen),
            adapters,
            FRIDAY_1,
            cache=cache,
        )
        assert (friday.fetches, friday.moved()) == (3, {HZ_ID: ["board", "calendar", "merged_prs"]})
        seen = {s.request.input: s.fingerprint or "" for s in friday.staged}

        key = f"{HZ_ID}@v1@2026-10-30T15:00@{asset}"
        digest = docs.place_draft(
            key,
            asset,
            "## Week of 2026-10-26\n\n- #402 one-tap button",
            draft_tag("weekly-report", 1),
        )
        # the crash variant: the resumed turn probes, finds it, and a second place writes nothing
        assert docs.find(key) == "present"
        assert (
            docs.place_draft(key, asset, "a different retry text", draft_tag("weekly-report", 1))
            == digest
        )
        assert docs.draft_state(key) == Pending()

        tick = fetch_once(
            requests(folder / "weekly-report.prose.md", folder, seen),
            adapters,
            FRIDAY_1 + timedelta(minutes=5),
            cache=cache,
        )
        assert (tick.fetches, tick.moved()) == (0, {})

        report = folder / "weekly-report.md"
        text = report.read_text(encoding="utf-8")
        report.write_text(
            text.replace(draft_tag("weekly-report", 1) + "\n", "").replace(
                "#402 one-tap", "Express checkout: one-tap"
            ),
            encoding="utf-8",
        )
        assert docs.draft_state(key) == Approved(
            "priya", "## Week of 2026-10-26\n\n- Express checkout: one-tap button"
        )

        later = fetch_once(
            requests(folder / "weekly-report.v2.prose.md", folder, seen),
            adapters,
            FRIDAY_2,
            cache=cache,
        )
        assert later.moved() == {HZ_ID: ["board", "calendar", "incidents", "merged_prs"]}
        incidents = next(s for s in later.staged if s.request.input == "incidents")
        assert incidents.fetched is not None
        ids = [message["id"] for message in incidents.fetched.result]
        assert ids == ["m-1102-1", "m-1102-2", "m-1104-1"]

        key_2 = f"{HZ_ID}@v2@2026-11-06T15:00@{asset}"
        docs.place_draft(
            key_2,
            asset,
            "## Week of 2026-11-02\n\n- webhook lag incident",
            draft_tag("weekly-report", 2),
        )
        assert docs.draft_state(key_2) == Pending()
        assert isinstance(docs.draft_state(key), Approved)
        final = report.read_text(encoding="utf-8")
        assert final.count("<!-- hz:draft") == 2
        assert "🧝 DRAFT (weekly-report v2)" in final and "🧝 DRAFT (weekly-report v1)" not in final
