"""A chat sent from the page until its turn's lines are shown on it: the real ``hz system
serve`` process, the message POSTed as the sidebar sends it, the page's event stream read
over HTTP; beside the same message sent with ``hz heinzel chat`` as a process (which runs
the turn itself and exits when it ends)."""

from __future__ import annotations

import os
import queue
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from urllib.parse import urlsplit

import httpx

ROUNDS = 5
NAME = "weekly-report"
ENDS = ("turn.finished", "turn.skipped")


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HZ_")}
    env.update(
        HZ_HOME=str(home),
        HZ_FIXTURE_SOURCES=str(home / "priya"),
        HZ_MODEL="offline",
        HZ_MODEL_FAST="offline",
        HZ_MODEL_BEST="offline",
        HZ_USER="priya",
        HZ_APPROVER="priya",
        HZ_LOG_LEVEL="error",
    )
    return env


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _listen(client: httpx.Client, seen: queue.Queue[tuple[float, str]]) -> None:
    """Each spine line's kind as the page receives it, with the time it arrived."""
    with client.stream("GET", f"/h/{NAME}/events", timeout=60) as stream:
        event = ""
        for line in stream.iter_lines():
            if line.startswith("event: "):
                event = line.removeprefix("event: ")
            elif line.startswith("data: ") and event == "line":
                kind = line.split('"kind": "', 1)[-1].split('"', 1)[0]
                seen.put((time.perf_counter(), kind))
                if kind in ENDS:
                    return


def _web_round(client: httpx.Client, origin: str, csrf: str, text: str) -> tuple[float, float]:
    """Milliseconds from the POST to the turn's first line and to its last."""
    seen: queue.Queue[tuple[float, str]] = queue.Queue()
    reader = threading.Thread(target=_listen, args=(client, seen), daemon=True)
    reader.start()
    time.sleep(0.3)  # the stream is open and past its first row before the message goes
    start = time.perf_counter()
    sent = client.post(
        f"/h/{NAME}/chat",
        data={"text": text, "csrf": csrf},
        headers={"Origin": origin, "Accept": "application/json"},
    )
    sent.raise_for_status()
    first, kind = seen.get(timeout=60)
    kinds = [kind]
    while kind not in ENDS:
        try:
            finished, kind = seen.get(timeout=20)
        except queue.Empty:
            raise AssertionError(f"no turn end on the page; saw {kinds}") from None
        kinds.append(kind)
    reader.join(timeout=60)
    return (first - start) * 1000, (finished - start) * 1000


def _cli_round(env: dict[str, str], text: str) -> float:
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "heinzel", "heinzel", "chat", NAME, text],
        env=env,
        check=True,
        capture_output=True,
    )
    return (time.perf_counter() - start) * 1000


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "home"
        env = _env(home)
        subprocess.run(
            [sys.executable, "-m", "heinzel", "demo", "--home", str(home)],
            check=True,
            capture_output=True,
            env=env,
            cwd=tmp,
        )
        port = _free_port()
        server = subprocess.Popen(
            [sys.executable, "-m", "heinzel", "system", "serve", "--port", str(port)],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            env=env,
            cwd=home / "priya",
        )
        try:
            assert server.stdout is not None
            url = ""
            while "open: " not in url:
                url = server.stdout.readline()
            login = urlsplit(url.split("open: ", 1)[1].strip())
            origin = f"http://127.0.0.1:{port}"
            with httpx.Client(base_url=origin, timeout=60) as client:
                for _ in range(300):  # until uvicorn has bound the port
                    try:
                        client.get(f"{login.path}?{login.query}")
                        break
                    except httpx.TransportError:
                        time.sleep(0.05)
                csrf = client.get("/").text.split('name="csrf" content="')[1].split('"')[0]
                web, done, cli = [], [], []
                for round_ in range(ROUNDS):  # interleaved, so both see the same machine
                    first_ms, finished_ms = _web_round(client, origin, csrf, f"web {round_}")
                    web.append(first_ms)
                    done.append(finished_ms)
                    cli.append(_cli_round(env, f"cli {round_}"))
        finally:
            server.terminate()
            server.wait(timeout=30)
    print(
        f"chat from the page, first line shown: {statistics.median(web):8.1f} ms   "
        f"its end shown: {statistics.median(done):.1f} ms   "
        f"(hz heinzel chat as a process: {statistics.median(cli):.1f} ms; "
        f"x{statistics.median(done) / statistics.median(cli):.2f}; medians of {ROUNDS})"
    )
