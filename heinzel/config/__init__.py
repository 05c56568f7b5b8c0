"""Configuration: TOML in layers, typed as `Settings`, with where each value came from.

Layers, each overriding the one before: the defaults; the site file (``/etc/hz/config.toml``);
the user file (``<user config dir>/hz/config.toml``); the project's ``hz.toml`` (the first
found from the working directory upwards); the file ``HZ_CONFIG`` names; the environment
(`ENV_KEYS`). A project's ``hz.toml`` is someone else's repository, so it may only set the
keys in `PROJECT_KEYS`; everything else it sets (the model, base_url, caps, retention,
prices, runners...) is ignored and reported in `LoadedSettings.ignored`. Unknown keys and
bad values are coded errors naming the file (or the variable). `load_settings` is pure
given its arguments: the command line passes ``os.environ`` and the default paths.
`docs/configuration.md` documents every key.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import field, fields
from datetime import timedelta
from pathlib import Path
from typing import Any

import platformdirs

from heinzel.errors import HeinzelError
from ledger.records import frozen_record

__all__ = [
    "ENV_KEYS",
    "PROJECT_FILE",
    "PROJECT_KEYS",
    "HeinzelSettings",
    "LoadedSettings",
    "Price",
    "Settings",
    "TeamSettings",
    "default_site_path",
    "default_user_path",
    "load_settings",
]

PROJECT_FILE = "hz.toml"
SITE_FILE = Path("/etc/hz/config.toml")

PROJECT_KEYS = frozenset(
    {
        "heinzel.max_wakes_per_tick",
        "heinzel.max_resumes",
        "heinzel.max_wait",
        "heinzel.summary_after_turns",
        "heinzel.summary_keep_turns",
        "heinzel.lock_timeout",
        "heinzel.skills",
    }
)
"""The only keys a project's ``hz.toml`` may set; none of them chooses what runs or spends."""

ENV_KEYS: Mapping[str, str] = {
    "HZ_HOME": "home",
    "HZ_MODEL": "model",
    "HZ_MODEL_FAST": "model_fast",
    "HZ_MODEL_BEST": "model_best",
    "HZ_BASE_URL": "base_url",
    "HZ_REQUEST_TIMEOUT": "request_timeout",
    "HZ_MAX_USD": "max_usd",
    "HZ_MAX_USD_PER_DAY": "max_usd_per_day",
    "HZ_RETENTION_DAYS": "retention_days",
    "HZ_APPROVER": "approver",
    "HZ_FIXTURE_SOURCES": "fixture_sources",
    "HZ_SKILLS": "skills",
}
"""Environment variables and the ``[heinzel]`` key each sets."""


@frozen_record
class Price:
    """What a model costs, in USD per million tokens."""

    input: float
    output: float


@frozen_record
class HeinzelSettings:
    """The ``[heinzel]`` table."""

    home: Path
    model: str = "offline"
    model_fast: str | None = None
    model_best: str | None = None
    base_url: str | None = None
    request_timeout: timedelta = timedelta(seconds=60)
    """How long one attempt at a model request may take (`heinzel.engine.retrying`)."""
    max_usd: float = 1.0
    max_usd_per_day: float = 5.0
    max_wakes_per_tick: int = 10
    max_resumes: int = 3
    max_wait: timedelta = timedelta(days=7)
    retention_days: int = 90
    summary_after_turns: int = 20
    summary_keep_turns: int = 5
    approver: str | None = None
    fixture_sources: Path | None = None
    lock_timeout: timedelta = timedelta(seconds=10)
    prices: dict[str, Price] = field(default_factory=dict)
    skills: list[Path] = field(default_factory=list)
    """Skill directories of every layer, general to specific (`skill_dirs`); unlike the
    other keys, each layer adds to them rather than replacing them."""

    def model_for(self, model_class: str) -> str:
        """The model string for a contract's ``agent.model_class`` hint."""
        if model_class == "fast":
            return self.model_fast or self.model
        if model_class == "best":
            return self.model_best or self.model
        return self.model


@frozen_record
class TeamSettings:
    """``[team]``: the team repository whose ``hz/state`` branch and lease refs carry the
    team Heinzelmännchen's receipts (docs/team.md)."""

    repository: str | None = None
    handle: str | None = None
    members: list[str] = field(default_factory=list)
    delegates: list[str] = field(default_factory=list)
    interval: timedelta = timedelta(minutes=5)
    max_skew: timedelta = timedelta(seconds=30)
    push_retries: int = 5
    orphan_grace: timedelta = timedelta(days=1)
    """How long past its expiry a lease with unsettled claims waits for its holder."""
    signing_key: str | None = None
    """An SSH key that signs every ``hz/state`` commit (git's ``gpg.format ssh``)."""
    allowed_signers: str | None = None
    """An allowed-signers file: each ``hz/state`` line not signed by its writer's key in
    it is quarantined (`heinzel.team.signing`)."""

    @property
    def joined(self) -> bool:
        """Whether this home takes part in a team: ``repository`` and ``handle`` both set."""
        return bool(self.repository and self.handle)


