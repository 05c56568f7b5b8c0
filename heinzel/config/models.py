"""The configuration's pydantic models: what `heinzel.config` validates by when its own
check of a layer's values is not sure (a string where a number or a duration goes, a
value out of range, a missing price field), so every coercion and every message is
pydantic's, as it was. Loaded only then: an idle tick reads its settings without
importing pydantic (issue 42). `tests/heinzel/test_config.py` holds these fields to
`heinzel.config`'s dataclasses."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from heinzel.contract.types import Duration, parse_duration

__all__ = ["HeinzelModel", "PriceModel", "SettingsModel", "TeamModel"]

NonNegative = Annotated[float, Field(ge=0)]
Positive = Annotated[int, Field(ge=1)]


class _Table(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)


class PriceModel(_Table):
    input: NonNegative
    output: NonNegative


class HeinzelModel(_Table):
    home: Path
    model: str = "offline"
    model_fast: str | None = None
    model_best: str | None = None
    base_url: str | None = None
    request_timeout: Duration = Field(default_factory=lambda: timedelta(seconds=60))
    max_usd: NonNegative = 1.0
    max_usd_per_day: NonNegative = 5.0
    max_wakes_per_tick: Positive = 10
    max_resumes: Annotated[int, Field(ge=0)] = 3
    max_wait: Duration = Field(default_factory=lambda: parse_duration("7d"))
    retention_days: Annotated[int, Field(ge=0)] = 90
    summary_after_turns: Positive = 20
    summary_keep_turns: Annotated[int, Field(ge=0)] = 5
    approver: str | None = None
    fixture_sources: Path | None = None
    lock_timeout: Duration = Field(default_factory=lambda: timedelta(seconds=10))
    prices: dict[str, PriceModel] = Field(default_factory=dict)
    skills: list[Path] = Field(default_factory=list)

    @field_validator("request_timeout")
    @classmethod
    def _some_time(cls, value: timedelta) -> timedelta:
        if value.total_seconds() < 1:
            raise ValueError("request_timeout is at least 1s")
        return value


class TeamModel(_Table):
    repository: str | None = None
    handle: str | None = None
    members: list[str] = Field(default_factory=list)
    delegates: list[str] = Field(default_factory=list)
    interval: Duration = Field(default_factory=lambda: parse_duration("5m"))
    max_skew: Duration = Field(default_factory=lambda: timedelta(seconds=30))
    push_retries: Positive = 5
    orphan_grace: Duration = Field(default_factory=lambda: timedelta(days=1))
    signing_key: str | None = None
    allowed_signers: str | None = None


class SettingsModel(_Table):
    heinzel: HeinzelModel
    team: TeamModel = Field(default_factory=TeamModel)
    runners: dict[str, dict[str, Any]] = Field(default_factory=dict)
    adapters: dict[str, dict[str, Any]] = Field(default_factory=dict)
