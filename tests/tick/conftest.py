"""Fixtures for the tick: a home on a stepping clock, contract files, a recording runner."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from heinzel.capabilities.documents import LocalDocuments
from heinzel.capabilities.files import FilesCapability
from heinzel.capabilities.fixture_sources import fixture_sources
from heinzel.config import load_settings
from heinzel.service import Service
from heinzel.store.home import Home
from heinzel.store.sources import SourceCache, TickFetch
from heinzel.tick import Tick
from machines.keys import Wake

ROOT = Path(__file__).resolve().parents[2]
PRIYA = ROOT / "fixtures" / "priya"


class SteppingClock:
    """A clock tests move by hand; never the wall clock."""

    def __init__(self, start: datetime) -> None:
        self.now = start

    def __call__(self) -> datetime:
        return self.now

    def step(self, **delta: float) -> None:
        self.now += timedelta(**delta)


@dataclass
class Recorder:
    """A `TurnRunner` that records what it is asked and writes a finished turn per call,
    so the index sees the keys as taken. ``usd`` is what each turn costs."""

    service: Service
    usd: float = 0.0
    calls: list[tuple[str, list[Wake]]] = field(default_factory=list)
    resumed: list[tuple[str, str, str]] = field(default_factory=list)
    staged_seen: list[list[bool]] = field(default_factory=list)
    count: int = 0

    def run_wakes(
        self,
        heinzel_id: str,
        wakes: Sequence[Wake],
        *,
        adapters: Mapping[str, object],
        staged: TickFetch | None = None,
        data: Mapping[str, Any] | None = None,
    ) -> list[Any]:
        """The turn it wrote, as the host returns what it ran (``data`` as the host takes
        it, unused)."""
        cache = SourceCache.of(self.service.home)
        self.staged_seen.append(
            [cache.get(s.key) is not None for s in (staged.staged if staged else [])]
        )
        self.calls.append((heinzel_id, list(wakes)))
        self.count += 1
        turn = f"t-{self.count:04d}"
        causes = [{"cause": w.cause, "key": w.key} for w in wakes]
        with self.service.open_spine(heinzel_id) as spine:
            spine.append(
                "turn.started",
                {"cause": wakes[0].cause, "causes": causes, "keys": [w.key for w in wakes]},
                turn=turn,
                key=wakes[0].key,
            )
            spine.append(
                "turn.finished",
                {"disposition": "drafted", "cost_usd": self.usd},
                turn=turn,
                key=wakes[0].key,
            )
        return [SimpleNamespace(turn=turn, state="finished", disposition="drafted")]

    def resume_turn(
        self, heinzel_id: str, turn: str, woken_by: str, *, adapters: Mapping[str, object]
    ) -> None:
        self.resumed.append((heinzel_id, turn, woken_by))


@pytest.fixture
def clock() -> SteppingClock:
    # Friday 2026-10-30, 14:30 UTC: Priya's 15:00 Berlin slot (14:00 UTC) has passed.
    return SteppingClock(datetime(2026, 10, 26, 9, 0, tzinfo=UTC))


@pytest.fixture
def make_service(tmp_path: Path, clock: SteppingClock) -> Callable[..., Service]:
    def make(**env: str) -> Service:
        loaded = load_settings(env=env, cwd=tmp_path, site=None, user=None, data_dir=tmp_path)
        return Service(Home(tmp_path / "home"), clock, loaded.settings, owner="priya")

    return make


@pytest.fixture
def service(make_service: Callable[..., Service]) -> Service:
    return make_service()


@pytest.fixture
def adapters(tmp_path: Path) -> dict[str, object]:
    return {
        **fixture_sources(PRIYA),
        "files": FilesCapability(),
        "documents": LocalDocuments("priya"),
    }


@pytest.fixture
def recorder(service: Service) -> Recorder:
    return Recorder(service)


@pytest.fixture
def tick(service: Service, recorder: Recorder, adapters: dict[str, object]) -> Callable[[], Any]:
    def run() -> Any:
        return Tick(service, recorder, adapters, sleep=lambda s: None).run()

    return run


def contract(
    folder: Path,
    name: str,
    *,
    schedule: str | None = '"0 15 * * FRI"',
    inputs: str = "",
    outputs: str = "",
    requires: str = "code-host:read",
    max_usd: str = "0.5",
) -> Path:
    """A small contract file; ``inputs`` and ``outputs`` are YAML flow lines."""
    lines = [
        "---",
        f"name: {name}",
        "kind: responsibility",
        "hz:",
        "  timezone: Europe/Berlin",
        f"  requires: [{requires}]",
        f"  agent: {{max_usd: {max_usd}}}",
    ]
    if schedule:
        lines.append(f"  schedule: {schedule}")
    if inputs:
        lines += ["  inputs:", *(f"    {line}" for line in inputs.splitlines())]
    if outputs:
        lines += ["  outputs:", *(f"    {line}" for line in outputs.splitlines())]
    lines += [
        "---",
        "",
        "### Goal",
        "",
        f"Keep {name} true.",
        "",
        "### Done when",
        "",
        "- [ ] it is true",
        "",
    ]
    path = folder / f"{name}.prose.md"
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


PRS = "merged_prs: {from: code-host.merged_pull_requests, args: {repo: acme/checkout}, window: 7d}"


def approved(service: Service, path: Path) -> str:
    """Create and approve the Heinzelmännchen of ``path``; its id."""
    row = service.create_from_files([str(path)])[0]
    service.approve(row["id"])
    return str(row["id"])


def populate(service: Service, path: Path, count: int, *, prefix: str = "bulk") -> list[str]:
    """``count`` approved Heinzelmännchen of ``path`` folded straight into the index (no
    spines: the tick must not need them), as tests/bench/bench_heinzel.py builds them."""
    from heinzel.contract import load_contract
    from heinzel.ids import new_id
    from heinzel.store.contracts import store_version
    from ledger.event import format_ts, make_event

    compiled = load_contract(path)
    text = path.read_text(encoding="utf-8")
    ts = format_ts(service.clock())
    ids = []
    for i in range(count):
        heinzel_id = new_id(service.clock)
        facts = store_version(service.home, heinzel_id, 1, text, compiled)
        prev = None
        events = (
            (
                "heinzel.created",
                {"name": f"{prefix}-{i:05d}", "namespace": "me", "origin": str(path.parent)},
            ),
            ("contract.proposed", {"version": 1, "fingerprint": facts.fingerprint, "by": "user"}),
            ("contract.approved", {"version": 1, "fingerprint": facts.fingerprint}),
        )
        for seq, (kind, data) in enumerate(events, start=1):
            event = make_event(seq=seq, ts=ts, prev=prev, kind=kind, data=data)
            service.index.apply(heinzel_id, event)
            prev = event.hash
        ids.append(heinzel_id)
    return ids
