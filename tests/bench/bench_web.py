"""The web head's list page over 1,000 Heinzelmännchen (server time, through the whole
Starlette stack with TestClient) beside the same listing rendered as ``hz heinzel list``
text in process (the CLI's work without its process start)."""

from __future__ import annotations

import importlib.util
import tempfile
from pathlib import Path

from starlette.testclient import TestClient

from heinzel.app import App
from heinzel.cli import render
from heinzel.service import Service
from heinzel.web.server import create_app

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location("bench_heinzel", HERE / "bench_heinzel.py")
assert _spec and _spec.loader
bench_heinzel = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench_heinzel)


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        service = bench_heinzel.populate(Path(tmp), 1000)

        def open_app() -> App:  # one per worker thread, as the server opens them
            return App(Service(service.home, service.clock, service.settings, owner="bench"))

        web = create_app(open_app, "t" * 32, hosts=["testserver"], idle_seconds=0)
        with TestClient(web) as client:
            client.get("/auth?token=" + "t" * 32)
            assert client.get("/").text.count('class="name"') == 1000

            def page() -> None:
                client.get("/")

            def cli() -> None:
                render.listing(service.listing())

            web_ms = bench_heinzel.best_ms(page)
            cli_ms = bench_heinzel.best_ms(cli)
        print(
            f"list page over 1000: {web_ms:8.2f} ms server time   "
            f"(hz heinzel list in process: {cli_ms:.2f} ms; x{web_ms / cli_ms:.1f})"
        )
        verdict = "PASS" if web_ms < 200 else "MISS"
        print(f"{verdict} list page over 1000: {web_ms:.2f} ms server time (target < 200 ms)")
