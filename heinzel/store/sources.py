"""The tick's source cache: every input fetched once per tick, staged before anyone wakes.

``<home>/heinzel/sources/<key>.json`` holds, per source (capability, method, args and
window span; the key is the SHA-256 of their canonical JSON), the last fetched result, its
fingerprints per facet, cursor and as_of (ADR 0049, statement 20). `fetch_once` groups
identical requests from many Heinzelmännchen into one fetch, serves a source from the cache
while its recheck is not due, writes every fresh fetch atomically and privately before it
returns (so before any ``turn.started``), and reports which inputs moved against the
fingerprints their watchers last saw. A crash between fetch and wake therefore never
fetches again: the re-run finds the staged result (the same tick, or any tick before the
recheck is due) and still sees the input as moved. The cache is not authoritative: an
entry that is missing, unreadable or fails its hash (``sha256`` of its fetch, checked on
read) costs a refetch. So entries are written without an fsync: only a power cut can take
one, and what it takes is fetched again (a turn past gather whose body lost gather's
record regains it by fetching again, `heinzel.turns.inputs.read_staged`).
`SourceCache.prune` deletes only the files it writes, never follows a link, and is
idempotent.

A source fails alone (ADR 0049, statement 20): whatever its adapter raises, coded or not
(an uncoded exception is `HZH164`, naming its type), is that source's error on each of its
requests, and is kept in its entry (``failed``: code, message, hint, when, how many times
in a row, and ``retry_at``). The tick asks the source again no earlier than ``retry_at``:
what the other side asked for (a rate limit's ``Retry-After`` or reset), and at least a
backoff that doubles with each failure in a row, from a minute up to an hour; until then
the kept error is the answer, without a request. The first fetch that works clears it.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import stat
from collections.abc import Mapping, Sequence
from dataclasses import field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from heinzel.capabilities.documents import absolute_asset
from heinzel.capabilities.errors import CapabilityError
from heinzel.capabilities.protocols import Fetched, ReadCapability, Window
from heinzel.fingerprint import fingerprint
from heinzel.store.home import Home
from ledger.errors import HzError
from ledger.event import canonical, format_ts, parse_ts, sha256_hex
from ledger.files import ensure_private_dir, write_atomic
from ledger.lazy import lazy_pattern
from ledger.records import frozen_record

__all__ = [
    "PATH_ARGS",
    "SourceCache",
    "SourceRequest",
    "Staged",
    "TickFetch",
    "absolute_args",
    "backoff",
    "fetch_once",
    "prune_kept",
    "restage",
    "source_key",
]


_entry_re = lazy_pattern(r"^[0-9a-f]{64}\.json$")
_kept_re = lazy_pattern(r"^([0-9a-f]{64}|rate-limit)\.json$|^\.[0-9a-f]{64}\.json\.tmp-[0-9a-f]+$")
_leftover_re = lazy_pattern(r"^\.[0-9a-f]{64}\.json\.tmp-[0-9a-f]+$")


_NOFOLLOW = os.O_NOFOLLOW | os.O_CLOEXEC
_BACKOFF_FIRST = 60
_BACKOFF_MOST = 3600


PATH_ARGS: Mapping[tuple[str, str], str] = {
    ("files", "read"): "path",
    ("git", "merged_commits"): "repo",
    ("git", "merged_pull_requests"): "repo",
    ("documents", "read"): "doc",
}
"""The args that name a local path (``doc`` as a ``file:`` asset), by capability.method."""


def absolute_args(
    capability: str, method: str, args: Mapping[str, Any], base: Path
) -> dict[str, Any]:
    """``args`` with a relative local path made absolute against ``base`` (the contract's
    folder), so two contracts in different folders naming ``notes.md`` are two sources,
    and the cache key names one file. Other args are returned unchanged."""
    out = dict(args)
    name = PATH_ARGS.get((capability, method))
    value = out.get(name) if name else None
    if name is None or not isinstance(value, str) or not value:
        return out
    if name == "doc":
        out[name] = absolute_asset(value, base)
    elif not Path(value).expanduser().is_absolute():
        out[name] = str(base / value)
    return out


def source_key(
    capability: str, method: str, args: Mapping[str, Any], window: timedelta | None
) -> str:
    """The cache key of a source: the hash of (capability, method, args, window span)."""
    span = None if window is None else int(window.total_seconds())
    return fingerprint({"capability": capability, "method": method, "args": args, "window": span})


@frozen_record
class SourceRequest:
    """One watcher's input, as the tick asks for it.

    ``window`` is the contract's span (``7d``), resolved to a `Window` ending at the tick's
    ``now``; ``recheck`` how stale a cached fetch may be (zero: refetch at every new
    ``now``); ``facet`` the facet watched (None: the whole input); ``last_seen`` the
    fingerprint the watcher's last turn saw (None: never seen, so it moved).
    """

    watcher: str
    input: str
    capability: str
    method: str
    args: Mapping[str, Any] = field(default_factory=dict)
    window: timedelta | None = None
    recheck: timedelta = timedelta(0)
    facet: str | None = None
    last_seen: str | None = None

    @property
    def key(self) -> str:
        """The source's cache key (the same for every watcher of the same source)."""
        return source_key(self.capability, self.method, self.args, self.window)


