"""Logs: bound to ids, JSON for the daemon, console for the CLI, never content."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
import structlog
from structlog.testing import capture_logs

from heinzel.errors import HeinzelError
from heinzel.logs import (
    CONTENT_KEYS,
    bind_heinzel,
    bind_turn,
    configure_logging,
    drop_content,
    get_logger,
)

HZ_ID = "hz-01JBCDEFGHJKMNPQRSTVWXYZ01"
FRIDAY = datetime(2026, 10, 30, 15, 0, tzinfo=UTC)


@pytest.fixture(autouse=True)
def reset_structlog() -> Iterator[None]:
    structlog.reset_defaults()
    yield
    structlog.reset_defaults()


class TestBinding:
    def test_heinzel_and_turn_ids_are_bound(self) -> None:
        """Every line of a bound logger carries the heinzel and turn ids."""
        with capture_logs() as logs:
            log = bind_turn(bind_heinzel(get_logger(), HZ_ID), "t-1")
            log.info("turn.started", cause="schedule")
        assert logs == [
            {
                "event": "turn.started",
                "log_level": "info",
                "heinzel": HZ_ID,
                "turn": "t-1",
                "cause": "schedule",
            }
        ]

    def test_binding_a_non_id_is_refused(self) -> None:
        """A name instead of an id is a coded error, not a silently wrong key."""
        with pytest.raises(HeinzelError) as refused:
            bind_heinzel(get_logger(), "weekly-report")
        assert refused.value.code == "HZH003"


class TestNoContent:
    @pytest.mark.parametrize("key", sorted(CONTENT_KEYS))
    def test_content_keys_are_dropped(self, key: str) -> None:
        """A content-ish key never reaches the captured line; its name is recorded."""
        with capture_logs(processors=[drop_content]) as logs:
            get_logger().info("draft.placed", size=120, **{key: "Dear Priya, secret"})
        assert logs == [
            {"event": "draft.placed", "log_level": "info", "size": 120, "dropped_keys": [key]}
        ]

    def test_other_keys_pass(self) -> None:
        """Ids, sizes and hashes are kept and nothing is marked dropped."""
        event = drop_content(None, "info", {"event": "x", "hash": "ab", "size": 3})
        assert event == {"event": "x", "hash": "ab", "size": 3}


class TestRendering:
    def test_daemon_writes_json_lines(self) -> None:
        """One JSON object per line, with the clock's timestamp and no content."""
        stream = io.StringIO()
        configure_logging("daemon", stream=stream, clock=lambda: FRIDAY)
        bind_heinzel(get_logger(), HZ_ID).info("tick", woke=2, prompt="secret")
        [line] = stream.getvalue().splitlines()
        assert json.loads(line) == {
            "event": "tick",
            "heinzel": HZ_ID,
            "level": "info",
            "ts": "2026-10-30T15:00:00.000Z",
            "woke": 2,
            "dropped_keys": ["prompt"],
        }

    def test_cli_writes_readable_lines(self) -> None:
        """The console line has the event and key=value pairs, not JSON, not content."""
        stream = io.StringIO()
        configure_logging("cli", stream=stream, clock=lambda: FRIDAY)
        get_logger().warning("cap reached", heinzel=HZ_ID, body="secret")
        line = stream.getvalue()
        assert "cap reached" in line and f"heinzel={HZ_ID}" in line
        assert "secret" not in line
        assert not line.startswith("{")

    def test_levels_below_the_threshold_are_dropped(self) -> None:
        """At level warning, info lines are not written."""
        stream = io.StringIO()
        configure_logging("daemon", stream=stream, clock=lambda: FRIDAY, level="warning")
        get_logger().info("quiet")
        assert stream.getvalue() == ""

    def test_unknown_level_is_coded(self) -> None:
        """A level name logging doesn't know is HZH020."""
        with pytest.raises(HeinzelError) as refused:
            configure_logging("cli", stream=io.StringIO(), clock=lambda: FRIDAY, level="loud")
        assert refused.value.code == "HZH020"
