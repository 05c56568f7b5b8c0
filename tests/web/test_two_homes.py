"""Two homes served on two ports of 127.0.0.1, followed by one browser: a browser keeps
cookies by host, not by port, so each server's cookie must have a name of its own."""

from __future__ import annotations

import shutil
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from http.cookiejar import CookieJar
from pathlib import Path

from tests import forkhz
from tests.waits import HANG

from .conftest import demo_env
from .test_serve_cli import ask, free_port

HZ = str(Path(sys.executable).with_name("hz"))
"""The real `hz` executable beside this interpreter."""


@contextmanager
def serving(home: Path, port: int) -> Iterator[str]:
    """`hz system serve --port PORT` over ``home``; its login URL (printed once the port
    listens), terminated at the end."""
    with forkhz.Popen(
        [HZ, "system", "serve", "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=demo_env(home),
    ) as process:
        try:
            assert process.stdout is not None
            line = ""
            while "open: " not in line:
                line = process.stdout.readline()
                assert line, "hz system serve ended before printing its URL"
            yield line.split("open: ", 1)[1].strip()
        finally:
            process.terminate()
            process.wait(timeout=HANG)


def status(browser: urllib.request.OpenerDirector, url: str) -> int:
    """The status of GET ``url`` in ``browser`` (redirects followed, cookies kept)."""
    try:
        with browser.open(url, timeout=HANG) as answer:
            return int(answer.status)
    except urllib.error.HTTPError as error:
        return int(error.code)


def test_two_homes_on_two_ports_keep_each_their_login(home: Path, tmp_path: Path) -> None:
    """Log in to the server on one port, then to the other's, in one cookie jar (which, as
    a browser's, ignores the port): both pages still answer 200, and each server's cookie
    has its own name, holding the port; one server's cookie value, under any name, is not
    the other's login."""
    other = tmp_path / "other"
    shutil.copytree(home, other)
    first_port, second_port = free_port(), free_port()
    while second_port == first_port:
        second_port = free_port()
    jar = CookieJar()
    browser = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
    with serving(home, first_port) as first, serving(other, second_port) as second:
        assert status(browser, f"http://127.0.0.1:{first_port}/") == 401
        assert status(browser, first) == 200
        assert status(browser, second) == 200
        assert status(browser, f"http://127.0.0.1:{first_port}/") == 200
        assert status(browser, f"http://127.0.0.1:{second_port}/") == 200
        names = sorted(cookie.name for cookie in jar)
        assert names == sorted([f"hz_session_{first_port}", f"hz_session_{second_port}"])
        theirs = next(c for c in jar if c.name == f"hz_session_{first_port}")
        for name in (theirs.name, f"hz_session_{second_port}", "hz_session"):
            assert ask(second_port, "/", f"{name}={theirs.value}")[0] == 401
