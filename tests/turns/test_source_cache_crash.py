"""A power cut that takes the source cache's entries under a turn past gather.

The cache's entries are written without an fsync (docs/spine.md, "One fsync per step"):
a killed process loses nothing it wrote, but a power cut may take an entry, or leave its
name with bytes that are not its own. ``body-lost:<n>`` kills a real wake after its n-th
body record and first cuts the body and the spine back to their last fsync, as a power
cut may; the test then removes or tears every cache entry, as the same cut may. Where the
fsynced lines name gather's lost record, the resume reruns gather, which finds the entry
gone (or failing its hash), fetches the input again and records the input it regained.
Each recovered turn places its draft once and ends drafted.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from heinzel.store.sources import SourceCache

from .test_body_crash import _records, _recovered
from .test_crash import _wake


def _harm(sources: Path, how: str) -> list[str]:
    """Remove or tear each cache entry as a power cut may; their keys."""
    entries = sorted(sources.glob("*.json"))
    for entry in entries:
        if how == "removed":
            entry.unlink()
        else:  # its name kept, its bytes not: a zero page where the end of the fetch was
            data = bytearray(entry.read_bytes())
            data[len(data) // 2 :] = bytes(len(data) - len(data) // 2)
            entry.write_bytes(bytes(data))
    return [entry.stem for entry in entries]


@pytest.mark.kill
def test_a_lost_cache_entry_is_fetched_again(
    make_service: Callable[..., Any], tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Killed after each body record with the cut a power cut makes, the cache entries
    removed (even records) or torn (odd): recovery fetches again where gather reruns, and
    every turn ends drafted with one section."""
    base = tmp_path_factory.mktemp("clean")
    service, heinzel_id, _ = make_service()
    assert _wake(service.home.root, None, base) == 0
    count = _records(service, heinzel_id)
    failures: list[tuple[Any, ...]] = []
    regathered: list[int] = []
    for n in range(1, count + 1):
        how = "removed" if n % 2 == 0 else "torn"
        service, heinzel_id, folder = make_service()
        assert _wake(service.home.root, f"body-lost:{n}", base) == 137, n
        (key,) = _harm(service.home.sources_dir, how)
        resumed, lines, text = _recovered(service, heinzel_id, folder, base)
        end = lines[-1]
        if any(e.data.get("regained") == "think" for e in lines):  # gather ran again
            regathered.append(n)
            if SourceCache.of(resumed.home).get(key) is None:  # fetched again, staged
                failures.append((n, how, "not staged again"))
        if (
            text.count("<!-- hz:draft key=") != 1
            or end.kind != "turn.finished"
            or end.data.get("disposition") != "drafted"
            or not resumed.verify(heinzel_id)[0]["ok"]
        ):
            failures.append((n, how, end.kind, end.data))
    assert failures == []
    assert regathered, "no kill left a turn past gather without gather's record"
    assert {n % 2 for n in regathered} == {0, 1}, regathered  # removed and torn alike