@frozen_record
class Staged:
    """One request's answer: the fetched input (from the cache or fresh), or the error,
    and whether it moved against ``request.last_seen``."""

    request: SourceRequest
    key: str
    fetched: Fetched | None
    error: HzError | None
    from_cache: bool
    fingerprint: str | None
    moved: bool


@frozen_record
class TickFetch:
    """What `fetch_once` did: one `Staged` per request, in order, and the adapter calls made."""

    staged: list[Staged]
    fetches: int

    def moved(self) -> dict[str, list[str]]:
        """The inputs that moved, by watcher: ``{watcher: [input, ...]}``."""
        out: dict[str, list[str]] = {}
        for item in self.staged:
            if item.moved:
                out.setdefault(item.request.watcher, []).append(item.request.input)
        return out


class SourceCache:
    """The files under ``directory`` (``Home.sources_dir``): one entry per source."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    @classmethod
    def of(cls, home: Home) -> SourceCache:
        """The source cache of an ``HZ_HOME``: ``<home>/heinzel/sources``."""
        return cls(home.sources_dir)

    def path(self, key: str) -> Path:
        """The entry file of ``key``."""
        if not re.fullmatch(r"[0-9a-f]{64}", key):
            raise CapabilityError(
                "HZH150", f"not a source cache key: {key!r}", "use source_key(...) to make one"
            )
        return self.directory / f"{key}.json"

    def get(self, key: str) -> Fetched | None:
        """The staged fetch of ``key``, or None when missing or unreadable (a link, a bad
        file, a fetch whose ``sha256`` does not match it: torn by a power cut): the cache
        is not authoritative, so such an entry only costs a refetch."""
        entry = self._entry(self.path(key).name)
        if entry is None or entry.get("key") != key or not _intact(entry):
            return None
        try:
            return Fetched.from_json(entry["fetched"])
        except (KeyError, TypeError, ValueError):
            return None

    def put(
        self,
        key: str,
        fetched: Fetched,
        *,
        source: Mapping[str, Any] | None = None,
    ) -> None:
        """Stage ``fetched`` under ``key``: atomic (a reader sees the old entry or the new),
        0600 in a 0700 directory, with the ``sha256`` of the fetch, and not fsynced: a
        killed process loses nothing it wrote, and what a power cut takes (the entry, or
        its bytes under its name) is found missing or torn on read and fetched again.
        ``source`` (capability, method, args, window) is kept beside it for people."""
        shown = fetched.to_json()
        entry = {
            "v": 1,
            "key": key,
            "source": dict(source or {}),
            "fetched": shown,
            "sha256": sha256_hex(canonical(shown).encode("utf-8")),
        }
        ensure_private_dir(self.directory)
        data = (canonical(entry) + "\n").encode("utf-8")
        write_atomic(self.path(key), data, sync=False)

    def failure(self, key: str) -> dict[str, Any] | None:
        """The failure kept for ``key`` (code, message, hint, at, retry_at, attempts), or
        None when its last fetch worked (or the entry is missing or unreadable)."""
        entry = self._entry(self.path(key).name)
        if entry is None or entry.get("key") != key:
            return None
        failed = entry.get("failed")
        if not isinstance(failed, dict) or not isinstance(failed.get("retry_at"), str):
            return None
        return failed

    def fail(
        self,
        key: str,
        error: HzError,
        now: datetime,
        *,
        source: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Keep ``error`` as ``key``'s failure, with when to ask again (`backoff`); the
        last good fetch stays beside it. The failure kept."""
        entry = self._entry(self.path(key).name) or {}
        if entry.get("key") != key:
            entry = {}
        before = entry.get("failed")
        attempts = int(before.get("attempts", 0) or 0) + 1 if isinstance(before, dict) else 1
        wait = backoff(attempts, getattr(error, "retry_after", None))
        failed = {
            "code": error.code,
            "message": error.message,
            "hint": error.hint,
            "retryable": bool(getattr(error, "retryable", False)),
            "at": format_ts(now),
            "retry_at": format_ts(now + timedelta(seconds=wait)),
            "attempts": attempts,
        }
        kept = {"v": 1, "key": key, "source": dict(source or entry.get("source") or {})}
        if "fetched" in entry and _intact(entry):
            kept["fetched"] = entry["fetched"]
            if "sha256" in entry:
                kept["sha256"] = entry["sha256"]
        ensure_private_dir(self.directory)
        write_atomic(self.path(key), (canonical({**kept, "failed": failed}) + "\n").encode())
        return failed

    def failures(self) -> list[dict[str, Any]]:
        """Every source whose last fetch failed: its ``source`` (capability, method, args)
        and its kept failure, oldest first; what ``hz system doctor`` reports."""
        try:
            names = sorted(p.name for p in self.directory.iterdir() if _entry_re().match(p.name))
        except OSError:
            return []
        found = []
        for name in names:
            entry = self._entry(name)
            failed = entry.get("failed") if entry is not None else None
            if entry is not None and isinstance(failed, dict):
                found.append({"source": entry.get("source") or {}, "failed": failed})
        return sorted(found, key=lambda f: str(f["failed"].get("at")))

    def staged(self, key: str, fingerprint: str) -> Fetched | None:
        """The staged fetch of ``key`` if its whole fingerprint is ``fingerprint``: what
        gather reads instead of fetching again when it resumes a woken turn."""
        found = self.get(key)
        return found if found is not None and found.fingerprint == fingerprint else None

    def prune(self, now: datetime, retention_days: int) -> list[str]:
        """Delete entries fetched more than ``retention_days`` before ``now`` (0 keeps all),
        unreadable entries, and write leftovers of a crash older than that. Only names hz
        writes are touched, links are never followed, and a second call deletes nothing.
        Returns the names deleted, sorted."""
        if retention_days <= 0:
            return []
        cutoff = now - timedelta(days=retention_days)
        try:
            fd = os.open(self.directory, os.O_RDONLY | os.O_DIRECTORY | _NOFOLLOW)
        except FileNotFoundError:
            return []
        except OSError as error:
            raise CapabilityError(
                "HZH151",
                f"cannot prune {self.directory}: {error.strerror or error}",
                "it must be hz's own directory, not a link; move the link away",
            ) from None
        deleted = []
        try:
            for entry in os.scandir(fd):
                if not entry.is_file(follow_symlinks=False):
                    continue
                if _entry_re().match(entry.name):
                    found = self._entry(entry.name, dir_fd=fd)
                    as_of = _as_of(found)
                    stale = as_of is None or as_of < cutoff
                elif _leftover_re().match(entry.name):
                    mtime = entry.stat(follow_symlinks=False).st_mtime
                    stale = mtime < cutoff.timestamp()
                else:
                    continue
                if stale:
                    os.unlink(entry.name, dir_fd=fd)
                    deleted.append(entry.name)
            if deleted:
                os.fsync(fd)
        finally:
            os.close(fd)
        return sorted(deleted)

    def _entry(self, name: str, *, dir_fd: int | None = None) -> dict[str, Any] | None:
        where = name if dir_fd is not None else str(self.directory / name)
        try:
            fd = os.open(where, os.O_RDONLY | _NOFOLLOW, dir_fd=dir_fd)
        except OSError:
            return None
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            return None
        with os.fdopen(fd, "rb") as handle:
            try:
                data = json.loads(handle.read().decode("utf-8"))
            except ValueError:
                return None
        return data if isinstance(data, dict) else None


