"""Who may use the web head: a random token in ``<home>/web/token`` (0600), exchanged once
at ``/auth?token=...`` for an HttpOnly, SameSite=Strict cookie named after the port
(`cookie_name`: a browser keeps cookies by host, not port, so two servers on two ports of
127.0.0.1 must not share one name, or each login ends the other's); every other request needs
that cookie (401 without it), a Host of the loopback address, and a state-changing one
also its Origin and the CSRF token (403 otherwise)."""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Collection
from pathlib import Path
from urllib.parse import parse_qs

from starlette.middleware.base import BaseHTTPMiddleware, RequestResponseEndpoint
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, RedirectResponse, Response
from starlette.types import ASGIApp

from ledger.files import ensure_private_dir, write_atomic

__all__ = ["COOKIE", "Keys", "TokenAuth", "cookie_name", "new_token"]

COOKIE = "hz_session"
"""The cookie's name for an application not bound to a port (tests); a served one's is
`cookie_name(port)`."""
SAFE = ("GET", "HEAD")


def cookie_name(port: int) -> str:
    """``hz_session_<port>``: the cookie of the server on 127.0.0.1:``port``."""
    return f"{COOKIE}_{port}"


def new_token(web_dir: Path) -> str:
    """A fresh random token, written to ``web_dir/token`` (0600; the old one stops working)."""
    token = secrets.token_urlsafe(32)
    ensure_private_dir(web_dir)
    write_atomic(web_dir / "token", (token + "\n").encode())
    return token


class Keys:
    """What the token derives: the cookie's value and the CSRF token (neither is the token)."""

    def __init__(self, token: str) -> None:
        self.token = token
        self.session = self._derive("session")
        self.csrf = self._derive("csrf")

    def _derive(self, purpose: str) -> str:
        return hmac.new(self.token.encode(), purpose.encode(), hashlib.sha256).hexdigest()

    def token_ok(self, given: str) -> bool:
        return hmac.compare_digest(given.encode(), self.token.encode())

    def session_ok(self, given: str | None) -> bool:
        return given is not None and hmac.compare_digest(given.encode(), self.session.encode())

    def csrf_ok(self, given: str | None) -> bool:
        return given is not None and hmac.compare_digest(given.encode(), self.csrf.encode())


class TokenAuth(BaseHTTPMiddleware):
    """The gate in front of every route."""

    def __init__(
        self, app: ASGIApp, keys: Keys, hosts: Collection[str], cookie: str = COOKIE
    ) -> None:
        super().__init__(app)
        self.keys = keys
        self.hosts = set(hosts)
        self.cookie = cookie

    async def dispatch(self, request: Request, call_next: RequestResponseEndpoint) -> Response:
        host = request.headers.get("host", "")
        if host not in self.hosts:
            return _refuse(
                request,
                403,
                "HZH543",
                f"this server answers only to {', '.join(sorted(self.hosts))}",
            )
        if request.url.path == "/favicon.ico" and request.method in SAFE:
            return await call_next(request)  # the tab's icon, asked by every page (401 too)
        if request.url.path == "/auth":
            if request.method not in SAFE:  # the token may well be right: say what is
                refused = _refuse(
                    request,
                    405,
                    "HZH544",
                    "/auth is opened (GET), not posted: open the URL `hz system serve` printed",
                )
                refused.headers["Allow"] = "GET"
                return refused
            if not self.keys.token_ok(request.query_params.get("token", "")):
                return _refuse(
                    request,
                    403,
                    "HZH545",
                    "that token is not this server's; use the URL it printed",
                )
            response = RedirectResponse("/", status_code=303)
            response.set_cookie(
                self.cookie, self.keys.session, httponly=True, samesite="strict", path="/"
            )
            return response
        if not self.keys.session_ok(request.cookies.get(self.cookie)):
            return _refuse(
                request,
                401,
                "HZH546",
                "open the URL `hz system serve` printed (it carries the token)",
            )
        if request.method not in SAFE:
            origin = request.headers.get("origin")
            if origin is None or origin.removeprefix(f"{request.url.scheme}://") != host:
                return _refuse(
                    request,
                    403,
                    "HZH547",
                    "a change must come from this server's own pages (Origin)",
                )
            given: str | None = request.headers.get("x-csrf-token")
            if given is None:  # a plain form: read the body (it is replayed to the route)
                fields = parse_qs((await request.body()).decode("utf-8", "replace"))
                given = fields.get("csrf", [None])[-1]
            if not self.keys.csrf_ok(given):
                return _refuse(
                    request,
                    403,
                    "HZH547",
                    "the form's CSRF token is missing or stale; reload the page",
                )
        return await call_next(request)


def _refuse(request: Request, status: int, code: str, why: str) -> Response:
    """The gate's refusal: ``STATUS: why`` as text for a script (the page's own buttons
    show it as it came), and hz's error page, with ``code``, for a browser's navigation."""
    if "text/html" not in request.headers.get("accept", ""):
        return PlainTextResponse(f"{status}: {why}\n", status_code=status)
    from heinzel.web.pages import TEMPLATES

    error = {"code": code, "message": f"{status}: {why}", "hint": ""}
    page = TEMPLATES.get_template("error.html").render(csrf="", error=error, onward=None)
    return HTMLResponse(page, status_code=status)
