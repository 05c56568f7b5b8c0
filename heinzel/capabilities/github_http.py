"""GitHub's REST API for the GitHub adapters: conditional, paginated listings on githubkit.

`GitHubClient.listing` reads a list endpoint newest first (``sort=updated`` or a branch's
commits), following ``Link: rel="next"`` until an item is older than the window's start,
and keeps what it read under ``<cache dir>/<sha256 of the url>.json`` with the first
page's ``ETag``: each item cut by the caller's ``keep`` to what its adapter needs (no
e-mail address, bodies cut as the input is), never GitHub's raw answer; housekeeping
prunes the files once they are older than ``retention_days``. The next fetch of the same
listing sends ``If-None-Match``: GitHub answers ``304 Not Modified`` (which costs no rate
limit) and the kept items are reused, so an unmoved source costs one request. The cache
lives on disk because hz runs one process per tick (githubkit's own cache lives in the
process, so it is switched off).

Rate limits are respected: a ``403``/``429`` with ``x-ratelimit-remaining: 0`` or
``retry-after`` (in seconds or as an HTTP date, RFC 9110), a ``429`` without either, and a
``403`` whose message names a secondary rate limit are `HZH160` (retryable, with the wait:
the header's, else at least a minute, as GitHub documents), and the reset moment is kept so
no request is sent before it. A ``5xx``, a timeout or a refused connection is `HZH161`
(retryable); bad credentials `HZH162`; an unknown repository `HZH163`. The token is handed
to githubkit only; it is never in an error, a cache file or a log.

`GitHubClient.graphql` sends one query to the GraphQL API (``POST /graphql``, or
``/api/graphql`` for an Enterprise ``/api/v3`` base) through githubkit's
``github.graphql``, coded the same way; GraphQL has no conditional requests, so each call
is a full read. A ``NOT_FOUND`` error is `HZH163`, a ``RATE_LIMITED`` one `HZH160`, any
other error in the answer `HZH179` with GitHub's message.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from collections.abc import Callable, Mapping
from datetime import timedelta
from email.utils import parsedate_to_datetime
from pathlib import Path
from typing import Any

from githubkit import GitHub
from githubkit.exception import GraphQLFailed, RateLimitExceeded, RequestError, RequestFailed

from heinzel.capabilities.errors import CapabilityError
from ledger.files import ensure_private_dir, write_atomic

__all__ = ["GITHUB_API", "GitHubClient", "retry_after_seconds"]

GITHUB_API = "https://api.github.com/"
_NEXT = re.compile(r'<([^>]+)>;\s*rel="next"')
_MAX_PAGES = 50
_AT_LEAST = 60.0
"""Seconds to wait after a rate limit that names no time (GitHub: "at least one minute")."""
_KEPT = 2
"""The version of a kept listing whose items went through ``keep``."""


def retry_after_seconds(headers: Mapping[str, str], now: float) -> float:
    """How long a rate-limited answer asks to wait: ``Retry-After`` in seconds or as an
    HTTP date, else ``x-ratelimit-reset`` (epoch seconds), else a minute."""
    value = (headers.get("retry-after") or "").strip()
    if value:
        if value.isdigit():
            return float(value)
        try:
            return max(0.0, parsedate_to_datetime(value).timestamp() - now)
        except (TypeError, ValueError, IndexError, OverflowError):
            return _AT_LEAST
    reset = (headers.get("x-ratelimit-reset") or "").strip()
    if reset.isdigit():
        return max(0.0, float(reset) - now)
    return _AT_LEAST


class _GitHub(GitHub[Any]):
    """githubkit's client, reading ``Retry-After`` in both of RFC 9110's forms (githubkit
    0.16 reads only seconds, and an HTTP date raised ``ValueError`` out of the request)."""

    clock: Callable[[], float] = time.time

    def _extract_retry_after(self, response: Any) -> timedelta:
        return timedelta(seconds=retry_after_seconds(response.headers, self.clock()))


class GitHubClient:
    """Requests to one GitHub (``base_url``), with the ETag cache in ``cache_dir``."""

    def __init__(
        self,
        token: str | None,
        *,
        base_url: str | None = None,
        cache_dir: Path | None = None,
        timeout_s: float = 30.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.base_url = base_url or GITHUB_API
        self._cache_dir = cache_dir
        self._clock = clock
        self._gh = _GitHub(
            token,
            base_url=self.base_url,
            http_cache=False,
            auto_retry=False,
            timeout=timeout_s,
            user_agent="hz (heinzel)",
        )
        self._gh.clock = clock
        self.requests = 0
        self.not_modified = 0

    def listing(
        self,
        path: str,
        params: Mapping[str, str],
        *,
        older: Callable[[dict[str, Any]], bool],
        since: str,
        keep: Callable[[dict[str, Any]], dict[str, Any]] = dict,
    ) -> tuple[list[dict[str, Any]], str | None]:
        """The items of ``path`` newest first down to the first ``older`` one, each cut by
        ``keep`` to what the caller needs (what is kept on disk), and the ETag.

        ``since`` (a spine timestamp) is how far back the caller needs; a kept listing
        that reaches back that far is revalidated with ``If-None-Match`` instead of read
        again.
        """
        url = self.base_url + path.lstrip("/")
        key = hashlib.sha256(json.dumps([url, sorted(params.items())]).encode("utf-8")).hexdigest()
        kept = self._load(key)
        headers = {"Accept": "application/vnd.github+json", "X-GitHub-Api-Version": "2022-11-28"}
        usable = kept is not None and (kept["complete"] or kept["covered_since"] <= since)
        if usable and kept is not None and kept.get("etag"):
            headers["If-None-Match"] = str(kept["etag"])
        response = self._get(url, params, headers)
        if response.status_code == 304 and kept is not None:
            self.not_modified += 1
            reused = [keep(item) for item in kept["items"] if isinstance(item, dict)]
            if kept.get("v") != _KEPT:  # kept whole by an older hz: cut it now
                self._store(key, {**kept, "v": _KEPT, "items": reused})
            return reused, kept.get("etag")
        etag = response.headers.get("etag")
        items: list[dict[str, Any]] = []
        complete = False
        pages = 0
        while True:
            page = response.json()
            if not isinstance(page, list):
                raise CapabilityError(
                    "HZH161",
                    f"GitHub answered {path} with something that is not a list",
                    "check base_url: it should be the API root (https://api.github.com/)",
                    retryable=True,
                )
            items.extend(keep(item) for item in page if isinstance(item, dict))
            pages += 1
            link = _NEXT.search(response.headers.get("link", ""))
            if link is None:
                complete = True
                break
            if (items and older(items[-1])) or pages >= _MAX_PAGES:
                break
            response = self._get(link[1], None, headers={k: headers[k] for k in ("Accept",)})
        self._store(
            key,
            {
                "v": _KEPT,
                "etag": etag,
                "items": items,
                "covered_since": since,
                "complete": complete,
            },
        )
        return items, etag

    def probe(self) -> str:
        """One request for ``hz system doctor --online``: ``GET /rate_limit`` (free of the
        rate limit), coded like any other; what is left of the hour's requests."""
        try:
            response = self._get(self.base_url + "rate_limit", None, {"Accept": "application/json"})
        except CapabilityError as exc:
            if exc.code != "HZH163":
                raise
            raise CapabilityError(  # no repository was asked for: the API root is wrong
                exc.code,
                exc.message,
                "check base_url: GitHub's API root, https://api.github.com/ or "
                "https://HOST/api/v3/ for GitHub Enterprise",
            ) from None
        left = response.headers.get("x-ratelimit-remaining")
        return f"{self.base_url} answered" + (f", {left} requests left" if left else "")

    def graphql(self, query: str, variables: Mapping[str, Any]) -> dict[str, Any]:
        """The ``data`` of one GraphQL query (every call is a request: no ETags here)."""
        self._respect_reset()
        self.requests += 1
        try:
            data: dict[str, Any] = self._send(
                lambda: self._gh.graphql.request(query, dict(variables)), "graphql"
            )
            return data
        except GraphQLFailed as exc:
            errors = exc.response.errors or []
            if any(error.type == "NOT_FOUND" for error in errors):
                raise CapabilityError(
                    "HZH163",
                    f"GitHub has no such board: {errors[0].message[:200]}",
                    "check board: (owner/number) and that the token can read the project",
                ) from None
            message = errors[0].message[:200] if errors else "an empty error list"
            raise CapabilityError(
                "HZH179",
                f"GitHub's GraphQL API refused the query: {message}",
                "a token with the read:project scope reads Projects boards",
            ) from None

    def _get(self, url: str, params: Mapping[str, str] | None, headers: Mapping[str, str]) -> Any:
        self._respect_reset()
        self.requests += 1
        query = None if params is None else dict(params)  # a next link carries its own
        return self._send(
            lambda: self._gh.request("GET", url, params=query, headers=dict(headers)), url
        )

    def _send(self, call: Callable[[], Any], url: str) -> Any:
        """``call()``, its failures coded (rate limit, status, no answer)."""
        try:
            return call()
        except RateLimitExceeded as exc:
            raise self._limited(exc.retry_after.total_seconds()) from None
        except RequestFailed as exc:
            status = exc.response.status_code
            if status == 429 or (status == 403 and _names_rate_limit(exc.response)):
                wait = retry_after_seconds(exc.response.headers, self._clock())
                raise self._limited(max(wait, _AT_LEAST)) from None
            raise _failed(status, url) from None
        except RequestError as exc:
            raise CapabilityError(
                "HZH161",
                f"GitHub did not answer at {self.base_url}: {type(exc.exc).__name__}",
                "check the network and base_url; the next tick tries again",
                retryable=True,
            ) from None

    def _limited(self, wait: float) -> CapabilityError:
        """HZH160 for a wait of ``wait`` seconds, the reset kept for the next process."""
        now = self._clock()
        self._store("rate-limit", {"reset": now + wait})
        return _rate_limited(now + wait, now)

    def _respect_reset(self) -> None:
        state = self._load("rate-limit")
        reset = state.get("reset") if state else None
        now = self._clock()
        if isinstance(reset, int | float) and reset > now:
            raise _rate_limited(reset, now)

    def _load(self, key: str) -> dict[str, Any] | None:
        if self._cache_dir is None:
            return None
        try:
            data = json.loads((self._cache_dir / f"{key}.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        return data if isinstance(data, dict) else None

    def _store(self, key: str, data: dict[str, Any]) -> None:
        if self._cache_dir is None:
            return
        ensure_private_dir(self._cache_dir)
        text = json.dumps(data, sort_keys=True, ensure_ascii=False)
        write_atomic(self._cache_dir / f"{key}.json", text.encode("utf-8"))


def _rate_limited(reset: float, now: float) -> CapabilityError:
    wait = max(0, round(reset - now))
    return CapabilityError(
        "HZH160",
        f"GitHub's rate limit is used up; it resets in {wait} s",
        "the tick tries again after the reset; a token (GH_TOKEN) raises the limit",
        retryable=True,
        retry_after=float(wait),
    )


def _names_rate_limit(response: Any) -> bool:
    """Whether a ``403``'s message speaks of a rate limit (GitHub's secondary limits may
    come without any rate-limit header)."""
    try:
        message = response.json().get("message", "")
    except (ValueError, AttributeError, TypeError):
        return False
    return isinstance(message, str) and "rate limit" in message.lower()


def _failed(status: int, url: str) -> CapabilityError:
    where = url.split("?", 1)[0]
    if status >= 500:
        return CapabilityError(
            "HZH161",
            f"GitHub answered {status} for {where}",
            "GitHub is having trouble; the next tick tries again",
            retryable=True,
        )
    if status in (401, 403):
        return CapabilityError(
            "HZH162",
            f"GitHub refused the credentials ({status}) for {where}",
            "set GH_TOKEN (or run gh auth login) with read access to the repository",
        )
    return CapabilityError(
        "HZH163",
        f"GitHub answered {status} for {where}",
        "check repo:/project: (owner/name) and that the token can see it",
    )