def prune_kept(directory: Path, now: datetime, retention_days: int) -> list[str]:
    """Delete what the source adapters keep between ticks under ``directory``
    (``<home>/heinzel/http``: GitHub's listings, the calendars) written more than
    ``retention_days`` before ``now`` (0 keeps all). Only the names they write, in their
    own folders, are touched; links are never followed. The names deleted, sorted."""
    if retention_days <= 0:
        return []
    cutoff = (now - timedelta(days=retention_days)).timestamp()
    try:
        top = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | _NOFOLLOW)
    except OSError:
        return []
    deleted = []
    try:
        for folder in os.scandir(top):
            if not folder.is_dir(follow_symlinks=False):
                continue
            fd = os.open(folder.name, os.O_RDONLY | os.O_DIRECTORY | _NOFOLLOW, dir_fd=top)
            try:
                for entry in os.scandir(fd):
                    if not _kept_re().match(entry.name) or not entry.is_file(follow_symlinks=False):
                        continue
                    if entry.stat(follow_symlinks=False).st_mtime < cutoff:
                        os.unlink(entry.name, dir_fd=fd)
                        deleted.append(f"{folder.name}/{entry.name}")
            finally:
                os.close(fd)
    finally:
        os.close(top)
    return sorted(deleted)


def _as_of(entry: dict[str, Any] | None) -> datetime | None:
    try:
        if entry and "fetched" not in entry:
            return parse_ts(entry["failed"]["at"])  # a source that never answered
        return parse_ts(entry["fetched"]["as_of"]) if entry else None
    except (KeyError, TypeError, ValueError):
        return None


