"""`hz system daemon tick` in its own process, paused where the test says:
``paused_tick.py SYNC start|outcome`` (the home, the clock and the fixture sources from
``HZ_HOME``, ``HZ_NOW`` and ``HZ_FIXTURE_SOURCES``, as the real command reads them).

It is the real tick (`heinzel.app.App.tick`, the configured model and adapters); only its
turn host meets the test once at a FIFO rendezvous (``SYNC/ready``, then ``SYNC/go``):
``start`` when it holds the spine's lock, before its first turn starts; ``outcome`` when
its first turn's host reads the inbox before the outcome step (the model requests done, so
a chat then is requested, not steered). The tick's report is printed as JSON.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from heinzel.app import App
from heinzel.store.sources import TickFetch
from heinzel.turns.delivery import Delivery
from heinzel.turns.host import TurnHost
from heinzel.turns.operations import Turns
from machines import TurnState, Wake


def rendezvous(sync: Path) -> None:
    """Tell the test we are here, then wait until it says go."""
    with (sync / "ready").open("w") as ready:
        ready.write("here\n")
    with (sync / "go").open() as go:
        go.read()


class PausingHost(TurnHost):
    """The turn host, meeting the test once it holds the lock (before ``turn.started``)."""

    sync: Path
    met = False
    met_outcome = False

    def _env(self, *args: Any, **kwargs: Any) -> Any:
        if not PausingHost.met:
            PausingHost.met = True
            rendezvous(self.sync)
        return super()._env(*args, **kwargs)


class PausingTurns(Turns):
    """`Turns` whose new turns run on the `PausingHost`."""

    def run_wakes(
        self,
        heinzel_id: str,
        wakes: Sequence[Wake],
        *,
        adapters: Mapping[str, object],
        staged: TickFetch | None = None,
        data: Mapping[str, Any] | None = None,
    ) -> list[TurnState]:
        return PausingHost(self.sessions).run_wakes(
            heinzel_id, wakes, adapters=adapters, staged=staged, data=data
        )


def main(sync: Path, where: str) -> None:
    app = App.from_environment(None, os.environ)
    PausingHost.sync = sync
    if where == "outcome":
        PausingHost.met = True  # no pause at the start: before the outcome step instead
        poll = Delivery.poll

        def pausing(delivery: Delivery, *args: Any, **kwargs: Any) -> None:
            run = delivery.session.running if delivery.session is not None else None
            if run is not None and run.state.state == "outcome" and not PausingHost.met_outcome:
                PausingHost.met_outcome = True
                rendezvous(sync)
            poll(delivery, *args, **kwargs)

        Delivery.poll = pausing  # type: ignore[method-assign]
    tick = app.tick(sleep=lambda _seconds: None)
    tick.runner = PausingTurns(app.service)
    print(json.dumps(tick.run().to_json()))


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2])
