"""Every string a request brings is UTF-8 text, or the request is refused (``HZH346``).

Starlette and uvicorn decode what a browser sends leniently: a percent-escape of a byte
that is not UTF-8 (``/h/%FF``, ``?state=%C3``, ``text=caf%E9``) becomes U+FFFD, and a raw
such byte in a form body a Latin-1 letter, so a name, a filter or a chat message would
reach hz altered without anyone knowing. `Utf8Only` checks the path, the query and a form
body as bytes, after percent-decoding, before any route runs; the refusal is JSON
(``code``, ``message``, ``hint``) for a caller that asks for JSON, else plain text.
"""

from __future__ import annotations

from urllib.parse import unquote_to_bytes

from starlette.datastructures import Headers
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from heinzel.strings.text import not_text

__all__ = ["Utf8Only", "undecodable"]

HINT = "send it as UTF-8 (percent-escapes of UTF-8 bytes in a URL or form)"


def undecodable(scope: Scope, body: bytes) -> tuple[str, str] | None:
    """``(what, text)`` for the first part of the request that is not UTF-8 after
    percent-decoding (the text decoded with surrogateescape, to show it), else None."""
    content = Headers(scope=scope).get("content-type", "")
    parts = [
        ("path", scope.get("raw_path") or scope["path"].encode("utf-8", "surrogateescape"), False),
        ("query", scope.get("query_string", b""), True),
    ]
    if body:
        parts.append(("form", body, content.startswith("application/x-www-form-urlencoded")))
    for what, raw, plus in parts:
        decoded = unquote_to_bytes(raw.replace(b"+", b" ") if plus else raw)
        try:
            decoded.decode("utf-8")
        except UnicodeDecodeError:
            return what, decoded.decode("utf-8", "surrogateescape")
    return None


class Utf8Only:
    """The ASGI middleware: an HTTP request whose path, query or body is not UTF-8 text is
    answered 400 ``HZH346`` and never reaches a route; the body is read once and replayed."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if scope["method"] in ("GET", "HEAD"):
            bad = undecodable(scope, b"")
            if bad is not None:
                await _refusal(scope, *bad)(scope, receive, send)
                return
            await self.app(scope, receive, send)
            return
        chunks: list[bytes] = []
        more = True
        while more:
            message = await receive()
            if message["type"] != "http.request":
                break
            chunks.append(message.get("body", b""))
            more = message.get("more_body", False)
        body = b"".join(chunks)
        bad = undecodable(scope, body)
        if bad is not None:
            await _refusal(scope, *bad)(scope, receive, send)
            return
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)


def _refusal(scope: Scope, what: str, text: str) -> Response:
    error = not_text("HZH346", f"the request's {what}", text, HINT)
    if Headers(scope=scope).get("accept") == "application/json":
        return JSONResponse({"code": error.code, "message": error.message, "hint": error.hint}, 400)
    return PlainTextResponse(error.render() + "\n", 400)
