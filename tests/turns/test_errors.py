"""The turn host's coded errors: each path ends in its code, never a traceback."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from heinzel.errors import HeinzelError
from heinzel.sources import TickFetch
from heinzel.turns import default_adapters
from machines import Wake, keys


class TestErrors:
    """HZH200, HZH201 and HZH203."""

    def test_an_input_missing_from_the_cache_fails_the_turn(
        self, make_service: Callable[..., Any]
    ) -> None:
        """Staged by a tick that did not stage it: the turn fails with HZH200."""
        service, heinzel_id, _ = make_service()
        wake = Wake("schedule", keys.schedule(heinzel_id, "s1"))
        (state,) = service.run_wakes(
            heinzel_id,
            [wake],
            adapters=default_adapters(service.settings),
            staged=TickFetch(staged=[], fetches=0),
        )
        assert (state.state, state.error) == ("failed", "HZH200")

    def test_no_documents_adapter_fails_the_turn(self, make_service: Callable[..., Any]) -> None:
        """A draft with nowhere to place it: the turn fails with HZH201."""
        service, heinzel_id, _ = make_service()
        adapters = {k: v for k, v in default_adapters(service.settings).items() if k != "documents"}
        result = service.wake(heinzel_id, None, adapters=adapters)
        assert (result["state"], result["error"]) == ("failed", "HZH201")

    def test_resuming_an_unknown_turn_is_coded(self, make_service: Callable[..., Any]) -> None:
        """A turn that is not in the session: HZH203 (HZH202 is in test_cli)."""
        service, heinzel_id, _ = make_service()
        with pytest.raises(HeinzelError) as raised:
            service.resume_turn(
                heinzel_id, "tn-unknown", "recovery", adapters=default_adapters(service.settings)
            )
        assert raised.value.code == "HZH203"
