"""GitHub's REST API for the GitHub adapters: conditional, paginated listings on githubkit.

`GitHubClient.listing` reads a list endpoint newest first (``sort=updated`` or a branch's
commits), following ``Link: rel="next"`` until an item is older than the window's start,
and keeps what it read under ``<cache dir>/<sha256 of the url>.json`` with the first
page's ``ETag``. The next fetch of the same listing sends ``If-None-Match``: GitHub answers
``304 Not Modified`` (which costs no rate limit) and the kept items are reused, so an
unmoved source costs one request. The cache lives on disk because hz runs one process per
tick (githubkit's own cache lives in the process, so it is switched off).

Rate limits are respected: a ``403``/``429`` with ``x-ratelimit-remaining: 0`` or
``retry-after`` is `HZH160` (retryable), and the reset moment is kept so no request is sent
before it. A ``5xx``, a timeout or a refused connection is `HZH161` (retryable); bad
credentials `HZH162`; an unknown repository `HZH163`. The token is handed to githubkit
only; it is never in an error, a cache file or a log.

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
from pathlib import Path
from typing import Any

from githubkit import GitHub
from githubkit.exception import GraphQLFailed, RateLimitExceeded, RequestError, RequestFailed

from heinzel.capabilities.errors import CapabilityError
from ledger.files import ensure_private_dir, write_atomic

__all__ = ["GITHUB_API", "GitHubClient"]

GITHUB_API = "https://api.github.com/"
_NEXT = re.compile(r'<([^>]+)>;\s*rel="next"')
_MAX_PAGES = 50


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
        self._gh: GitHub[Any] = GitHub(
            token,
            base_url=self.base_url,
            http_cache=False,
            auto_retry=False,
            timeout=timeout_s,
            user_agent="hz (heinzel)",
        )
        self.requests = 0
        self.not_modified = 0

    def listing(
        self,
        path: str,
        params: Mapping[str, str],
        *,
        older: Callable[[dict[str, Any]], bool],
        since: str,
    ) -> tuple[list[dict[str, Any]], str | None]:
        """The items of ``path`` newest first down to the first ``older`` one, and the ETag.

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
            return list(kept["items"]), kept.get("etag")
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
            items.extend(item for item in page if isinstance(item, dict))
            pages += 1
            link = _NEXT.search(response.headers.get("link", ""))
            if link is None:
                complete = True
                break
            if (items and older(items[-1])) or pages >= _MAX_PAGES:
                break
            response = self._get(link[1], None, headers={k: headers[k] for k in ("Accept",)})
        self._store(
            key, {"etag": etag, "items": items, "covered_since": since, "complete": complete}
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
            reset = self._clock() + exc.retry_after.total_seconds()
            self._store("rate-limit", {"reset": reset})
            raise _rate_limited(reset, self._clock()) from None
        except RequestFailed as exc:
            raise _failed(exc.response.status_code, url) from None
        except RequestError as exc:
            raise CapabilityError(
                "HZH161",
                f"GitHub did not answer at {self.base_url}: {type(exc.exc).__name__}",
                "check the network and base_url; the next tick tries again",
                retryable=True,
            ) from None

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
    )


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
