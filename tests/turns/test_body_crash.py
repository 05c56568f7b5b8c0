"""Kills between a body write and the spine line that names it, at every body record of a turn.

A turn's body records are written without an fsync of their own and its lazy spine
lines are held back (docs/spine.md, "One fsync per step"), so these points are where
the new ordering could lose or duplicate something. ``body:<n>`` kills the wake right
after its n-th body record is written; ``body-lost:<n>`` first cuts the body and the
spine back to what was fsynced, as a power cut may (the body is fsynced only when the
turn ends, so the lines already fsynced name records that are gone: the resume regains
them by rerunning the steps that made them). Either way the resumed turn must place the
draft once, end drafted, spend within the cap and leave a spine that verifies.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from heinzel.service import Service

from .test_crash import _fresh, _resume, _turn_lines, _wake


def _records(service: Service, heinzel_id: str) -> int:
    bodies = service.home.session_dir(heinzel_id) / "turns"
    return sum(len(p.read_bytes().splitlines()) for p in bodies.glob("*.jsonl"))


def _recovered(
    service: Service, heinzel_id: str, folder: Path, base: Path
) -> tuple[Service, list[Any], str]:
    """Recover a killed wake as the tick would: resume its turn in a new process, or wake
    it again when no line of the turn is left (the kill came before the first durable one,
    or a power cut took them all). The session then, the turn's lines, the report's text."""
    if _turn_lines(_fresh(service.home.root), heinzel_id):
        _resume(service, heinzel_id)
    else:
        assert _wake(service.home.root, None, base) == 0
    resumed = _fresh(service.home.root)
    lines = _turn_lines(resumed, heinzel_id)
    return resumed, lines, (folder / "report.md").read_text(encoding="utf-8")


@pytest.mark.kill
class TestBodyCrash:
    """Every body write of a drafted wake: killed right after it, resumed, one section."""

    @pytest.mark.parametrize("how", ["body", "body-lost"])
    def test_every_body_write(
        self,
        how: str,
        make_service: Callable[..., Any],
        tmp_path_factory: pytest.TempPathFactory,
    ) -> None:
        """Killed after body record n (kept, or cut back to its fsync), recovery drafts once."""
        base = tmp_path_factory.mktemp("clean")
        service, heinzel_id, _ = make_service()
        assert _wake(service.home.root, None, base) == 0
        count = _records(service, heinzel_id)
        cap = service.settings.heinzel.max_usd
        assert count >= 5  # gather, the model's records, think's outcome, the draft, act
        failures = []
        regained: list[int] = []
        for n in range(1, count + 1):
            service, heinzel_id, folder = make_service()
            assert _wake(service.home.root, f"{how}:{n}", base) == 137, f"{how}:{n}"
            resumed, lines, text = _recovered(service, heinzel_id, folder, base)
            end = lines[-1]
            if any("regained" in e.data for e in lines):
                regained.append(n)
            spent = sum(e.data.get("usd", 0) for e in lines if e.kind == "model.request")
            if (
                text.count("<!-- hz:draft key=") != 1
                or end.kind != "turn.finished"
                or end.data.get("disposition") != "drafted"
                or not (spent <= cap and end.data.get("usd", 0) <= cap)
                or not resumed.verify(heinzel_id)[0]["ok"]
            ):
                failures.append((n, end.kind, end.data))
        assert failures == []
        # a power cut takes records the fsynced lines name: the resume regains them
        assert bool(regained) == (how == "body-lost"), regained


@pytest.mark.kill
class TestBodySyncCrash:
    """The turn's end fsyncs its body and the ``turns/`` directory at once (docs/spine.md,
    "One fsync per step"): killed while the directory's fsync may still run, resumed."""

    @pytest.mark.parametrize("how", ["body-sync", "body-sync-lost"])
    def test_every_body_sync(
        self,
        how: str,
        make_service: Callable[..., Any],
        tmp_path_factory: pytest.TempPathFactory,
    ) -> None:
        """Killed at body sync n (the new body's name kept, or lost with the spine's unsynced
        lines as a power cut may), recovery places the draft once and ends drafted."""
        base = tmp_path_factory.mktemp("clean")
        failures = []
        killed = 0
        regained: list[int] = []
        for n in range(1, 10):
            service, heinzel_id, folder = make_service()
            code = _wake(service.home.root, f"{how}:{n}", base)
            if code == 0:  # the wake made fewer syncs than n: every one was reached
                break
            assert code == 137, f"{how}:{n} exited {code}"
            killed += 1
            if how == "body-sync":  # a process death loses nothing it wrote
                assert _records(service, heinzel_id) >= 5
            resumed, lines, text = _recovered(service, heinzel_id, folder, base)
            end = lines[-1]
            if any("regained" in e.data for e in lines):
                regained.append(n)
            if (
                text.count("<!-- hz:draft key=") != 1
                or end.kind != "turn.finished"
                or end.data.get("disposition") != "drafted"
                or not resumed.verify(heinzel_id)[0]["ok"]
            ):
                failures.append((n, end.kind, end.data))
        assert killed >= 1
        assert failures == []
        # losing the body's name loses records the fsynced lines name: the resume regains them
        assert bool(regained) == (how == "body-sync-lost"), regained
