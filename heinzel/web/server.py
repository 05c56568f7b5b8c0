"""The Starlette application of the web head, and running it on uvicorn (127.0.0.1 only)."""

from __future__ import annotations

import os
import socket
import threading
from collections.abc import Callable, Collection, Mapping
from pathlib import Path

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from heinzel.app import App
from heinzel.errors import HeinzelError
from heinzel.logs import configure_now
from heinzel.web.actions import spawn_verb
from heinzel.web.auth import COOKIE, Keys, TokenAuth, cookie_name, new_token
from heinzel.web.background import spawn_chat_turn
from heinzel.web.utf8 import Utf8Only
from heinzel.web.views import Views

__all__ = ["create_app", "serve"]

HERE = Path(__file__).resolve().parent


def create_app(
    open_app: Callable[[], App],
    token: str,
    *,
    hosts: Collection[str],
    idle_seconds: float = 15.0,
    env: Mapping[str, str] | None = None,
    start_turn: Callable[[Path, str, str], object] | None = None,
    start_verb: Callable[[Path, str, str, str, str | None], object] | None = None,
    stopping: Callable[[], bool] = lambda: False,
    cookie: str = COOKIE,
) -> Starlette:
    """The web head over the homes ``open_app`` opens (one `App` per worker thread, as each
    ``hz`` command opens its own), behind ``token``, answering only to ``hosts``. A chat's
    new turn runs in a child process with ``env`` (default: this process's environment);
    ``start_turn(home, id, request id)`` replaces how it is started, and
    ``start_verb(home, id, verb, hint, request id)`` how a button's wake, retry or resume
    is. An
    event stream ends once ``stopping()`` answers True (the server is shutting down).
    ``cookie`` is the session cookie's name (`serve` names it after the port)."""
    local = threading.local()

    def app_here() -> App:
        found: App | None = getattr(local, "app", None)
        if found is None:
            found = local.app = open_app()
        return found

    keys = Keys(token)
    child_env = dict(os.environ if env is None else env)
    views = Views(
        app_here,
        keys,
        idle_seconds=idle_seconds,
        stopping=stopping,
        start_turn=start_turn
        or (lambda home, hid, rid: spawn_chat_turn(home, hid, rid, child_env)),
        start_verb=start_verb
        or (
            lambda home, hid, verb, hint, rid: spawn_verb(
                home, hid, verb, hint, child_env, request_id=rid
            )
        ),
    )
    routes = [
        Route("/", views.listing),
        Route("/events", views.list_events),
        Route("/graph", views.graph),
        Route("/h/{ref}", views.heinzel),
        Route("/h/{ref}/events", views.events),
        Route("/h/{ref}/parts", views.parts),
        Route("/h/{ref}/turn/{turn}", views.turn),
        Route("/h/{ref}/turn/{turn}/reply", views.reply),
        Route("/h/{ref}/chat", views.chat, methods=["POST"]),
        Route("/h/{ref}/approve", views.approve, methods=["POST"]),
        Route("/h/{ref}/decline", views.decline, methods=["POST"]),
        Route("/h/{ref}/try", views.try_, methods=["POST"]),
        Route("/h/{ref}/try/{ticket}", views.tried),
        Route("/h/{ref}/answer", views.answer, methods=["POST"]),
        Route("/h/{ref}/dismiss", views.dismiss, methods=["POST"]),
        Route("/h/{ref}/do", views.do, methods=["POST"]),
        Route("/favicon.ico", views.favicon),
        Mount("/static", StaticFiles(directory=HERE / "static"), name="static"),
    ]

    async def unknown(request: Request, _: Exception) -> Response:
        return views.no_route(request)

    async def wrong_method(request: Request, error: Exception) -> Response:
        return views.wrong_method(request, getattr(error, "headers", None) or {})

    async def broken(request: Request, _: Exception) -> Response:
        return views.broken(request)

    return Starlette(
        routes=routes,
        exception_handlers={404: unknown, 405: wrong_method, 500: broken},
        middleware=[
            Middleware(TokenAuth, keys=keys, hosts=hosts, cookie=cookie),
            Middleware(Utf8Only),  # behind the gate: a stranger still gets 401 or 403
        ],
    )


def serve(open_app: Callable[[], App], port: int, echo: Callable[[str], None]) -> None:
    """Run the web head on 127.0.0.1:``port`` until interrupted; print the URL once.

    The port is taken first: one already in use is `HZH310`, and then neither the token
    file (another server's) nor a URL is touched. A new token is written at each start, so
    an old URL or cookie stops working. Logging is configured here, once, before the
    worker threads start: a thread never configures structlog while another logs."""
    import uvicorn

    home = open_app().service.home.root
    configure_now()
    listening = _listen(port)
    token = new_token(home / "web")
    hosts = [f"127.0.0.1:{port}", f"localhost:{port}"]
    # Ctrl-C or SIGTERM: uvicorn waits for open responses, so the event streams end first.
    web = create_app(
        open_app,
        token,
        hosts=hosts,
        stopping=lambda: server.should_exit,
        cookie=cookie_name(port),
    )
    server = uvicorn.Server(uvicorn.Config(web, host="127.0.0.1", port=port, log_level="warning"))
    echo(f"hz web head for {home}; the token is in {home / 'web' / 'token'}")
    echo(f"open: http://127.0.0.1:{port}/auth?token={token}")
    with listening:
        server.run(sockets=[listening])


def _listen(port: int) -> socket.socket:
    """A socket listening on 127.0.0.1:``port`` (a connection made after this waits for
    the server); `HZH310` when the port is taken or not ours to take."""
    listening = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        listening.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listening.bind(("127.0.0.1", port))
        listening.listen(2048)
    except OSError as error:
        listening.close()
        raise HeinzelError(
            "HZH310",
            f"can't listen on 127.0.0.1:{port}: {error.strerror or error}",
            f"another `hz system serve` (or another program) may have it: stop that one, "
            f"or pick another port: `hz system serve --port {port + 1 if port < 65535 else 8765}`",
        ) from error
    return listening