def backoff(attempts: int, retry_after: float | None = None) -> float:
    """Seconds to leave a failing source alone after its ``attempts``-th failure in a row:
    a minute, doubled each time, at most an hour; or exactly ``retry_after`` when the other
    side said when to ask again (a rate limit's reset, which its HZH160 line names: a
    longer wait would be one the line never mentioned)."""
    if retry_after is not None:
        return float(max(retry_after, 0))
    return float(min(_BACKOFF_FIRST * 2 ** min(max(attempts, 1) - 1, 16), _BACKOFF_MOST))


def _due(cached: Fetched, recheck: timedelta, now: datetime) -> bool:
    """Whether a cached fetch must be refreshed at ``now``: never at its own moment (a
    re-run of the same tick), always when the clock went back, else once ``recheck``
    has passed."""
    as_of = parse_ts(cached.as_of)
    return now != as_of and (now < as_of or now >= as_of + recheck)


def fetch_once(
    requests: Sequence[SourceRequest],
    adapters: Mapping[str, ReadCapability],
    now: datetime,
    *,
    cache: SourceCache,
    respect_backoff: bool = False,
) -> TickFetch:
    """Fetch each distinct source of ``requests`` at most once, stage it, say what moved.

    Requests for the same (capability, method, args, window) share one fetch, refreshed
    at the shortest recheck among them. A source whose adapter fails, with whatever
    exception, is reported as the coded error on each of its requests (they did not move)
    and kept in the cache with when to ask again; the others proceed. With
    ``respect_backoff`` (the tick) a source is not asked before that moment.
    """
    groups: dict[str, list[SourceRequest]] = {}
    for request in requests:
        groups.setdefault(request.key, []).append(request)
    answers: dict[str, tuple[Fetched | None, HzError | None, bool]] = {}
    fetches = 0
    for key, group in groups.items():
        first = group[0]
        cached = cache.get(key)
        recheck = min(request.recheck for request in group)
        if cached is not None and not _due(cached, recheck, now):
            answers[key] = (cached, None, True)
            continue
        failed = cache.failure(key) if respect_backoff else None
        if failed is not None and _waiting(failed, now):
            answers[key] = (None, _still_failing(failed), True)
            continue
        adapter = adapters.get(first.capability)
        if adapter is None:
            answers[key] = (None, _no_adapter(first.capability), False)
            continue
        window = None if first.window is None else Window.ending_at(now, first.window)
        source = {
            "capability": first.capability,
            "method": first.method,
            "args": dict(first.args),
            "window": None if window is None else window.to_json(),
        }
        fetches += 1
        try:
            fresh = adapter.fetch(first.method, first.args, window, now=now)
        except HzError as error:
            answers[key] = (None, _kept(cache, key, error, now, source), False)
            continue
        except Exception as error:  # one source's bug is that source's failure
            coded = CapabilityError(
                "HZH164",
                f"{first.capability}.{first.method} failed unexpectedly: "
                f"{type(error).__name__}: {str(error)[:200]}",
                "the source's answer is one hz can't read; it is asked again later "
                "(a bug in hz if it stays: report it with `hz system daemon tick --json`)",
                retryable=True,
            )
            answers[key] = (None, _kept(cache, key, coded, now, source), False)
            continue
        try:
            cache.put(key, fresh, source=source)
        except HzError as error:
            answers[key] = (None, error, False)
            continue
        answers[key] = (fresh, None, False)
    staged = [_staged(request, *answers[request.key]) for request in requests]
    return TickFetch(staged=staged, fetches=fetches)


