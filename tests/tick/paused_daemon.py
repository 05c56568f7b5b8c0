"""`hz system daemon run` in its own process, whose first turn meets the test at a FIFO
rendezvous (``SYNC/ready``, then ``SYNC/go``) when its host reads the inbox before the
outcome step: ``paused_daemon.py SYNC [hz arguments after `run`]``.

It is the real command (`heinzel.cli.main`); only `heinzel.turns.delivery.Delivery.poll`
is wrapped, in the daemon before it forks, so the tick's forked child pauses mid-turn
(turn started, model requests done, nothing drafted yet).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from paused_tick import rendezvous  # beside this script (sys.path[0])

from heinzel.cli import main
from heinzel.turns.delivery import Delivery


def pause_before_outcome(sync: Path) -> None:
    poll = Delivery.poll
    met = []

    def pausing(delivery: Delivery, *args: Any, **kwargs: Any) -> None:
        run = delivery.session.running if delivery.session is not None else None
        if run is not None and run.state.state == "outcome" and not met:
            met.append(True)
            rendezvous(sync)
        poll(delivery, *args, **kwargs)

    Delivery.poll = pausing  # type: ignore[method-assign]


if __name__ == "__main__":
    pause_before_outcome(Path(sys.argv[1]))
    sys.argv = ["hz", "system", "daemon", "run", *sys.argv[2:]]
    main()
