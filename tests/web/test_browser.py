"""The web head in a real browser: Debian's Chromium driven by Playwright (no browser
download) against a real ``hz system serve``: the token URL, the list, a page, a chat whose
turn's lines arrive, approving a draft; a screenshot of each, wide and 375 px."""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from heinzel.app import App

from .conftest import demo_env, heinzel_id
from .test_serve_cli import free_port, wait_listening

CHROMIUM = Path("/usr/bin/chromium")
SHOTS = Path(__file__).resolve().parent / "screenshots"

pytestmark = pytest.mark.skipif(
    not CHROMIUM.exists(),
    reason="no /usr/bin/chromium (apt-get install chromium; `make unit` installs it)",
)


def start_serving(home: Path, port: int) -> tuple[subprocess.Popen[str], str]:
    """A real ``hz system serve`` over the played week, listening; the URL it printed."""
    process = subprocess.Popen(
        [sys.executable, "-m", "heinzel", "system", "serve", "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=demo_env(home),
        cwd=home / "priya",
    )
    assert process.stdout is not None
    url = ""
    while "open: " not in url:
        url = process.stdout.readline()
    wait_listening(port, process)
    return process, url.split("open: ", 1)[1].strip()


def stop_serving(process: subprocess.Popen[str]) -> None:
    process.terminate()
    process.wait(timeout=30)
    if process.stdout is not None:
        process.stdout.close()


@pytest.fixture
def served(home: Path) -> Iterator[str]:
    """A real ``hz system serve`` over the played week; the URL it printed."""
    process, url = start_serving(home, free_port())
    try:
        yield url
    finally:
        stop_serving(process)


def test_a_user_looks_chats_and_approves(served: str, home: Path) -> None:
    """Open the token URL, see the list, open the Heinzelmännchen, send a chat and watch its
    turn's lines arrive, approve the draft; at 1280 and at 375 px wide."""
    sync_api = pytest.importorskip("playwright.sync_api")
    if SHOTS.exists():
        shutil.rmtree(SHOTS)
    SHOTS.mkdir()
    hid = heinzel_id(home)
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox"])
        try:
            wide = browser.new_page(viewport={"width": 1280, "height": 900})
            wide.goto(served)
            assert wide.url.endswith("/")
            assert wide.locator("a.name", has_text="weekly-report").count() == 1
            assert "draft waiting" in wide.text_content("ul.rows")
            wide.screenshot(path=str(SHOTS / "list-wide.png"), full_page=True)

            wide.click("a.name")
            wide.wait_for_url(f"**/h/{hid}")
            assert wide.text_content("h1") == "weekly-report"
            wide.screenshot(path=str(SHOTS / "heinzel-wide.png"), full_page=True)

            wide.fill("#chat-text", "keep it under ten lines")
            wide.keyboard.press("Control+Enter")
            wide.locator("#live li", has_text="turn.started").first.wait_for(timeout=60_000)
            wide.locator("#live li", has_text="sent: a new turn").wait_for(timeout=60_000)
            assert "keep it under ten lines" in wide.text_content("#messages")
            wide.screenshot(path=str(SHOTS / "chat-wide.png"), full_page=True)

            wide.reload()
            key = App.from_environment(str(home), demo_env(home)).service.show(hid)["pending"]
            document = Path(key["ref"].partition("@file:")[2])  # the played home's document
            tags = document.read_text(encoding="utf-8").count("🧝 DRAFT")
            wide.click("text=Approve draft")
            wide.wait_for_load_state()
            assert document.read_text(encoding="utf-8").count("🧝 DRAFT") == tags - 1

            narrow = browser.new_page(viewport={"width": 375, "height": 700})
            narrow.goto(served)
            narrow.screenshot(path=str(SHOTS / "list-375.png"), full_page=True)
            narrow.goto(served.split("/auth", maxsplit=1)[0] + f"/h/{hid}")
            scroll = narrow.evaluate("document.documentElement.scrollWidth")
            assert scroll <= 375
            narrow.screenshot(path=str(SHOTS / "heinzel-375.png"), full_page=True)
        finally:
            browser.close()


def test_a_chat_refused_by_a_restarted_server_says_so_and_keeps_the_message(home: Path) -> None:
    """The page stays open while `hz system serve` restarts (a new token, so its cookie is
    stale): sending a message shows the server's 401 in the live list, marks the message
    "not sent" and puts its text back in the box, rather than "sending…" forever."""
    sync_api = pytest.importorskip("playwright.sync_api")
    port = free_port()
    process, url = start_serving(home, port)
    try:
        with sync_api.sync_playwright() as p:
            browser = p.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox"])
            try:
                page = browser.new_page()
                page.goto(url)
                page.click("a.name")
                page.wait_for_url(f"**/h/{heinzel_id(home)}")
                stop_serving(process)
                process, _ = start_serving(home, port)
                page.fill("#chat-text", "keep it under ten lines")
                page.keyboard.press("Control+Enter")
                refused = page.locator("#live li.error", has_text="401")
                refused.wait_for(timeout=60_000)
                assert "hz system serve" in (refused.text_content() or "")
                assert page.locator("#messages li.me").last.text_content() == (
                    "keep it under ten linesnot sent"
                )
                assert page.input_value("#chat-text") == "keep it under ten lines"
            finally:
                browser.close()
    finally:
        stop_serving(process)