def _intact(entry: Mapping[str, Any]) -> bool:
    """Whether an entry's fetch is the one it was written with: its ``sha256`` matches (an
    entry written before the hash was kept has none, and is taken as it is)."""
    kept = entry.get("sha256")
    if kept is None:
        return True
    return bool(kept == sha256_hex(canonical(entry.get("fetched")).encode("utf-8")))


def restage(source: Staged, request: SourceRequest) -> Staged:
    """``source``'s answer (one watcher's, or a source polled for all) as ``request``'s,
    another watcher of the same source: its own facet and what it last saw."""
    return _staged(request, source.fetched, source.error, source.from_cache)


def _no_adapter(capability: str) -> CapabilityError:
    return CapabilityError(
        "HZH104",
        f"no adapter is configured for {capability}",
        "run hz system doctor to see which capabilities are set up",
    )


def _kept(
    cache: SourceCache, key: str, error: HzError, now: datetime, source: Mapping[str, Any]
) -> HzError:
    """``error``, kept as the source's failure (a cache that can't be written loses only
    the backoff: the error is still this source's)."""
    with contextlib.suppress(HzError, OSError):
        cache.fail(key, error, now, source=source)
    return error


def _waiting(failed: Mapping[str, Any], now: datetime) -> bool:
    """Whether ``now`` is inside a kept failure's backoff (a clock set back is not)."""
    try:
        at, retry_at = parse_ts(str(failed["at"])), parse_ts(str(failed["retry_at"]))
    except (KeyError, ValueError):
        return False
    return at <= now < retry_at


def _still_failing(failed: Mapping[str, Any]) -> CapabilityError:
    """The kept failure as the source's error while it is left alone."""
    return CapabilityError(
        str(failed.get("code") or "HZH164"),
        f"{failed.get('message') or 'failed'} (at {failed.get('at')}; "
        f"asked again after {failed.get('retry_at')})",
        str(failed.get("hint") or ""),
        retryable=bool(failed.get("retryable")),
    )


def _staged(
    request: SourceRequest, fetched: Fetched | None, error: HzError | None, from_cache: bool
) -> Staged:
    current: str | None = None
    if fetched is not None:
        if request.facet is None:
            current = fetched.fingerprint
        elif request.facet in fetched.fingerprints:
            current = fetched.fingerprints[request.facet]
        else:
            facets = ", ".join(sorted(fetched.fingerprints)) or "none"
            error = CapabilityError(
                "HZH105",
                f"{request.watcher}: input {request.input} watches facet {request.facet}, "
                f"which {request.capability}.{request.method} does not have",
                f"facets it has: {facets}",
            )
    moved = error is None and current != request.last_seen
    return Staged(
        request=request,
        key=request.key,
        fetched=fetched,
        error=error,
        from_cache=from_cache,
        fingerprint=current if error is None else None,
        moved=moved,
    )
