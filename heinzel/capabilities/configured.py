"""Which adapter answers each capability: the ``[adapters.<capability>]`` tables.

Each table names a ``backend`` and that backend's keys (docs/adapters.md):

- ``github`` for ``code-host`` and ``tracker``: ``base_url`` (GitHub Enterprise's API root,
  default ``https://api.github.com/``), ``token_env`` (a variable holding the token; else
  ``GH_TOKEN``, ``GITHUB_TOKEN``, ``gh auth token``).
- ``caldav`` for ``calendar``: ``url``, ``username``, ``password_env``, ``calendar`` (its
  display name; default the first), ``attendee`` (the user's address: events they
  declined are left out).
- ``ics`` for ``calendar``: ``path`` (a ``.ics`` file) or ``url`` (``https`` or ``http``),
  ``attendee``.
- ``fixture`` for ``code-host``, ``tracker``, ``calendar``, ``chat``: ``folder``.
- ``git``, ``files`` for ``git``, ``files`` and ``documents``: no keys (the default).

`parse_adapter_tables` validates them (``HZH015``); `build_adapters` builds the adapter
map a tick or a wake uses; `describe_adapters` is what ``hz system doctor`` lists. A
secret is never a key here: only the name of the variable that holds it. `secret_origin`
is where a GitHub or CalDAV table's secret comes from, in the order the adapter reads it
(`secret_variables`, then hz's credential store, then for GitHub ``gh auth token``): the
one answer the adapters, ``hz system doctor`` and ``hz system credential list`` share.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from heinzel.capabilities.builtin import builtin_adapters
from heinzel.capabilities.fixture_sources import fixture_sources
from heinzel.capabilities.registry import DEFAULT_REGISTRY
from heinzel.capabilities.targets import Protected
from heinzel.errors import HeinzelError

__all__ = [
    "BACKENDS",
    "AdapterTable",
    "build_adapters",
    "describe_adapters",
    "parse_adapter_tables",
    "probe_adapters",
    "secret_origin",
    "secret_variables",
]

BACKENDS: Mapping[str, tuple[str, ...]] = {
    "code-host": ("github", "fixture"),
    "tracker": ("github", "fixture"),
    "calendar": ("caldav", "ics", "fixture"),
    "chat": ("fixture",),
    "files": ("files",),
    "git": ("git",),
    "documents": ("files",),
}
"""The backends each capability may name, the default first where it has one."""

_DEFAULTS = {"files": "files", "git": "git", "documents": "files"}

Stored = Callable[[str], str | None]
"""A stored credential by provider (``github``, ``caldav``): hz's credential store, which
this layer may not import (`heinzel.store.credentials.stored_secret` is passed in)."""


def _none(_provider: str) -> str | None:
    return None


class _Table(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)


class GitHubTable(_Table):
    """``backend = "github"``."""

    backend: Literal["github"]
    base_url: str | None = None
    token_env: str | None = None


class CalDAVTable(_Table):
    """``backend = "caldav"``."""

    backend: Literal["caldav"]
    url: str
    username: str | None = None
    password_env: str | None = None
    calendar: str | None = None
    attendee: str | None = None


class ICSTable(_Table):
    """``backend = "ics"``: exactly one of ``path`` and ``url``."""

    backend: Literal["ics"]
    path: Path | None = None
    url: str | None = None
    attendee: str | None = None


class FixtureTable(_Table):
    """``backend = "fixture"``."""

    backend: Literal["fixture"]
    folder: Path


class PlainTable(_Table):
    """``backend = "git"`` or ``"files"``: nothing to set."""

    backend: Literal["git", "files"]


AdapterTable = Annotated[
    GitHubTable | CalDAVTable | ICSTable | FixtureTable | PlainTable,
    Field(discriminator="backend"),
]
_ADAPTER = TypeAdapter[Any](AdapterTable)


def parse_adapter_tables(raw: Mapping[str, Any], where: str = "") -> dict[str, Any]:
    """The validated tables by capability, or ``HZH015`` naming the table and the fix."""
    out: dict[str, Any] = {}
    for capability, table in raw.items():
        label = f"[adapters.{capability}]" + (f" (from {where})" if where else "")
        allowed = BACKENDS.get(capability)
        if allowed is None:
            raise HeinzelError(
                "HZH015",
                f"{label}: no such capability",
                f"adapters can be chosen for: {', '.join(sorted(BACKENDS))}",
            )
        try:
            parsed = _ADAPTER.validate_python(table)
        except ValidationError as exc:
            raise _refused(label, capability, table, exc.errors()[0]) from None
        if parsed.backend not in allowed:
            raise HeinzelError(
                "HZH015",
                f"{label}: {capability} can't use backend {parsed.backend}",
                f"backend is one of: {', '.join(allowed)}",
            )
        if isinstance(parsed, ICSTable) and (parsed.path is None) == (parsed.url is None):
            raise HeinzelError(
                "HZH015", f"{label}: give exactly one of path and url", "path = '~/work.ics'"
            )
        out[capability] = parsed
    return out


_TABLES: Mapping[str, type[_Table]] = {
    "github": GitHubTable,
    "caldav": CalDAVTable,
    "ics": ICSTable,
    "fixture": FixtureTable,
    "git": PlainTable,
    "files": PlainTable,
}
_SECRETS = {
    "github": ("token_env", "MY_GITHUB_TOKEN"),
    "caldav": ("password_env", "HZ_CALDAV_PASSWORD"),
}
_SECRET_WORDS = ("token", "password", "secret", "key", "pat", "credential")


def _refused(label: str, capability: str, table: Any, error: Any) -> HeinzelError:
    """``HZH015`` for a table that does not validate: the key, in the table's words, and a
    hint that fixes it (the backends, the backend's keys, where a secret goes instead)."""
    allowed = BACKENDS[capability]
    if not isinstance(table, Mapping):
        return HeinzelError(
            "HZH015",
            f"{label} is not a table",
            f'write it as a table: [adapters.{capability}] and backend = "{allowed[0]}" below it',
        )
    backend = table.get("backend")
    model = _TABLES.get(backend) if isinstance(backend, str) else None
    if model is None or error["type"].startswith("union_tag"):
        shown = "missing" if backend is None else repr(backend)
        close = difflib.get_close_matches(str(backend), allowed, n=1)
        mean = f"did you mean {close[0]!r}? " if close else ""
        return HeinzelError(
            "HZH015",
            f"{label}: backend is {shown}",
            f"{mean}{capability}'s backend is one of: {', '.join(allowed)}",
        )
    key = ".".join(str(part) for part in error["loc"][1:])
    keys = sorted(name for name in model.model_fields if name != "backend")
    takes = f"backend {backend} takes: {', '.join(keys) or 'no other key'} (docs/adapters.md)"
    if error["type"] == "missing":
        return HeinzelError("HZH015", f"{label}: missing key {key}", f"add {key}; {takes}")
    if error["type"] != "extra_forbidden":
        return HeinzelError("HZH015", f"{label}: {key}: {error['msg']}", takes)
    secret = _SECRETS.get(str(backend))
    if secret and any(word in key.lower() for word in _SECRET_WORDS) and key != secret[0]:
        return HeinzelError(
            "HZH015",
            f"{label}: {key} would keep a secret in the configuration",
            f'name the variable that holds it instead, {secret[0]} = "{secret[1]}", or store '
            f"it with `hz system credential set {backend}`",
        )
    close = difflib.get_close_matches(key, keys, n=1)
    mean = f"did you mean {close[0]!r}? " if close else ""
    return HeinzelError("HZH015", f"{label}: unknown key {key}", mean + takes)


_DEFAULT_VARIABLES: Mapping[str, tuple[str, ...]] = {
    "github": ("GH_TOKEN", "GITHUB_TOKEN"),
    "caldav": ("HZ_CALDAV_PASSWORD",),
}


def secret_variables(table: Any) -> tuple[str, ...]:
    """The variables a GitHub or CalDAV table's secret is read from, in order: its
    ``token_env`` / ``password_env``, then the backend's usual ones; none for others."""
    named = getattr(table, "token_env", None) or getattr(table, "password_env", None)
    usual = _DEFAULT_VARIABLES.get(str(getattr(table, "backend", "")), ())
    return tuple(dict.fromkeys(v for v in (named, *usual) if v))


def secret_origin(table: Any, environ: Mapping[str, str], stored: Stored) -> str:
    """Where the adapter of ``table`` takes its secret from: ``env:NAME`` (the first of
    `secret_variables` that is set), ``stored`` (hz's credential store), for GitHub
    ``gh`` (``gh auth token``, if gh is logged in), else ``none``."""
    found = next((v for v in secret_variables(table) if environ.get(v)), None)
    if found:
        return f"env:{found}"
    backend = str(getattr(table, "backend", ""))
    if backend in _DEFAULT_VARIABLES and stored(backend):
        return "stored"
    return "gh" if backend == "github" else "none"


def build_adapters(
    tables: Mapping[str, Any],
    *,
    approver: str,
    http_cache: Path | None,
    environ: Mapping[str, str],
    fixtures: Path | None = None,
    stored: Stored = _none,
    asset_names: Path | None = None,
    protected: Protected | None = None,
) -> dict[str, object]:
    """The adapter map: files, git and documents; the fixture sources when ``fixtures``
    is set; then each configured table's backend for its capability (secrets from the
    environment, else ``stored``). ``protected``: hz's own places, which files and
    documents never read or write (`heinzel.capabilities.targets`)."""
    adapters = builtin_adapters(
        approver=approver, fixtures=fixtures, asset_names=asset_names, protected=protected
    )
    clients: dict[tuple[str | None, str | None], Any] = {}
    for capability, table in parse_adapter_tables(tables).items():
        if isinstance(table, FixtureTable):
            folder = table.folder.expanduser()
            adapters[capability] = fixture_sources(folder, protected)[capability]
        elif isinstance(table, GitHubTable):
            from heinzel.capabilities.github import github_code_host, github_token, github_tracker
            from heinzel.capabilities.github_http import GitHubClient

            key = (table.base_url, table.token_env)
            if key not in clients:
                token = github_token(
                    environ,
                    base_url=table.base_url,
                    variables=secret_variables(table),
                    stored=stored,
                )
                cache = None if http_cache is None else http_cache / "github"
                clients[key] = GitHubClient(token, base_url=table.base_url, cache_dir=cache)
            make = github_code_host if capability == "code-host" else github_tracker
            adapters[capability] = make(clients[key])
        elif isinstance(table, CalDAVTable | ICSTable):
            from heinzel.capabilities.calendars import calendar_adapter

            password = None
            if isinstance(table, CalDAVTable):
                origin = secret_origin(table, environ, stored)
                if origin.startswith("env:"):
                    password = environ[origin.removeprefix("env:")]
                elif origin == "stored":
                    password = stored("caldav")
            cache = None if http_cache is None else http_cache / "calendar"
            adapters[capability] = calendar_adapter(table, password=password, cache_dir=cache)
    return adapters


def describe_adapters(
    tables: Mapping[str, Any],
    *,
    fixtures: Path | None,
    environ: Mapping[str, str],
    stored: Stored = _none,
) -> list[dict[str, Any]]:
    """For ``hz system doctor``: every capability, its adapter, and whether it is set up."""
    parsed = parse_adapter_tables(tables)
    rows = []
    for capability in DEFAULT_REGISTRY.names():
        table = parsed.get(capability)
        if table is not None:
            backend, detail = table.backend, _detail(table, environ, stored)
        elif capability in _DEFAULTS:
            backend, detail = _DEFAULTS[capability], "built in"
        elif fixtures is not None and "fixture" in BACKENDS.get(capability, ()):
            backend, detail = "fixture", f"{fixtures} (HZ_FIXTURE_SOURCES)"
        else:
            backend, detail = "none", "not configured: inputs from it fail with HZH104"
        rows.append(
            {
                "name": f"adapter {capability}",
                "ok": True,
                "configured": backend != "none",
                "adapter": backend,
                "detail": f"{backend}: {detail}" if backend != "none" else detail,
            }
        )
    return rows


def probe_adapters(
    tables: Mapping[str, Any], *, environ: Mapping[str, str], stored: Stored = _none
) -> list[dict[str, Any]]:
    """For ``hz system doctor --online``: one request per configured source adapter
    (GitHub's rate limit, once per client however many capabilities share it; CalDAV's
    principal), each a check that names the failure's code."""
    from heinzel.capabilities.errors import CapabilityError

    built = build_adapters(
        tables, approver="owner", http_cache=None, environ=environ, stored=stored
    )
    checks: list[dict[str, Any]] = []
    probed: dict[int, dict[str, Any]] = {}
    for capability, table in parse_adapter_tables(tables).items():
        adapter: Any = built.get(capability)
        target = getattr(adapter, "client", adapter)
        if not isinstance(table, GitHubTable | CalDAVTable) or not hasattr(target, "probe"):
            continue
        if id(target) not in probed:
            try:
                probed[id(target)] = {"ok": True, "detail": str(target.probe())}
            except CapabilityError as exc:
                probed[id(target)] = {
                    "ok": False,
                    "detail": exc.message,
                    "code": exc.code,
                    "fix": exc.hint,
                }
        checks.append({"name": f"adapter {capability} online", **probed[id(target)]})
    return checks


def _detail(table: Any, environ: Mapping[str, str], stored: Stored) -> str:
    if isinstance(table, GitHubTable | CalDAVTable):
        origin = secret_origin(table, environ, stored)
        where = {
            "stored": "hz's credential store",
            "gh": "gh auth token, or none",
            "none": "none",
        }.get(origin, origin.removeprefix("env:"))
    if isinstance(table, GitHubTable):
        return f"{table.base_url or 'https://api.github.com/'}, token from {where}"
    if isinstance(table, CalDAVTable):
        who = f" as {table.username}" if table.username else ""
        password = "no password" if origin == "none" else f"password from {where}"
        return f"{table.url}{who}, {password}"
    if isinstance(table, ICSTable):
        return str(table.path or table.url)
    if isinstance(table, FixtureTable):
        return str(table.folder)
    return "built in"
