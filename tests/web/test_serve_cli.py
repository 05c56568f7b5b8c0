"""``hz system serve`` as a person runs it: a real process on 127.0.0.1, the URL printed
once, the token file private, nothing served without the token."""

from __future__ import annotations

import http.client
import signal
import socket
import stat
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit

from tests.waits import HANG

from .conftest import demo_env, heinzel_id


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def ask(port: int, path: str, cookie: str = "") -> tuple[int, str, str]:
    """GET ``path``: the status, the Set-Cookie header and the body."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=HANG)
    try:
        connection.request("GET", path, headers={"Cookie": cookie} if cookie else {})
        answer = connection.getresponse()
        return answer.status, answer.getheader("set-cookie", ""), answer.read().decode()
    finally:
        connection.close()


def wait_listening(port: int, process: subprocess.Popen[str]) -> None:
    """Until the port accepts (the process printed its URL before uvicorn binds)."""
    deadline = time.monotonic() + HANG
    while time.monotonic() < deadline and process.poll() is None:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.05)
    raise AssertionError("hz system serve never listened")


def serve(home: Path, port: int) -> subprocess.Popen[str]:
    """`hz system serve` on ``port`` as a person starts it (stdout and stderr piped)."""
    return subprocess.Popen(
        [sys.executable, "-m", "heinzel", "system", "serve", "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=demo_env(home),
    )


def opened(process: subprocess.Popen[str], port: int) -> str:
    """The login URL the server printed, once its port accepts."""
    assert process.stdout is not None
    line = ""
    while "open: " not in line:
        line = process.stdout.readline()
        if not line and process.poll() is not None:
            raise AssertionError(f"hz system serve ended ({process.returncode}) with no URL")
    wait_listening(port, process)
    return line.split("open: ", 1)[1].strip()


def test_hz_system_serve_prints_the_url_and_guards_every_page(home: Path) -> None:
    """The printed URL logs in; before it, the list is 401; the token file is 0600."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "heinzel", "system", "serve", "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=demo_env(home),
    )
    with process:
        assert process.stdout is not None
        lines = [process.stdout.readline(), process.stdout.readline()]
        url = next(line.split("open: ", 1)[1].strip() for line in lines if "open: " in line)
        token_file = home / "web" / "token"
        assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
        assert url.endswith(token_file.read_text().strip())
        wait_listening(port, process)
        assert ask(port, "/")[0] == 401
        status, set_cookie, _ = ask(port, urlsplit(url).path + "?" + urlsplit(url).query)
        assert status == 303
        status, _, page = ask(port, "/", set_cookie.split(";")[0])
        assert status == 200
        assert "weekly-report" in page
        process.terminate()
        process.wait(timeout=HANG)


def test_a_second_serve_on_a_taken_port_is_refused_and_leaves_the_token(home: Path) -> None:
    """`hz system serve` on the port another one serves: HZH310 and a hint on stderr, exit
    1, no URL printed, and the token file still the running server's (its URL works)."""
    port = free_port()
    with serve(home, port) as first:
        try:
            url = opened(first, port)
            token_file = home / "web" / "token"
            token = token_file.read_text()
            second = subprocess.run(
                [sys.executable, "-m", "heinzel", "system", "serve", "--port", str(port)],
                capture_output=True,
                text=True,
                env=demo_env(home),
                timeout=HANG,
            )
            assert second.returncode == 1
            assert second.stderr.startswith(f"HZH310: can't listen on 127.0.0.1:{port}")
            assert "\nhint: " in second.stderr
            assert "open: " not in second.stdout
            assert token_file.read_text() == token
            login = urlsplit(url)
            assert ask(port, f"{login.path}?{login.query}")[0] == 303
        finally:
            first.terminate()
            first.wait(timeout=HANG)


def test_sigterm_ends_the_open_event_streams_and_the_server(home: Path) -> None:
    """A page follows a Heinzelmännchen whose turn a killed process left running (so its
    event stream would stay open); SIGTERM to `hz system serve` ends that stream and the
    server, rather than waiting for the page to go."""
    killed = subprocess.run(
        [sys.executable, "-m", "heinzel", "heinzel", "wake", "weekly-report"],
        capture_output=True,
        env={**demo_env(home), "HZ_CRASH_AT": "after:turn.started"},
        timeout=120,
    )
    assert killed.returncode == 137
    port = free_port()
    with serve(home, port) as process:
        try:
            login = urlsplit(opened(process, port))
            cookie = ask(port, f"{login.path}?{login.query}")[1].split(";")[0]
            stream = http.client.HTTPConnection("127.0.0.1", port, timeout=HANG)
            stream.request("GET", f"/h/{heinzel_id(home)}/events", headers={"Cookie": cookie})
            answer = stream.getresponse()
            assert answer.status == 200
            assert answer.readline() == b"retry: 1500\n"
            process.send_signal(signal.SIGTERM)
            rest = answer.read()  # to the stream's end; a socket timeout fails the test
            assert b"event: row" in rest
            stream.close()
            assert process.wait(timeout=HANG) in (0, -signal.SIGTERM)
            assert process.stderr is not None
            assert process.stderr.read() == ""
        finally:
            process.kill()
            process.wait()
