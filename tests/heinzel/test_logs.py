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
    enabled,
    get_logger,
    log_machines,
)
from machines.telemetry import logs as machines_logs

HZ_ID = "hz-01JBCDEFGHJKMNPQRSTVWXYZ01"
FRIDAY = datetime(2026, 10, 30, 15, 0, tzinfo=UTC)


@pytest.fixture(autouse=True)
def reset_structlog() -> Iterator[None]:
    structlog.reset_defaults()
    yield
    structlog.reset_defaults()
    machines_logs.configure_later(None)


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


class TestLater:
    """``later``: structlog is configured by the first line at the level, hz's or machines'."""

    def test_a_level_below_is_not_enabled_while_waiting(self) -> None:
        """`enabled` answers from the waiting level (so a caller skips making a logger)."""
        stream = io.StringIO()
        configure_logging("cli", stream=stream, clock=lambda: FRIDAY, level="warning", later=True)
        assert not structlog.is_configured()
        assert (enabled("info"), enabled("warning"), enabled("error")) == (False, True, True)
        assert not structlog.is_configured()

    def test_machines_lines_follow_the_waiting_configuration(self) -> None:
        """After `log_machines`, a `machines` warning configures logging and is written
        to hz's stream; an info line below the level is dropped without configuring it."""
        stream = io.StringIO()
        configure_logging("cli", stream=stream, clock=lambda: FRIDAY, level="warning", later=True)
        log_machines()
        machines_logs.info("effect.settled", key="k1")
        assert not structlog.is_configured()
        machines_logs.warning("effect.failed", key="k2")
        assert structlog.is_configured()
        assert "effect.failed" in stream.getvalue() and "key=k2" in stream.getvalue()
        assert "effect.settled" not in stream.getvalue()

    def test_machines_are_silent_without_a_host_configuration(self) -> None:
        """A host that configured nothing gets no line from `machines` (and no structlog
        configured on its behalf)."""
        machines_logs.warning("effect.failed", key="k2")
        assert not structlog.is_configured()

    def test_a_capture_configured_meanwhile_stands(self) -> None:
        """A configuration made by someone else before the first line (a test's capture)
        is kept: the waiting one is dropped, and the line goes to the capture."""
        stream = io.StringIO()
        configure_logging("cli", stream=stream, clock=lambda: FRIDAY, level="warning", later=True)
        log_machines()
        with capture_logs() as logs:
            assert enabled("info")
            machines_logs.warning("effect.failed", key="k3")
        assert [entry["event"] for entry in logs] == ["effect.failed"]
        assert stream.getvalue() == ""