@frozen_record
class Settings:
    """All of hz's configuration. ``runners`` stays raw: the runners package types it.

    Plain dataclasses, checked by `_validate`: reading the settings imports no pydantic
    (an idle tick's largest import). A value `_validate` is not sure of goes through the
    pydantic models of `heinzel.config.models`, which coerce it or say what is wrong."""

    heinzel: HeinzelSettings
    team: TeamSettings = field(default_factory=TeamSettings)
    runners: dict[str, dict[str, Any]] = field(default_factory=dict)
    adapters: dict[str, dict[str, Any]] = field(default_factory=dict)
    """``[adapters.<capability>]`` as written; `heinzel.capabilities.configured` types it."""


@frozen_record
class LoadedSettings:
    """The settings, where each set key came from, and what the project file may not set.

    ``provenance`` maps ``heinzel.<key>``, ``heinzel.prices.<model>``,
    ``runners.<name>`` and ``adapters.<capability>`` to ``default``, ``site:<path>``,
    ``user:<path>``, ``project:<path>``, ``HZ_CONFIG:<path>`` or ``env:<VARIABLE>``.
    """

    settings: Settings
    provenance: Mapping[str, str]
    ignored: tuple[str, ...]
    project: Path | None
    files: tuple[Path, ...]


def default_site_path() -> Path:
    """The site file, ``/etc/hz/config.toml``."""
    return SITE_FILE


def default_user_path() -> Path:
    """The user file, ``<platform user config dir>/hz/config.toml``."""
    return platformdirs.user_config_path("hz") / "config.toml"


def _error(code: str, message: str, hint: str) -> HeinzelError:
    return HeinzelError(code, message, hint)


def _read(path: Path, label: str, *, required: bool) -> dict[str, Any] | None:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        if required:
            raise _error(
                "HZH011",
                f"{label} names a file that does not exist: {path}",
                "create it or unset the variable",
            ) from None
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise _error("HZH010", f"can't read {path}: {exc}", "check the file") from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise _error("HZH012", f"{path} is not valid TOML: {exc}", "fix the TOML syntax") from None


SKILLS_DIR = "skills"
"""The skill directory beside each layer's file: ``/etc/hz/skills``, ``<user config
dir>/hz/skills``, ``skills/`` beside the project's ``hz.toml``."""


def _skill_dirs(value: Any, base: Path, source: str) -> list[Path]:
    """A layer's ``skills`` (a list of paths, or ``HZ_SKILLS`` split on ``os.pathsep``),
    relative paths against ``base``."""
    if isinstance(value, str):
        value = [part for part in value.split(os.pathsep) if part]
    if not isinstance(value, list) or not all(isinstance(one, str) for one in value):
        raise _error(
            "HZH014",
            f"bad value for heinzel.skills (from {source}): a list of directories",
            'write skills = ["path/to/skills"]',
        )
    return [(base / Path(one).expanduser()) for one in value]


_HEINZEL_KEYS = frozenset(one.name for one in fields(HeinzelSettings))
_TEAM_KEYS = frozenset(one.name for one in fields(TeamSettings))


def _flatten(data: dict[str, Any], path: Path) -> dict[str, Any]:
    """``{"heinzel.model": ..., "heinzel.prices.<m>": {...}, "runners.<n>": {...}}``."""
    flat: dict[str, Any] = {}
    for table, value in data.items():
        if table not in ("heinzel", "runners", "adapters", "team") or not isinstance(value, dict):
            raise _unknown(
                str(table),
                path,
                "the tables are [heinzel], [team], [runners.<name>] and [adapters.<capability>]",
            )
        for key, item in value.items():
            name = f"{table}.{key}"
            if table == "team":
                if key not in _TEAM_KEYS:
                    raise _unknown(
                        name, path, f"the keys of [team] are: {', '.join(sorted(_TEAM_KEYS))}"
                    )
                flat[name] = item
            elif table in ("runners", "adapters"):
                if not isinstance(item, dict):
                    raise _unknown(name, path, f"write each as a table [{table}.<name>]")
                if table == "adapters":
                    # the adapters' tables load with the first file that sets one
                    from heinzel.capabilities.configured import parse_adapter_tables

                    parse_adapter_tables({key: item}, str(path))
                flat[name] = item
            elif key == "prices" and isinstance(item, dict):
                flat.update({f"{name}.{model}": price for model, price in item.items()})
            elif key in _HEINZEL_KEYS:
                flat[name] = item
            else:
                allowed = ", ".join(sorted(_HEINZEL_KEYS))
                raise _unknown(name, path, f"the keys of [heinzel] are: {allowed}")
    return flat


