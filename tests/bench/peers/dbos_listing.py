"""DBOS's side of the listing workload (run by ``listing.py`` with the peers' Python).
Modes: ``build N DIR`` (N finished workflows, ids ``wf-00000``..., in DBOS's SQLite
system database, written with ``synchronous=OFF`` since the building is not what is
measured) and ``inprocess DIR`` (one JSON line: the best of 5
``DBOSClient.list_workflows()`` calls after an untimed one, the client already
connected). The whole-process figure is DBOS's own ``dbos workflow list --limit N``
(``DBOSClient.list_workflows``, printed as JSON), spawned by ``listing.py``.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any


def url(directory: Path) -> str:
    return f"sqlite:///{directory / 'dbos.sqlite'}"


def build(count: int, directory: Path) -> None:
    import sqlalchemy as sa
    from dbos import DBOS, SetWorkflowID

    directory.mkdir(parents=True, exist_ok=True)
    engine = sa.create_engine(url(directory))

    @sa.event.listens_for(engine, "connect")
    def connect(conn: Any, record: Any) -> None:  # DBOS's own settings, less the fsync
        conn.isolation_level = "IMMEDIATE"
        conn.execute("PRAGMA busy_timeout=30000")
        conn.execute("PRAGMA foreign_keys=ON")
        conn.execute("PRAGMA synchronous=OFF")

    config: Any = {
        "name": "peerbench",
        "system_database_url": url(directory),
        "system_database_engine": engine,
        "run_admin_server": False,
    }
    DBOS(config=config)

    @DBOS.workflow()
    def flow(i: int) -> int:
        return i

    DBOS.launch()
    for i in range(count):
        with SetWorkflowID(f"wf-{i:05d}"):
            flow(i)
    DBOS.destroy()


def inprocess(directory: Path) -> float:
    from dbos import DBOSClient

    client = DBOSClient(system_database_url=url(directory))
    rows = client.list_workflows()  # first-use costs, not timed
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        rows = client.list_workflows()
        best = min(best, time.perf_counter() - start)
    assert rows, "an empty store"
    client.destroy()
    return best * 1000


def main() -> None:
    if sys.argv[1] == "build":
        build(int(sys.argv[2]), Path(sys.argv[3]))
    else:
        print(json.dumps({"ms": inprocess(Path(sys.argv[2]))}))


if __name__ == "__main__":
    main()
