"""LangGraph's side of the peer workload (run by ``run.py`` with the peers' Python): a
graph of N nodes in a line, checkpointed by the synchronous ``SqliteSaver``. Modes as
in ``hz_worker.py``; recovery is ``invoke(None)`` on the crashed thread."""

from __future__ import annotations

import json
import os
import sqlite3
import sys
import time
from pathlib import Path
from typing import Any, TypedDict

from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph

MODE, N, DIRECTORY = sys.argv[1], int(sys.argv[2]), Path(sys.argv[3])
CRASH_AT = N // 2 if MODE == "crash" else -1


class State(TypedDict):
    total: int


def node(i: int) -> Any:
    def run(state: State) -> State:
        if i == CRASH_AT:
            os._exit(137)
        return {"total": state["total"] + i}

    return run


def graph(n: int, saver: SqliteSaver) -> Any:
    builder = StateGraph(State)
    previous = START
    for i in range(n):
        builder.add_node(f"s{i}", node(i))
        builder.add_edge(previous, f"s{i}")
        previous = f"s{i}"
    builder.add_edge(previous, END)
    return builder.compile(checkpointer=saver)


def timed(app: Any, thread: str) -> float:
    start = time.perf_counter()
    app.invoke({"total": 0}, {"configurable": {"thread_id": thread}})
    return time.perf_counter() - start


def main() -> None:
    DIRECTORY.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(DIRECTORY / "graph.sqlite", check_same_thread=False)
    saver = SqliteSaver(conn)
    if MODE == "steps":
        app, none = graph(N, saver), graph(0, saver)
        timed(app, "warm")  # first-use costs, not timed
        full = min(timed(app, f"n{r}") for r in range(3))
        empty = min(timed(none, f"z{r}") for r in range(3))
        print(json.dumps({"per_step_us": (full - empty) / N * 1e6, "run_us": full * 1e6}))
    elif MODE == "crash":
        timed(graph(N, saver), "crashed")
    else:
        graph(N, saver).invoke(None, {"configurable": {"thread_id": "crashed"}})
        print(json.dumps({"recovered": True}))


if __name__ == "__main__":
    main()
