"""The turn host's coded errors: each path ends in its code, never a traceback."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from heinzel.config import HeinzelSettings, Settings
from heinzel.errors import HeinzelError
from heinzel.service import Service
from heinzel.store.home import Home
from heinzel.store.sources import TickFetch
from heinzel.turns import Turns, default_adapters
from machines import Wake, keys

from .conftest import CONTRACT, NOW


class TestErrors:
    """HZH201 to HZH203, and the lifecycle's HZH050 for wake."""

    def test_an_input_missing_from_the_cache_is_fetched_again(
        self, make_service: Callable[..., Any]
    ) -> None:
        """Staged by a tick that did not stage it (or a power cut took the entry, which is
        written without an fsync): gather fetches it again and the turn goes on; when that
        fetch fails, the turn fails with the source's own code."""
        service, heinzel_id, folder = make_service()
        wake = Wake("schedule", keys.schedule(heinzel_id, "s1"))
        (state,) = Turns(service).run_wakes(
            heinzel_id,
            [wake],
            adapters=default_adapters(service.settings),
            staged=TickFetch(staged=[], fetches=0),
        )
        assert (state.state, state.disposition) == ("finished", "drafted")
        assert len(list(service.home.sources_dir.glob("*.json"))) == 1
        for entry in service.home.sources_dir.glob("*.json"):
            entry.unlink()
        (folder / "notes.txt").unlink()
        (state,) = Turns(service).run_wakes(
            heinzel_id,
            [Wake("schedule", keys.schedule(heinzel_id, "s2"))],
            adapters=default_adapters(service.settings),
            staged=TickFetch(staged=[], fetches=0),
        )
        assert (state.state, state.error) == ("failed", "HZH110")  # files.read: no such file

    def test_no_documents_adapter_fails_the_turn(self, make_service: Callable[..., Any]) -> None:
        """A draft with nowhere to place it: the turn fails with HZH201."""
        service, heinzel_id, _ = make_service()
        adapters = {k: v for k, v in default_adapters(service.settings).items() if k != "documents"}
        result = Turns(service).wake(heinzel_id, None, adapters=adapters)
        assert (result["state"], result["error"]) == ("failed", "HZH201")

    def test_a_proposed_one_has_no_version_to_run(self, tmp_path: Path) -> None:
        """run_wakes for one with no approved version: HZH202, and no turn."""
        (tmp_path / "c.prose.md").write_text(CONTRACT.format(render="always", done_when="x"))
        settings = Settings(heinzel=HeinzelSettings(home=tmp_path / "home"))
        service = Service(Home(tmp_path / "home"), lambda: NOW, settings, owner="me")
        heinzel_id = service.create_from_files([str(tmp_path / "c.prose.md")])[0]["id"]
        wake = Wake("asked", keys.asked(heinzel_id, "r1"))
        with pytest.raises(HeinzelError) as raised:
            Turns(service).run_wakes(heinzel_id, [wake], adapters=default_adapters(settings))
        assert raised.value.code == "HZH202"
        assert service.show(heinzel_id)["turns"] == []

    def test_a_paused_one_does_not_wake(self, make_service: Callable[..., Any]) -> None:
        """`wake` follows the lifecycle: a paused one is HZH050."""
        service, heinzel_id, _ = make_service()
        service.lifecycle(heinzel_id, "pause")
        with pytest.raises(HeinzelError) as raised:
            Turns(service).wake(heinzel_id, None, adapters=default_adapters(service.settings))
        assert raised.value.code == "HZH050"

    def test_resuming_an_unknown_turn_is_coded(self, make_service: Callable[..., Any]) -> None:
        """A turn that is not in the session: HZH203 (HZH202 is in test_cli)."""
        service, heinzel_id, _ = make_service()
        with pytest.raises(HeinzelError) as raised:
            Turns(service).resume_turn(
                heinzel_id, "tn-unknown", "recovery", adapters=default_adapters(service.settings)
            )
        assert raised.value.code == "HZH203"
