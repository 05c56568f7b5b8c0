"""The web head in a real browser: Debian's Chromium driven by Playwright (no browser
download) against a real ``hz system serve``: the token URL, the list, a page, a chat whose
turn's lines arrive; retrying, approving, pausing and answering from the page, which changes
without a reload (and the list with it); axe-core on every page; a screenshot of each, wide
and 375 px."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from heinzel.app import App
from tests.waits import HANG, HANG_MS

from .conftest import demo_env, heinzel_id
from .test_serve_cli import free_port, wait_listening

CHROMIUM = Path("/usr/bin/chromium")
SHOTS = Path(__file__).resolve().parent / "screenshots"
AXE = (
    Path(__file__).resolve().parents[2]
    / ".venv"
    / "axe"
    / "node_modules"
    / "axe-core"
    / "axe.min.js"
)
"""axe-core, pinned in the Makefile (`make axe`, part of `make unit`)."""

pytestmark = pytest.mark.skipif(
    not CHROMIUM.exists(),
    reason="no /usr/bin/chromium (apt-get install chromium; `make unit` installs it)",
)


def _page(browser: Any, **options: Any) -> Any:
    """A new page whose every action and navigation waits up to the hang ceiling, not
    Playwright's 30 s: an element the test expects is waited for until it is there."""
    page = browser.new_page(**options)
    page.set_default_timeout(HANG_MS)
    page.set_default_navigation_timeout(HANG_MS)
    return page