def _unknown(key: str, path: Path, hint: str) -> HeinzelError:
    return _error("HZH013", f"unknown key {key} in {path}", hint)


def _find_project(cwd: Path) -> Path | None:
    for folder in (cwd, *cwd.parents):
        candidate = folder / PROJECT_FILE
        if candidate.is_file():
            return candidate
    return None


def load_settings(
    *,
    env: Mapping[str, str],
    cwd: Path,
    site: Path | None,
    user: Path | None,
    data_dir: Path | None = None,
) -> LoadedSettings:
    """Read every layer and return the typed settings, or raise a ``HZH01x`` error.

    ``site`` and ``user`` are the files to read (None skips the layer; a missing file is
    an empty layer). ``data_dir`` is the default ``home`` when nothing sets one; None means
    the platform's user data dir for ``hz``.
    """
    values: dict[str, Any] = {}
    provenance: dict[str, str] = {}
    files: list[Path] = []
    ignored: list[str] = []
    project = _find_project(cwd)
    config = env.get("HZ_CONFIG")
    layers = [("site", site, False), ("user", user, False), ("project", project, False)]
    layers.append(("HZ_CONFIG", cwd / config if config else None, True))
    skills: list[Path] = []
    for label, path, required in layers:
        if path is None:
            continue
        if label != "HZ_CONFIG":
            skills.append(path.parent / SKILLS_DIR)
        data = _read(path, label, required=required)
        if data is None:
            continue
        files.append(path)
        for key, value in _flatten(data, path).items():
            if label == "project" and key not in PROJECT_KEYS:
                ignored.append(key)
                continue
            if key == "heinzel.skills":
                skills.extend(_skill_dirs(value, path.parent, f"{label}:{path}"))
            values[key] = _home(key, value, path.parent, env)
            provenance[key] = f"{label}:{path}"
    for variable, key in ENV_KEYS.items():
        if not env.get(variable):  # unset or empty: `export HZ_HOME=` is no home in the cwd
            continue
        if variable == "HZ_SKILLS":
            skills.extend(_skill_dirs(env[variable], cwd, f"env:{variable}"))
            provenance["heinzel.skills"] = f"env:{variable}"
        else:
            values[f"heinzel.{key}"] = _home(f"heinzel.{key}", env[variable], cwd, env)
            provenance[f"heinzel.{key}"] = f"env:{variable}"
    if "heinzel.home" not in values:
        values["heinzel.home"] = data_dir or platformdirs.user_data_path("hz")
        provenance["heinzel.home"] = "default"
    values["heinzel.skills"] = list(dict.fromkeys(skills))
    settings = _validate(values, provenance)
    return LoadedSettings(settings, provenance, tuple(ignored), project, tuple(files))


def _home(key: str, value: Any, base: Path, env: Mapping[str, str]) -> Any:
    """``home`` as a path: ``~/`` is ``$HOME``, a relative path is relative to ``base``."""
    if key != "heinzel.home" or not isinstance(value, str):
        return value
    if value.startswith("~/") and "HOME" in env:
        return Path(env["HOME"]) / value[2:]
    return base / Path(value)


def _validate(values: dict[str, Any], provenance: Mapping[str, str]) -> Settings:
    heinzel: dict[str, Any] = {"prices": {}}
    runners: dict[str, Any] = {}
    adapters: dict[str, Any] = {}
    team: dict[str, Any] = {}
    for key, value in values.items():
        table, _, rest = key.partition(".")
        if table == "runners":
            runners[rest] = value
        elif table == "adapters":
            adapters[rest] = value
        elif table == "team":
            team[rest] = value
        elif rest.startswith("prices."):
            heinzel["prices"][rest.removeprefix("prices.")] = value
        else:
            heinzel[rest] = value
    tables = {"heinzel": heinzel, "runners": runners, "adapters": adapters, "team": team}
    sure = _sure(tables)
    return sure if sure is not None else _by_models(tables, provenance)


