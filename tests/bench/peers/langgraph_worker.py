"""LangGraph's side of the peer workload (run by ``run.py`` with the peers' Python): a
graph of N nodes in a line, checkpointed after every node. Modes as in ``hz_worker.py``
(and ``once N DIR``: one run, for strace); recovery is ``invoke(None)`` on the crashed
thread.

``PEERS_STORE`` is the saver: ``sqlite`` (``SqliteSaver``, which puts its file in WAL
mode; SQLite's ``synchronous`` stays FULL) or ``postgres`` (``PostgresSaver`` on
``PEERS_PG_URL``, autocommit, its tables made by ``setup()``). ``PEERS_DURABILITY`` is
the ``durability`` passed to ``invoke``: ``sync`` (each step's checkpoint is written
before the next step starts, ``loop._put_checkpoint_fut.result()`` in
``Pregel.stream``) or ``async`` (LangGraph's default: written while the next runs)."""

from __future__ import annotations

import json
import os
import sqlite3
import sys
import time
from pathlib import Path
from typing import Any, TypedDict

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph

MODE, N, DIRECTORY = sys.argv[1], int(sys.argv[2]), Path(sys.argv[3])
CRASH_AT = N // 2 if MODE == "crash" else -1
STORE = os.environ.get("PEERS_STORE", "sqlite")
DURABILITY = os.environ.get("PEERS_DURABILITY", "sync")


class State(TypedDict):
    total: int


def node(i: int) -> Any:
    def run(state: State) -> State:
        if i == CRASH_AT:
            os._exit(137)
        return {"total": state["total"] + i}

    return run


def graph(n: int, saver: BaseCheckpointSaver[Any]) -> Any:
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
    app.invoke({"total": 0}, {"configurable": {"thread_id": thread}}, durability=DURABILITY)
    return time.perf_counter() - start


def saver() -> BaseCheckpointSaver[Any]:
    if STORE == "postgres":
        from langgraph.checkpoint.postgres import PostgresSaver
        from psycopg import Connection
        from psycopg.rows import dict_row

        conn = Connection.connect(
            os.environ["PEERS_PG_URL"], autocommit=True, prepare_threshold=0, row_factory=dict_row
        )
        postgres = PostgresSaver(conn)  # type: ignore[arg-type]
        postgres.setup()
        return postgres
    return SqliteSaver(sqlite3.connect(DIRECTORY / "graph.sqlite", check_same_thread=False))


def main() -> None:
    DIRECTORY.mkdir(parents=True, exist_ok=True)
    saver_ = saver()
    if MODE == "steps":
        app, none = graph(N, saver_), graph(0, saver_)
        timed(app, "warm")  # first-use costs, not timed
        full = min(timed(app, f"n{r}") for r in range(3))
        empty = min(timed(none, f"z{r}") for r in range(3))
        print(json.dumps({"per_step_us": (full - empty) / N * 1e6, "run_us": full * 1e6}))
    elif MODE == "once":
        timed(graph(N, saver_), "once")
    elif MODE == "crash":
        timed(graph(N, saver_), "crashed")
    else:
        thread = {"configurable": {"thread_id": "crashed"}}
        graph(N, saver_).invoke(None, thread, durability=DURABILITY)
        print(json.dumps({"recovered": True}))


if __name__ == "__main__":
    main()
