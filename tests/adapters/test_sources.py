"""The source cache: one fetch per source per tick, staged before any wake, pruned safely."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from heinzel.capabilities.errors import CapabilityError
from heinzel.capabilities.protocols import (
    Fetched,
    MethodSpec,
    ReadCapability,
    Window,
    check_call,
    fetched,
)
from heinzel.store.home import Home
from heinzel.store.sources import (
    SourceCache,
    SourceRequest,
    absolute_args,
    fetch_once,
    source_key,
)

NOW = datetime(2026, 10, 30, 14, 0, tzinfo=UTC)
WEEK = timedelta(days=7)


class Counting:
    """A read capability that counts its fetches and answers from a settable list."""

    name = "code-host"
    methods: Mapping[str, MethodSpec] = {
        "merged_pull_requests": MethodSpec(
            "merged_pull_requests",
            window=True,
            args=frozenset({"repo"}),
            required=frozenset({"repo"}),
        )
    }

    def __init__(self, items: list[int] | None = None) -> None:
        self.items = items if items is not None else [402]
        self.calls: list[tuple[dict[str, Any], Window | None]] = []

    def fetch(
        self, method: str, args: Mapping[str, Any], window: Window | None, *, now: datetime
    ) -> Fetched:
        check_call(self, method, args, window)
        self.calls.append((dict(args), window))
        return fetched(
            list(self.items),
            {"items": list(self.items), "count": len(self.items)},
            cursor=None,
            now=now,
        )


def request(watcher: str, **changes: Any) -> SourceRequest:
    fields: dict[str, Any] = {
        "watcher": watcher,
        "input": "merged_prs",
        "capability": "code-host",
        "method": "merged_pull_requests",
        "args": {"repo": "acme/checkout"},
        "window": WEEK,
    }
    fields.update(changes)
    return SourceRequest(**fields)


def adapters(source: ReadCapability) -> dict[str, ReadCapability]:
    return {source.name: source}


@pytest.fixture
def cache(tmp_path: Path) -> SourceCache:
    return SourceCache.of(Home(tmp_path / "home"))


class TestSourceCache:
    def test_put_then_get_round_trips_privately(self, cache: SourceCache) -> None:
        """An entry reads back equal, 0600 in a 0700 directory, under <home>/heinzel/sources."""
        key = source_key("code-host", "merged_pull_requests", {"repo": "a"}, WEEK)
        value = fetched([1], {"items": [1]}, cursor="c", now=NOW)
        cache.put(key, value)
        assert cache.get(key) == value
        assert stat.S_IMODE(cache.directory.stat().st_mode) == 0o700
        assert stat.S_IMODE(cache.path(key).stat().st_mode) == 0o600
        assert cache.directory.parts[-2:] == ("heinzel", "sources")

    def test_missing_or_corrupt_entries_are_misses(self, cache: SourceCache) -> None:
        """A missing, garbled or linked entry costs a refetch, never an error."""
        key = source_key("x", "y", {}, None)
        assert cache.get(key) is None
        cache.directory.mkdir(parents=True)
        cache.path(key).write_text("{not json", encoding="utf-8")
        assert cache.get(key) is None
        cache.path(key).unlink()
        target = cache.directory / "elsewhere.json"
        target.write_text(
            json.dumps({"key": key, "fetched": fetched(1, {}, cursor=None, now=NOW).to_json()})
        )
        cache.path(key).symlink_to(target)
        assert cache.get(key) is None

    def test_an_entry_whose_fetch_fails_its_hash_is_a_miss(self, cache: SourceCache) -> None:
        """Entries are not fsynced: one whose bytes are not those it was written with (a
        power cut's leftovers that still parse) fails its ``sha256`` and is refetched; an
        entry written before the hash was kept is read as it is."""
        key = source_key("x", "y", {}, None)
        value = fetched([1], {"items": [1]}, cursor=None, now=NOW)
        cache.put(key, value)
        entry = json.loads(cache.path(key).read_text(encoding="utf-8"))
        assert cache.get(key) == value and len(entry["sha256"]) == 64
        entry["fetched"]["result"] = [2]
        cache.path(key).write_text(json.dumps(entry), encoding="utf-8")
        assert cache.get(key) is None
        del entry["sha256"]
        cache.path(key).write_text(json.dumps(entry), encoding="utf-8")
        assert cache.get(key) is not None

    def test_staged_matches_only_the_recorded_fingerprint(self, cache: SourceCache) -> None:
        """Gather reads the cached input when its fingerprint matches, else refetches."""
        key = source_key("x", "y", {}, None)
        value = fetched([1], {"items": [1]}, cursor=None, now=NOW)
        cache.put(key, value)
        assert cache.staged(key, value.fingerprint) == value
        assert cache.staged(key, "0" * 64) is None

    def test_a_bad_key_is_hzh150(self, cache: SourceCache) -> None:
        """Keys are hashes; a path-like key never reaches the disk."""
        with pytest.raises(CapabilityError) as caught:
            cache.get("../escape")
        assert caught.value.code == "HZH150"

    def test_keys_ignore_arg_order_and_tell_windows_apart(self) -> None:
        """The key is canonical over (capability, method, args, window span)."""
        one = source_key("c", "m", {"a": 1, "b": 2}, WEEK)
        assert one == source_key("c", "m", {"b": 2, "a": 1}, WEEK)
        assert one != source_key("c", "m", {"a": 1, "b": 2}, timedelta(days=1))
        assert one != source_key("c", "m", {"a": 1, "b": 2}, None)


class TestPrune:
    def put_at(self, cache: SourceCache, name: str, moment: datetime) -> str:
        key = source_key("c", name, {}, None)
        cache.put(key, fetched([], {}, cursor=None, now=moment))
        return f"{key}.json"

    def test_deletes_only_old_entries_and_is_idempotent(self, cache: SourceCache) -> None:
        """Entries older than retention go, newer stay, and a second prune deletes nothing."""
        old = self.put_at(cache, "old", NOW - timedelta(days=91))
        new = self.put_at(cache, "new", NOW - timedelta(days=89))
        assert cache.prune(NOW, 90) == [old]
        assert cache.prune(NOW, 90) == []
        assert sorted(p.name for p in cache.directory.iterdir()) == [new]

    def test_zero_retention_keeps_everything(self, cache: SourceCache) -> None:
        """retention_days 0 means keep forever."""
        self.put_at(cache, "old", NOW - timedelta(days=900))
        assert cache.prune(NOW, 0) == []

    def test_never_touches_files_it_did_not_write_nor_links(
        self, cache: SourceCache, tmp_path: Path
    ) -> None:
        """Foreign names survive; a link named like an entry is skipped and its target kept."""
        self.put_at(cache, "x", NOW)
        (cache.directory / "notes.txt").write_text("mine", encoding="utf-8")
        precious = tmp_path / "precious.json"
        precious.write_text("{}", encoding="utf-8")
        link = cache.directory / f"{'a' * 64}.json"
        link.symlink_to(precious)
        assert cache.prune(NOW + timedelta(days=365), 1) == [
            f"{source_key('c', 'x', {}, None)}.json"
        ]
        assert link.is_symlink() and precious.exists()
        assert (cache.directory / "notes.txt").exists()

    def test_unreadable_entries_and_crash_leftovers_go(self, cache: SourceCache) -> None:
        """A garbled entry and an old temporary file of an interrupted write are deleted."""
        self.put_at(cache, "x", NOW)
        garbled = cache.directory / f"{'b' * 64}.json"
        garbled.write_text("{", encoding="utf-8")
        leftover = cache.directory / f".{'c' * 64}.json.tmp-0a1b2c"
        leftover.write_text("{", encoding="utf-8")
        os.utime(leftover, (0, 0))
        assert cache.prune(NOW, 1) == sorted([garbled.name, leftover.name])

    def test_a_linked_cache_directory_is_refused(self, tmp_path: Path) -> None:
        """Prune never follows a link in place of its directory (HZH151)."""
        real = tmp_path / "real"
        real.mkdir()
        (tmp_path / "sources").symlink_to(real)
        with pytest.raises(CapabilityError) as caught:
            SourceCache(tmp_path / "sources").prune(NOW, 1)
        assert caught.value.code == "HZH151"

    def test_a_missing_directory_prunes_nothing(self, tmp_path: Path) -> None:
        """No cache yet is not an error."""
        assert SourceCache(tmp_path / "none").prune(NOW, 1) == []


class TestFetchOnce:
    def test_one_fetch_for_many_watchers(self, cache: SourceCache) -> None:
        """Three Heinzelmännchen watching the same source cost one adapter call."""
        source = Counting()
        got = fetch_once(
            [request("a"), request("b"), request("c")], adapters(source), NOW, cache=cache
        )
        assert got.fetches == 1 and len(source.calls) == 1
        assert source.calls[0][1] == Window.ending_at(NOW, WEEK)
        assert got.moved() == {"a": ["merged_prs"], "b": ["merged_prs"], "c": ["merged_prs"]}

    def test_different_args_or_windows_are_different_sources(self, cache: SourceCache) -> None:
        """Each distinct (capability, method, args, window) is fetched once."""
        source = Counting()
        requests = [
            request("a"),
            request("b", args={"repo": "acme/web"}),
            request("c", window=timedelta(days=1)),
        ]
        assert fetch_once(requests, adapters(source), NOW, cache=cache).fetches == 3

    def test_moved_compares_with_what_each_watcher_last_saw(self, cache: SourceCache) -> None:
        """A watcher that saw this fingerprint did not move; one that saw another did."""
        source = Counting()
        first = fetch_once([request("a")], adapters(source), NOW, cache=cache).staged[0]
        later = NOW + timedelta(minutes=5)
        got = fetch_once(
            [request("a", last_seen=first.fingerprint), request("b", last_seen="old")],
            adapters(source),
            later,
            cache=cache,
        )
        assert got.moved() == {"b": ["merged_prs"]}

    def test_a_watched_facet_moves_on_its_own(self, cache: SourceCache) -> None:
        """Watching count, a change of items that keeps the count is not a move."""
        source = Counting([1, 2])
        seen = fetch_once([request("a", facet="count")], adapters(source), NOW, cache=cache).staged[
            0
        ]
        source.items = [3, 4]
        later = NOW + timedelta(minutes=5)
        got = fetch_once(
            [
                request("a", facet="count", last_seen=seen.fingerprint),
                request("b", last_seen=seen.fingerprint),
            ],
            adapters(source),
            later,
            cache=cache,
        )
        assert got.moved() == {"b": ["merged_prs"]}

    def test_an_unknown_facet_is_hzh105(self, cache: SourceCache) -> None:
        """Watching a facet the source does not have is reported, not a move."""
        staged = fetch_once(
            [request("a", facet="nope")], adapters(Counting()), NOW, cache=cache
        ).staged[0]
        assert staged.error is not None and staged.error.code == "HZH105"
        assert not staged.moved

    def test_the_cache_serves_until_the_recheck_is_due(self, cache: SourceCache) -> None:
        """With recheck 1h, ticks within the hour read the cache; the shortest recheck wins."""
        source = Counting()
        hourly = [request("a", recheck=timedelta(hours=1))]
        fetch_once(hourly, adapters(source), NOW, cache=cache)
        soon = fetch_once(hourly, adapters(source), NOW + timedelta(minutes=59), cache=cache)
        assert soon.fetches == 0 and soon.staged[0].from_cache
        assert (
            fetch_once(hourly, adapters(source), NOW + timedelta(hours=1), cache=cache).fetches == 1
        )
        mixed = [*hourly, request("b", recheck=timedelta(minutes=5))]
        assert (
            fetch_once(
                mixed, adapters(source), NOW + timedelta(hours=1, minutes=5), cache=cache
            ).fetches
            == 1
        )
        assert len(source.calls) == 3

    def test_default_recheck_refetches_at_every_new_tick_only(self, cache: SourceCache) -> None:
        """The same now is the same tick (cache), a later or earlier now refetches."""
        source = Counting()
        for moment in (NOW, NOW, NOW + timedelta(minutes=5), NOW):
            fetch_once([request("a")], adapters(source), moment, cache=cache)
        assert len(source.calls) == 3

    def test_a_failing_source_does_not_stop_the_others(self, cache: SourceCache) -> None:
        """A missing adapter is HZH104 on its requests; the other source is fetched and staged."""
        got = fetch_once(
            [request("a", capability="tracker", method="issues_updated"), request("b")],
            adapters(Counting()),
            NOW,
            cache=cache,
        )
        assert got.staged[0].error is not None and got.staged[0].error.code == "HZH104"
        assert got.moved() == {"b": ["merged_prs"]}
        assert cache.get(got.staged[1].key) == got.staged[1].fetched

    def test_staged_before_it_returns(self, cache: SourceCache) -> None:
        """Every fresh fetch is on disk when fetch_once returns (before any turn.started)."""
        got = fetch_once([request("a")], adapters(Counting()), NOW, cache=cache)
        entry = json.loads(cache.path(got.staged[0].key).read_text(encoding="utf-8"))
        assert entry["source"]["window"] == Window.ending_at(NOW, WEEK).to_json()
        assert entry["fetched"]["as_of"] == "2026-10-30T14:00:00.000Z"


CRASHING_TICK = Path(__file__).with_name("crashing_tick.py")


@pytest.mark.kill
class TestCrashBetweenFetchAndWake:
    def run(
        self, home: Path, now: datetime, calls: Path, crash: str
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, str(CRASHING_TICK), str(home), now.isoformat(), str(calls), crash],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )

    def test_a_killed_tick_never_fetches_twice(self, tmp_path: Path) -> None:
        """Killed after staging, a re-run (same tick or before the recheck) reads the cache."""
        calls = tmp_path / "calls.log"
        killed = self.run(tmp_path, NOW, calls, "after-put")
        assert killed.returncode == 137, killed.stderr
        again = self.run(tmp_path, NOW, calls, "none")
        later = self.run(tmp_path, NOW + timedelta(minutes=30), calls, "none")
        assert again.returncode == 0 and later.returncode == 0, again.stderr + later.stderr
        assert calls.read_text(encoding="utf-8").splitlines() == ["fetch"]
        assert again.stdout.split() == ["0", "hz-a,hz-b", "True"]
        assert later.stdout == again.stdout


class TestAbsoluteArgs:
    def test_relative_paths_become_absolute_per_contract_folder(self, tmp_path: Path) -> None:
        """The same relative path in two contract folders is two sources."""
        one = absolute_args("files", "read", {"path": "notes.md"}, tmp_path / "a")
        two = absolute_args("files", "read", {"path": "notes.md"}, tmp_path / "b")
        assert one == {"path": str(tmp_path / "a" / "notes.md")}
        assert source_key("files", "read", one, None) != source_key("files", "read", two, None)

    def test_git_repos_and_file_documents_are_resolved(self, tmp_path: Path) -> None:
        """repo and a file: doc resolve; a doc: asset and other args stay as written."""
        assert absolute_args(
            "git", "merged_commits", {"repo": "app", "branch": "main"}, tmp_path
        ) == {
            "repo": str(tmp_path / "app"),
            "branch": "main",
        }
        assert absolute_args("documents", "read", {"doc": "file:r.md"}, tmp_path) == {
            "doc": f"file:{tmp_path / 'r.md'}"
        }
        assert absolute_args("documents", "read", {"doc": "doc:team/r"}, tmp_path) == {
            "doc": "doc:team/r"
        }

    def test_absolute_paths_and_other_capabilities_are_unchanged(self, tmp_path: Path) -> None:
        """Nothing to resolve leaves the args equal."""
        assert absolute_args("files", "read", {"path": "/etc/x"}, tmp_path) == {"path": "/etc/x"}
        args = {"repo": "acme/checkout"}
        assert absolute_args("code-host", "merged_pull_requests", args, tmp_path) == args


class TestFetchOnceProperties:
    @settings(derandomize=True, deadline=None, max_examples=30)
    @given(
        picks=st.lists(
            st.tuples(st.sampled_from(["a", "b", "c", "d"]), st.sampled_from(["r1", "r2", "r3"])),
            min_size=1,
            max_size=12,
        )
    )
    def test_one_fetch_per_distinct_source(
        self, tmp_path_factory: pytest.TempPathFactory, picks: list[tuple[str, str]]
    ) -> None:
        """However watchers and sources are mixed, each distinct source is fetched once and
        every watcher of it sees the same fingerprint."""
        source = Counting()
        cache = SourceCache(tmp_path_factory.mktemp("h") / "sources")
        requests = [request(watcher, args={"repo": repo}) for watcher, repo in picks]
        got = fetch_once(requests, adapters(source), NOW, cache=cache)
        assert got.fetches == len(source.calls) == len({repo for _, repo in picks})
        by_key: dict[str, set[str | None]] = {}
        for staged in got.staged:
            by_key.setdefault(staged.key, set()).add(staged.fingerprint)
        assert all(len(prints) == 1 for prints in by_key.values())
        assert [s.request for s in got.staged] == requests


class TestLinksAreNeverFollowed:
    def test_a_link_planted_as_an_entry_is_refused_not_written_through(
        self, cache: SourceCache, tmp_path: Path
    ) -> None:
        """A symlink at an entry's path is reported (HZL001) and its target left alone."""
        target = tmp_path / "precious.txt"
        target.write_text("mine", encoding="utf-8")
        cache.directory.mkdir(parents=True)
        cache.path(request("a").key).symlink_to(target)
        staged = fetch_once([request("a")], adapters(Counting()), NOW, cache=cache).staged[0]
        assert staged.error is not None and staged.error.code == "HZL001"
        assert not staged.moved
        assert target.read_text(encoding="utf-8") == "mine"

    def test_a_linked_cache_directory_is_refused_on_write(self, tmp_path: Path) -> None:
        """put never creates entries through a link in place of the directory."""
        real = tmp_path / "real"
        real.mkdir()
        (tmp_path / "sources").symlink_to(real)
        staged = fetch_once(
            [request("a")], adapters(Counting()), NOW, cache=SourceCache(tmp_path / "sources")
        ).staged[0]
        assert staged.error is not None and staged.error.code == "HZL001"
        assert list(real.iterdir()) == []


class Broken(Counting):
    """A source whose adapter raises what it likes (not a coded error): a library's bug."""

    def __init__(self, raised: Exception) -> None:
        super().__init__()
        self.raised = raised

    def fetch(
        self, method: str, args: Mapping[str, Any], window: Window | None, *, now: datetime
    ) -> Fetched:
        self.calls.append((dict(args), window))
        raise self.raised


class TestEachSourceFailsAlone:
    def test_an_uncoded_exception_is_hzh164_of_that_source_only(self, cache: SourceCache) -> None:
        """A ValueError out of one adapter is HZH164 naming its type on that source's
        requests; the other source is fetched and staged."""
        broken = Broken(ValueError("Expected time, got: garbage"))
        broken.name = "tracker"
        got = fetch_once(
            [request("a", capability="tracker"), request("b")],
            {"tracker": broken, "code-host": Counting()},
            NOW,
            cache=cache,
        )
        error = got.staged[0].error
        assert error is not None and error.code == "HZH164"
        assert "ValueError" in error.message
        assert got.moved() == {"b": ["merged_prs"]}

    def test_the_failure_is_kept_and_backs_off_across_ticks(self, cache: SourceCache) -> None:
        """The failure is kept with retry_at; inside it the tick asks nothing; each failure
        in a row doubles the wait; a rate limit's own wait wins; a success clears it."""
        limited = CapabilityError("HZH160", "rate limited", retryable=True, retry_after=600)
        broken = Broken(limited)
        key = request("a").key
        first = fetch_once([request("a")], adapters(broken), NOW, cache=cache, respect_backoff=True)
        assert first.staged[0].error is not None and first.staged[0].error.code == "HZH160"
        failed = cache.failure(key)
        assert failed is not None
        assert (failed["attempts"], failed["retry_at"]) == (1, "2026-10-30T14:10:00.000Z")
        for minutes in (1, 5, 9):  # inside the wait: the kept error, no call
            inside = NOW + timedelta(minutes=minutes)
            got = fetch_once(
                [request("a")], adapters(broken), inside, cache=cache, respect_backoff=True
            )
            assert got.staged[0].error is not None and got.staged[0].error.code == "HZH160"
            assert "asked again after 2026-10-30T14:10:00.000Z" in got.staged[0].error.message
        assert len(broken.calls) == 1
        broken.raised = RuntimeError("boom")
        at = NOW + timedelta(minutes=10)
        fetch_once([request("a")], adapters(broken), at, cache=cache, respect_backoff=True)
        failed = cache.failure(key)
        assert failed is not None
        assert (failed["code"], failed["attempts"]) == ("HZH164", 2)
        assert failed["retry_at"] == "2026-10-30T14:12:00.000Z"  # two minutes: doubled
        good = fetch_once(
            [request("a")], adapters(Counting()), at + timedelta(minutes=2), cache=cache,
            respect_backoff=True,
        )  # fmt: skip
        assert good.staged[0].error is None
        assert cache.failure(key) is None