def start_serving(
    home: Path, port: int, env: dict[str, str] | None = None
) -> tuple[subprocess.Popen[str], str]:
    """A real ``hz system serve`` over the played week, listening; the URL it printed."""
    process = subprocess.Popen(
        [sys.executable, "-m", "heinzel", "system", "serve", "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=env or demo_env(home),
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
    process.wait(timeout=HANG)
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
    turn's lines arrive; then, without a reload, retry its turn with a hint, approve the
    draft, pause and unpause from the keyboard, and see the page (and the list, open in a
    second tab) change each time; at 1280 and at 375 px wide."""
    sync_api = pytest.importorskip("playwright.sync_api")
    if SHOTS.exists():
        shutil.rmtree(SHOTS)
    SHOTS.mkdir()
    hid = heinzel_id(home)
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox"])
        try:
            wide = _page(browser, viewport={"width": 1280, "height": 900})
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
            wide.locator("#live li", has_text="turn.started").first.wait_for(timeout=HANG_MS)
            wide.locator("#live li", has_text="sent: a new turn").wait_for(timeout=HANG_MS)
            assert "keep it under ten lines" in wide.text_content("#messages")
            wide.screenshot(path=str(SHOTS / "chat-wide.png"), full_page=True)

            # the chat's turn ends and the page follows it: no reload from here on
            wide.locator("#messages li.them").first.wait_for(timeout=HANG_MS)
            wide.evaluate("window.hzKept = true")  # gone if the page ever reloads
            lister = _page(browser, viewport={"width": 1280, "height": 900})
            lister.goto(served)

            wide.locator("#part-actions summary", has_text="Retry its last turn").click()
            wide.fill("#retry-hint", "shorter")
            wide.locator("#part-actions details button", has_text="Retry").click()
            wide.locator("#said", has_text="retry: its turn runs now").wait_for(timeout=HANG_MS)
            wide.locator("#part-turns strong", has_text="retry").first.wait_for(timeout=HANG_MS)
            wide.locator("#part-turns li", has_text="retry").filter(
                has_not_text="running"
            ).first.wait_for(timeout=HANG_MS)

            key = _card_shows_pending(wide, home, hid)
            document = Path(key.partition("@file:")[2])  # the played home's document
            tags = document.read_text(encoding="utf-8").count("🧝 DRAFT")
            wide.click("text=Approve draft")
            wide.locator("#said", has_text="Approved the draft").wait_for(timeout=HANG_MS)
            assert document.read_text(encoding="utf-8").count("🧝 DRAFT") == tags - 1
            wide.locator("#part-turns strong", has_text="approval").first.wait_for(timeout=HANG_MS)
            wide.locator("#part-pending button", has_text="Approve draft").wait_for(
                state="detached", timeout=HANG_MS
            )
            lister.locator("ul.rows", has_text="draft waiting").wait_for(
                state="detached", timeout=HANG_MS
            )

            # from the keyboard: Pause, then Unpause; the list follows in its own tab
            wide.locator("#part-actions button", has_text="Pause").focus()
            wide.keyboard.press("Enter")
            wide.locator("#state", has_text="paused").wait_for(timeout=HANG_MS)
            lister.locator("ul.rows .badge", has_text="paused").wait_for(timeout=HANG_MS)
            wide.locator("#part-actions button", has_text="Unpause").focus()
            wide.keyboard.press("Enter")
            wide.locator("#part-actions button", has_text="Pause").wait_for(timeout=HANG_MS)
            lister.locator("ul.rows .badge", has_text="paused").wait_for(
                state="detached", timeout=HANG_MS
            )
            assert wide.evaluate("window.hzKept") is True
            wide.screenshot(path=str(SHOTS / "after-wide.png"), full_page=True)

            narrow = _page(browser, viewport={"width": 375, "height": 700})
            narrow.goto(served)
            narrow.screenshot(path=str(SHOTS / "list-375.png"), full_page=True)
            narrow.goto(served.split("/auth", maxsplit=1)[0] + f"/h/{hid}")
            scroll = narrow.evaluate("document.documentElement.scrollWidth")
            assert scroll <= 375
            narrow.screenshot(path=str(SHOTS / "heinzel-375.png"), full_page=True)
        finally:
            browser.close()


def _card_shows_pending(page: Any, home: Path, hid: str) -> str:
    """Wait until the waiting card offers the draft the index has pending; its key."""
    key = str(App.from_environment(str(home), demo_env(home)).service.show(hid)["pending"]["ref"])
    page.wait_for_selector(f'#part-pending input[name="item"][value="{key}"]', state="attached")
    return key


def test_a_chat_refused_by_a_restarted_server_says_so_and_keeps_the_message(home: Path) -> None:
    """The page stays open while `hz system serve` restarts (a new token, so its cookie is
    stale): sending a message shows the server's 401 in the live list and in the page's
    alert (announced), marks the message "not sent" and puts its text back in the box,
    rather than "sending…" forever."""
    sync_api = pytest.importorskip("playwright.sync_api")
    port = free_port()
    process, url = start_serving(home, port)
    try:
        with sync_api.sync_playwright() as p:
            browser = p.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox"])
            try:
                page = _page(browser)
                page.goto(url)
                page.click("a.name")
                page.wait_for_url(f"**/h/{heinzel_id(home)}")
                stop_serving(process)
                process, _ = start_serving(home, port)
                page.fill("#chat-text", "keep it under ten lines")
                page.keyboard.press("Control+Enter")
                refused = page.locator("#live li.error", has_text="401")
                refused.wait_for(timeout=HANG_MS)
                assert "hz system serve" in (refused.text_content() or "")
                # and announced: the page's alert (role="alert") carries the refusal too
                page.locator('#refused[role="alert"]', has_text="401").wait_for(timeout=HANG_MS)
                assert page.locator("#messages li.me").last.text_content() == (
                    "keep it under ten linesnot sent"
                )
                assert page.input_value("#chat-text") == "keep it under ten lines"
            finally:
                browser.close()
    finally:
        stop_serving(process)


def axe_violations(page: Any) -> list[dict[str, Any]]:
    """What axe-core finds wrong on the page as it is now: each rule broken, its impact
    and the elements (their selector and why), for the assertion's message."""
    page.add_script_tag(path=str(AXE))
    found: list[dict[str, Any]] = page.evaluate(
        """async () => (await axe.run(document)).violations.map(v => ({
            id: v.id, impact: v.impact, help: v.help,
            nodes: v.nodes.map(n => [n.target.join(" "), n.failureSummary])}))"""
    )
    return found


def test_axe_core_finds_no_violation_on_any_page(served: str, home: Path) -> None:
    """axe-core (every rule it runs by default: contrast, names, landmarks, headings, focus
    of scrolling regions...) on the list, a Heinzelmännchen's page, a turn's page, the
    error page and the graph, at 1280 and at 375 px wide, finds nothing."""
    sync_api = pytest.importorskip("playwright.sync_api")
    if not AXE.exists():
        pytest.skip("no axe-core (npm not found; `make axe` installs it)")
    hid = heinzel_id(home)
    turn = App.from_environment(str(home), demo_env(home)).service.show(hid)["turns"][-1]["id"]
    base = served.split("/auth", maxsplit=1)[0]
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox"])
        found = {}
        try:
            for width in (1280, 375):
                page = _page(browser, viewport={"width": width, "height": 900})
                page.goto(served)
                for path in ("/", f"/h/{hid}", f"/h/{hid}/turn/{turn}", "/h/nobody", "/graph"):
                    page.goto(base + path)
                    page.wait_for_load_state()
                    if violations := axe_violations(page):
                        found[f"{path} at {width} px"] = violations
        finally:
            browser.close()
    assert found == {}, json.dumps(found, indent=1)


def test_a_proposed_write_is_answered_from_the_page_by_keyboard(home: Path) -> None:
    """A chat turn's model (scripted, on loopback) proposes `pause`: the waiting card shows
    Approve pause without a reload, axe-core finds nothing wrong with it, and Enter on the
    button answers yes: the page says so at once and then shows it paused."""
    sync_api = pytest.importorskip("playwright.sync_api")
    from .scripted import PausingModel

    model = PausingModel()
    model.gate.set()
    process, url = start_serving(home, free_port(), model.env(demo_env(home)))
    try:
        with sync_api.sync_playwright() as p:
            browser = p.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox"])
            try:
                page = _page(browser, viewport={"width": 1280, "height": 900})
                page.goto(url)
                page.click("a.name")
                page.wait_for_url(f"**/h/{heinzel_id(home)}")
                page.evaluate("window.hzKept = true")
                page.fill("#chat-text", "pause it please")
                page.keyboard.press("Control+Enter")
                approve = page.locator("#part-pending button", has_text="Approve pause")
                approve.wait_for(timeout=HANG_MS)
                if AXE.exists():
                    assert axe_violations(page) == []
                approve.focus()
                page.keyboard.press("Enter")
                page.locator("#said", has_text="Answered yes").wait_for(timeout=HANG_MS)
                page.locator("#state", has_text="paused").wait_for(timeout=HANG_MS)
                page.locator("#part-pending", has_text="It asks: may it run").wait_for(
                    state="detached", timeout=HANG_MS
                )
                assert page.evaluate("window.hzKept") is True
            finally:
                browser.close()
    finally:
        stop_serving(process)
        model.close()


def _turns(home: Path, hid: str) -> tuple[int, int]:
    """How many turns the Heinzelmännchen's spine says started, and how many ended
    (finished or skipped)."""
    with (home / "heinzel" / hid / "session.jsonl").open(encoding="utf-8") as lines:
        kinds = [json.loads(line)["kind"] for line in lines]
    return kinds.count("turn.started"), kinds.count("turn.finished") + kinds.count("turn.skipped")


def test_wake_clicked_twice_runs_two_turns_and_a_resent_form_runs_none(
    served: str, home: Path
) -> None:
    """Wake now, clicked, then clicked again once its turn ended: two turns, because the
    page's script gives the form a new request id after a click that reached hz. The first
    click's form sent again as it was (a browser's re-POST: the same id) runs none and says
    it was delivered already."""
    sync_api = pytest.importorskip("playwright.sync_api")
    hid = heinzel_id(home)
    started, ended = _turns(home, hid)
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox"])
        try:
            page = _page(browser, viewport={"width": 1280, "height": 900})
            page.goto(served)
            page.goto(served.split("/auth", maxsplit=1)[0] + f"/h/{hid}")
            form = page.locator("#part-actions form", has=page.locator("text=Wake now"))
            button = form.locator("button")
            field = form.locator("[name=request_id]")
            first = field.input_value()
            sent = form.evaluate("f => new URLSearchParams(new FormData(f)).toString()")
            for click in (1, 2):
                button.click()
                page.locator("#said", has_text="wake: its turn runs now").wait_for()
                deadline = time.monotonic() + HANG
                while _turns(home, hid) != (started + click, ended + click):  # it ended
                    assert time.monotonic() < deadline, _turns(home, hid)
                    page.wait_for_timeout(50)
                page.evaluate("document.getElementById('said').textContent = ''")
            assert field.input_value() != first
            resent = page.evaluate(
                "([url, body]) => fetch(url, {method: 'POST', body: new URLSearchParams(body),"
                " credentials: 'same-origin', headers: {'Accept': 'application/json'}})"
                ".then(r => r.json())",
                [f"/h/{hid}/do", sent],
            )
            assert "already" in json.dumps(resent), resent
            assert _turns(home, hid) == (started + 2, ended + 2)
        finally:
            browser.close()
