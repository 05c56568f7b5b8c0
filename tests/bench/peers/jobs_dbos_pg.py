"""DBOS's side of the jobs-per-second figure (``jobs.py``), run with the peers' Python: a
DBOS `Queue` on Postgres (``worker_concurrency=1`` per process). ``enqueue URL J``: queue
J workflows; ``work URL`` (each worker its own executor id, ``DBOS__VMID``): launch
DBOS (its queue runner dequeues) and stay until no
workflow is left enqueued or pending. A job is a workflow of 5 steps and one more."""

from __future__ import annotations

import sys
import time

from dbos import DBOS, DBOSClient, EnqueueOptions

MODE, URL = sys.argv[1], sys.argv[2]
DBOS(config={"name": "peerjobs", "system_database_url": URL, "run_admin_server": False})


@DBOS.step()
def call(i: int) -> int:
    return i


@DBOS.workflow()
def job(j: int) -> int:
    total = sum(call(i) for i in range(5))
    call(-1)  # the effect's place
    return total


def main() -> None:
    DBOS.launch()
    if MODE == "enqueue":  # through a client: this process does not dequeue
        client = DBOSClient(system_database_url=URL)
        for j in range(int(sys.argv[3])):
            options: EnqueueOptions = {
                "workflow_name": "job",
                "queue_name": "peerjobs",
                "workflow_id": f"job{j}",
                "app_version": "peerjobs",
            }
            client.enqueue(options, j)
        client.destroy()
    else:
        DBOS.register_queue("peerjobs", worker_concurrency=1, polling_interval_sec=0.05)
        while DBOS.list_workflows(status=["ENQUEUED", "PENDING"], load_input=False, limit=1):
            time.sleep(0.05)
    DBOS.destroy()


if __name__ == "__main__":
    main()
