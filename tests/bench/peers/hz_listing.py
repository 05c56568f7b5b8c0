"""hz's side of the listing workload (run by ``listing.py`` with hz's own Python). Modes:
``build N DIR`` (a home of N approved Heinzelmännchen, the rows made by the real
projection as in ``bench_heinzel.populate``; fsync is skipped while building, since the
building is not what is measured) and ``inprocess DIR`` (one JSON line: the best of 5
``Service.listing()`` calls after an untimed one, in this process, the home already open).
The whole-process figure is ``hz heinzel list`` itself, spawned by ``listing.py``.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def build(count: int, directory: Path) -> None:
    os.fsync = lambda fd: None  # the store is built, not measured: page cache is enough
    from bench_heinzel import populate

    populate(directory, count)


def inprocess(directory: Path) -> float:
    from heinzel.service import Service

    service = Service.from_environment(str(directory), {"HOME": str(directory.parent)})
    rows = service.listing()  # first-use costs, not timed
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        rows = service.listing()
        best = min(best, time.perf_counter() - start)
    assert rows, "an empty home"
    return best * 1000


def main() -> None:
    if sys.argv[1] == "build":
        build(int(sys.argv[2]), Path(sys.argv[3]))
    else:
        print(json.dumps({"ms": inprocess(Path(sys.argv[2]))}))


if __name__ == "__main__":
    main()