def _by_models(table: dict[str, Any], provenance: Mapping[str, str]) -> Settings:
    """The settings as pydantic validates them (`heinzel.config.models`), or the coded
    error naming the key, its source and pydantic's reason."""
    from pydantic import ValidationError

    from heinzel.config.models import SettingsModel

    try:
        model = SettingsModel.model_validate(table)
    except ValidationError as exc:
        error = exc.errors()[0]
        loc = [str(part) for part in error["loc"]]
        price = loc[1:2] == ["prices"]
        key = ".".join(loc[:3] if price else loc[:2])
        source = provenance.get(key, "default")
        where = ".".join(loc)  # the field itself: a price's `output`, not only the price
        if price:
            fix = (
                f'a price has input and output in USD per million tokens: "{loc[2]}" = '
                "{input = 3.0, output = 15.0} (cache_read and cache_write optional)"
            )
        else:
            fix = "see docs/configuration.md for the key's type and range"
        if error["type"] == "extra_forbidden":
            raise _error("HZH013", f"unknown key {where} (from {source})", fix) from None
        if error["type"] == "missing":
            raise _error("HZH014", f"{where} is missing (from {source})", fix) from None
        raise _error(
            "HZH014", f"bad value for {where} (from {source}): {error['msg']}", fix
        ) from None
    found = model.heinzel
    return Settings(
        heinzel=HeinzelSettings(
            **{
                one.name: getattr(found, one.name)
                for one in fields(HeinzelSettings)
                if one.name != "prices"
            },
            prices={k: Price(p.input, p.output) for k, p in found.prices.items()},
        ),
        team=TeamSettings(
            **{one.name: getattr(model.team, one.name) for one in fields(TeamSettings)}
        ),
        runners=model.runners,
        adapters=model.adapters,
    )


def _number(value: Any, least: float) -> bool:
    return type(value) in (int, float) and least <= value < float("inf")


def _count(value: Any, least: int) -> bool:
    return type(value) is int and value >= least


def _text(value: Any) -> bool:
    return type(value) is str


def _texts(value: Any) -> bool:
    return type(value) is list and all(type(one) is str for one in value)


def _time(value: Any, least: float = 0) -> bool:
    return type(value) is timedelta and value.total_seconds() >= least


def _path(value: Any) -> bool:
    return isinstance(value, (str, Path))


_HEINZEL_SURE: Mapping[str, Any] = {
    "home": _path,
    "model": _text,
    "model_fast": _text,
    "model_best": _text,
    "base_url": _text,
    "request_timeout": lambda v: _time(v, 1),
    "max_usd": lambda v: _number(v, 0),
    "max_usd_per_day": lambda v: _number(v, 0),
    "max_wakes_per_tick": lambda v: _count(v, 1),
    "max_resumes": lambda v: _count(v, 0),
    "max_wait": _time,
    "retention_days": lambda v: _count(v, 0),
    "summary_after_turns": lambda v: _count(v, 1),
    "summary_keep_turns": lambda v: _count(v, 0),
    "approver": _text,
    "fixture_sources": _path,
    "lock_timeout": _time,
    "skills": lambda v: type(v) is list and all(isinstance(one, Path) for one in v),
}
_TEAM_SURE: Mapping[str, Any] = {
    "repository": _text,
    "handle": _text,
    "members": _texts,
    "delegates": _texts,
    "interval": _time,
    "max_skew": _time,
    "push_retries": lambda v: _count(v, 1),
    "orphan_grace": _time,
    "signing_key": _text,
    "allowed_signers": _text,
}
_PATHS = frozenset({"home", "fixture_sources"})
_FLOATS = frozenset({"max_usd", "max_usd_per_day"})


def _sure(table: dict[str, Any]) -> Settings | None:
    """The settings when every value is already of its field's type and in its range (what
    a layer's TOML and ``HZ_HOME`` give), or None: then pydantic decides (`_by_models`),
    coercing a string where a number goes, or saying what is wrong. Durations written as
    text go that way too; only the defaults are `timedelta` already."""
    heinzel = dict(table["heinzel"])
    team = table["team"]
    prices = heinzel.pop("prices")
    if "home" not in heinzel:
        return None
    for key, value in heinzel.items():
        sure = _HEINZEL_SURE.get(key)
        if sure is None or not sure(value):
            return None
    for key, value in team.items():
        sure = _TEAM_SURE.get(key)
        if sure is None or not sure(value):
            return None
    for price in prices.values():
        if (
            type(price) is not dict
            or price.keys() != {"input", "output"}
            or not all(_number(one, 0) for one in price.values())
        ):
            return None
    for tables in (table["runners"], table["adapters"]):
        if not all(
            type(one) is dict and all(type(k) is str for k in one) for one in tables.values()
        ):
            return None
    for key in _PATHS & heinzel.keys():
        heinzel[key] = Path(heinzel[key])
    for key in _FLOATS & heinzel.keys():
        heinzel[key] = float(heinzel[key])
    own: dict[str, Any] = {k: list(v) if type(v) is list else v for k, v in team.items()}
    return Settings(
        heinzel=HeinzelSettings(
            **heinzel,
            prices={k: Price(float(p["input"]), float(p["output"])) for k, p in prices.items()},
        ),
        team=TeamSettings(**own),
        runners=dict(table["runners"]),
        adapters=dict(table["adapters"]),
    )
