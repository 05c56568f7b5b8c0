"""A steering message journalled for a turn reaches its next model request."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from heinzel.turns import Turns, default_adapters
from ledger.bodies import Bodies
from ledger.spine import read_events
from machines import content_hash

from .test_crash import _fresh, _wake


class TestSteering:
    """`turn.steered` (what `Session.message` writes) delivered by the resumed think step."""

    def test_a_steer_reaches_the_model(
        self, make_service: Callable[..., Any], tmp_path_factory: Any
    ) -> None:
        """Killed right after think started, steered, resumed: the body has the message."""
        service, heinzel_id, _ = make_service()
        home = service.home.root
        assert _wake(home, "after:step.started", tmp_path_factory.mktemp("env")) == 137
        service = _fresh(home)
        turn = next(e.turn for e in read_events(service.home.spine_path(heinzel_id)) if e.turn)
        inbox = service.home.inbox_dir(heinzel_id)
        message = {"request": "rq-steer", "message": "mention the rounding fix first"}
        (inbox / "rq-steer.json").write_text(json.dumps(message), encoding="utf-8")
        with service.hold_spine(heinzel_id) as spine:
            steer = {"request_id": "rq-steer", "hash": content_hash(message["message"])}
            spine.append("turn.steered", steer, turn=str(turn))
        state = Turns(service).resume_turn(
            heinzel_id, str(turn), "recovery", adapters=default_adapters(service.settings)
        )
        assert state is not None and state.disposition == "drafted"
        body = Bodies(service.home.session_dir(heinzel_id)).read(str(turn)) or []
        assert "mention the rounding fix first" in json.dumps(body)
