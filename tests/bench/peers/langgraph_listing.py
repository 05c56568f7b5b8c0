"""LangGraph's side of the listing workload (run by ``listing.py`` with the peers'
Python). ``SqliteSaver`` has no call that lists threads, so listing threads with their
state is ``saver.list(None)`` (every checkpoint, newest first) keeping the first one of
each thread: its id, step and source. Modes: ``build N DIR`` (N threads, each a finished
run of a one-node graph, written with ``synchronous=OFF`` since the building is not what
is measured), ``list DIR`` (the whole process: import, open, list, print the threads as
JSON) and ``inprocess DIR`` (one JSON line: the best of 5 listings after an untimed one,
the saver already open).
"""

from __future__ import annotations

import json
import sqlite3
import sys
import time
from pathlib import Path
from typing import Any

from langgraph.checkpoint.sqlite import SqliteSaver


def build(count: int, directory: Path) -> None:
    from typing import TypedDict

    from langgraph.graph import END, START, StateGraph

    class State(TypedDict):
        total: int

    def node(state: State) -> State:
        return {"total": state["total"] + 1}

    directory.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(directory / "graph.sqlite", check_same_thread=False)
    conn.execute("PRAGMA synchronous=OFF")
    builder = StateGraph(State)
    builder.add_node("s0", node)
    builder.add_edge(START, "s0")
    builder.add_edge("s0", END)
    app = builder.compile(checkpointer=SqliteSaver(conn))
    for i in range(count):
        app.invoke({"total": 0}, {"configurable": {"thread_id": f"th-{i:05d}"}})
    conn.close()


def threads(saver: SqliteSaver) -> list[dict[str, Any]]:
    """Each thread's latest checkpoint, newest thread first."""
    latest: dict[str, dict[str, Any]] = {}
    for item in saver.list(None):
        thread = item.config["configurable"]["thread_id"]
        if thread not in latest:
            latest[thread] = {
                "thread_id": thread,
                "checkpoint_id": item.config["configurable"]["checkpoint_id"],
                "step": item.metadata.get("step"),
                "source": item.metadata.get("source"),
            }
    return list(latest.values())


def open_saver(directory: Path) -> SqliteSaver:
    return SqliteSaver(sqlite3.connect(directory / "graph.sqlite", check_same_thread=False))


def inprocess(directory: Path) -> float:
    saver = open_saver(directory)
    rows = threads(saver)  # first-use costs, not timed
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        rows = threads(saver)
        best = min(best, time.perf_counter() - start)
    assert rows, "an empty store"
    return best * 1000


def main() -> None:
    mode = sys.argv[1]
    if mode == "build":
        build(int(sys.argv[2]), Path(sys.argv[3]))
    elif mode == "list":
        print(json.dumps(threads(open_saver(Path(sys.argv[2])))))
    else:
        print(json.dumps({"ms": inprocess(Path(sys.argv[2]))}))


if __name__ == "__main__":
    main()
