"""The turn operations of `heinzel.service.Service` (a mixin, so the service stays small).

`run_wakes` and `resume_turn` are what the tick calls; `wake` is ``hz heinzel wake``;
`create_from_sentence` is ``hz heinzel new "a sentence"``; `answer` is ``hz heinzel
answer``. Each runs in this process with the session's lock held (docs/turns-in-hz.md).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

from heinzel.lifecycle import Lifecycle

if TYPE_CHECKING:
    from heinzel.service import Service
    from heinzel.sources import TickFetch
    from machines import TurnState, Wake

# The turn host, the engine and pydantic-ai load only when a turn runs, so that
# `hz --help`, `hz heinzel list` and the other index-only commands start fast.

__all__ = ["TurnOperations"]


class TurnOperations:
    """Running a Heinzelmännchen's turns: the service's entry points."""

    @property
    def _service(self) -> Service:
        return cast("Service", self)

    def run_wakes(
        self,
        heinzel_id: str,
        wakes: Sequence[Wake],
        *,
        adapters: Mapping[str, object],
        staged: TickFetch | None = None,
    ) -> list[TurnState]:
        """Apply the key rule to ``wakes`` and run the turns due (inputs staged first)."""
        from heinzel.turns.host import TurnHost

        return TurnHost(self._service).run_wakes(
            heinzel_id, wakes, adapters=adapters, staged=staged
        )

    def resume_turn(
        self, heinzel_id: str, turn: str, woken_by: str, *, adapters: Mapping[str, object]
    ) -> TurnState | None:
        """Resume ``turn`` (``recovery`` after a crash, or what ended its wait)."""
        from heinzel.turns.host import TurnHost

        return TurnHost(self._service).resume_turn(heinzel_id, turn, woken_by, adapters=adapters)

    def create_from_sentence(
        self, sentence: str, *, namespace: str | None = None
    ) -> dict[str, Any]:
        """A new Heinzelmännchen whose contract a created turn writes (state: proposed)."""
        from heinzel.turns.created import run_created

        return run_created(self._service, sentence, namespace=namespace or "me")

    def wake(
        self,
        ref: str,
        message: str | None = None,
        *,
        adapters: Mapping[str, object] | None = None,
    ) -> dict[str, Any]:
        """A turn of cause asked now, in this process; what happened (HZH050 when its
        state does not wake: proposed, paused, retired, or a turn already running)."""
        from heinzel.turns.host import TurnHost, default_adapters

        service = self._service
        row = service.resolve(ref)
        Lifecycle(str(row["state"])).fire("wake", row["name"])
        chosen = adapters if adapters is not None else default_adapters(service.settings)
        return {
            "name": row["name"],
            **TurnHost(self._service).wake(row["id"], message, adapters=chosen),
        }

    def answer(
        self,
        ref: str,
        approved: bool,
        proposal: str | None = None,
        *,
        adapters: Mapping[str, object] | None = None,
    ) -> dict[str, Any]:
        """Answer a chat turn's proposed write (``hz heinzel answer``) and resume its turn:
        an approved write happens once; a denied one is told to the model (HZH210-212)."""
        from heinzel.turns.chat import answer
        from heinzel.turns.host import TurnHost, default_adapters

        service = self._service
        row = service.resolve(ref)
        chosen = adapters if adapters is not None else default_adapters(service.settings)
        return answer(TurnHost(service), row["id"], approved, proposal, adapters=chosen)
