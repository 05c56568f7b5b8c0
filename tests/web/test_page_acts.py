"""The page acts, it does not instruct (issue 43, items 2 and 3), in Debian's Chromium
against a real ``hz system serve``: hz's own error pages and icon, every wait at once with
the draft's text, only the buttons that can work, no next due while paused, the graph
inside its card with its labels whole, a stopped turn in a sentence."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from tests import forkhz
from tests.waits import HANG, HANG_MS

from .conftest import demo_env, heinzel_id
from .test_browser import AXE, CHROMIUM, _page, axe_violations, start_serving, stop_serving
from .test_serve_cli import free_port

pytestmark = pytest.mark.skipif(
    not CHROMIUM.exists(),
    reason="no /usr/bin/chromium (apt-get install chromium; `make unit` installs it)",
)


def _amend(home: Path, hid: str) -> None:
    """File an amendment with the real `hz heinzel amend` (one more line)."""
    contract = home / "heinzel" / hid / "contract"
    latest = max(contract.glob("v*.prose.md"), key=lambda p: int(p.name[1:].split(".")[0]))
    amended = home / "v-next.prose.md"
    amended.write_text(latest.read_text(encoding="utf-8") + "\n- [ ] one more line\n")
    filed = forkhz.run(
        [sys.executable, "-m", "heinzel", "heinzel", "amend", hid, "--from", str(amended)],
        env=demo_env(home),
        capture_output=True,
        text=True,
        check=False,
    )
    assert filed.returncode == 0, filed.stderr


def test_the_page_shows_every_wait_and_only_what_can_work(home: Path) -> None:
    """With a draft pending and an amendment filed, "Waiting on you" shows both at once and
    the draft's text; no request of any page is a 404 (the icon is hz's); paused, the head
    says no next due and neither Resume nor Retry is offered; an unknown address and a
    button's address opened by GET are hz's own pages, each with a link onward."""
    sync_api = pytest.importorskip("playwright.sync_api")
    hid = heinzel_id(home)
    _amend(home, hid)
    process, url = start_serving(home, free_port())
    base = url.split("/auth", maxsplit=1)[0]
    failed: list[str] = []
    try:
        with sync_api.sync_playwright() as p:
            browser = p.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox"])
            try:
                page = _page(browser, viewport={"width": 1280, "height": 900})
                page.on(
                    "response",
                    lambda r: failed.append(f"{r.status} {r.url}") if r.status >= 400 else None,
                )
                page.goto(url)
                page.goto(f"{base}/h/{hid}")
                pending = page.locator("#part-pending")
                pending.locator("button", has_text="Approve draft").wait_for()
                pending.locator("button", has_text="Approve amendment").wait_for()
                draft = pending.locator("pre.draft-text").first.text_content() or ""
                assert draft.strip(), "the pending draft's text is not on the page"
                assert page.goto(f"{base}/favicon.ico").status == 200  # type: ignore[union-attr]

                page.goto(f"{base}/h/{hid}")
                page.locator("#part-actions button", has_text="Pause").click()
                page.locator("#state", has_text="paused").wait_for()
                page.locator("#part-head dd", has_text="none while paused").wait_for()
                actions = page.locator("#part-actions")
                assert actions.locator("button", has_text="Resume").count() == 0
                assert actions.locator("summary", has_text="Retry").count() == 0
                assert failed == [], failed
                if AXE.exists():
                    assert axe_violations(page) == []

                answer = page.goto(f"{base}/nowhere")
                assert answer is not None and answer.status == 404
                assert page.text_content("h1") == "HZH540"
                assert "Not Found" not in (page.text_content("body") or "")
                page.click("text=Back to the list")
                page.wait_for_url(f"{base}/")

                answer = page.goto(f"{base}/h/{hid}/approve")
                assert answer is not None and answer.status == 405
                assert page.text_content("h1") == "HZH541"
                page.click("text=Back to its page")
                page.wait_for_url(f"**/h/{hid}")
            finally:
                browser.close()
    finally:
        stop_serving(process)


def _fits(page: Any, width: int) -> dict[str, Any]:
    """How the graph sits at ``width``: the page's scroll width, and each label not whole
    (its text cut, or drawn wider than its box)."""
    found: dict[str, Any] = page.evaluate(
        """() => ({
            scroll: document.documentElement.scrollWidth,
            cut: Array.from(document.querySelectorAll("svg.graph g.node")).filter(g => {
                const text = g.querySelector("text"), rect = g.querySelector("rect");
                const title = g.querySelector("title").textContent;
                return text.textContent.includes("…") || !title.startsWith(text.textContent)
                    || text.getBBox().width > rect.getBBox().width - 8;
            }).map(g => g.querySelector("title").textContent),
            labels: document.querySelectorAll("svg.graph text").length,
        })"""
    )
    return found


def test_the_graph_fits_its_card_with_its_labels_whole(home: Path) -> None:
    """/graph at 1280 and at 375 px: the page never scrolls sideways (the picture scrolls
    inside its card), and every label is drawn whole inside its box."""
    sync_api = pytest.importorskip("playwright.sync_api")
    process, url = start_serving(home, free_port())
    base = url.split("/auth", maxsplit=1)[0]
    try:
        with sync_api.sync_playwright() as p:
            browser = p.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox"])
            try:
                for width in (1280, 375):
                    page = _page(browser, viewport={"width": width, "height": 800})
                    page.goto(url)
                    page.goto(f"{base}/graph")
                    found = _fits(page, width)
                    assert found["labels"] > 0
                    assert found["scroll"] <= width, (width, found)
                    assert found["cut"] == [], (width, found)
            finally:
                browser.close()
    finally:
        stop_serving(process)


def test_a_stopped_turn_says_so_in_a_sentence(home: Path) -> None:
    """A chat's turn held on the model is stopped from the page: the failure card says
    "You stopped it" in a sentence (never "stopped: abandoned"), the head's notice links to
    it on the page (the command only as a detail), and Resume is not offered."""
    sync_api = pytest.importorskip("playwright.sync_api")
    from .scripted import PausingModel

    model = PausingModel()
    process, url = start_serving(home, free_port(), model.env(demo_env(home)))
    try:
        with sync_api.sync_playwright() as p:
            browser = p.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox"])
            try:
                page = _page(browser, viewport={"width": 1280, "height": 900})
                page.goto(url)
                page.click("a.name")
                page.wait_for_url(f"**/h/{heinzel_id(home)}")
                page.fill("#chat-text", "pause it please")
                page.keyboard.press("Control+Enter")
                assert model.reached.wait(timeout=HANG)
                page.locator("#state", has_text="awake").wait_for()
                page.locator("#part-actions summary", has_text="Stop the running turn").click()
                page.locator("#part-actions button", has_text="Stop it").click()
                card = page.locator("#part-failure")
                card.locator("h2", has_text="Its last turn was stopped").wait_for(timeout=HANG_MS)
                said = card.text_content() or ""
                assert "You stopped it while it ran" in said
                assert "stopped: abandoned" not in said
                notice = page.locator("#part-head .notices li").first
                assert notice.locator("a", has_text="See why, and retry").count() == 1
                assert page.locator("#part-actions button", has_text="Resume").count() == 0
                if AXE.exists():
                    assert axe_violations(page) == []
                # the list's card: the notice's next is a link to the page, the command a detail
                page.goto(url.split("/auth", maxsplit=1)[0] + "/")
                link = page.locator("ul.notices a", has_text="See why, and retry")
                assert link.get_attribute("href") == f"/h/{heinzel_id(home)}#part-failure"
                assert "next:" not in (page.text_content("ul.notices") or "")
            finally:
                browser.close()
    finally:
        stop_serving(process)
        model.close()


def test_a_failed_card_stays_gone_after_a_retry_that_ended_skipped(home: Path) -> None:
    """A wake fails (the provider answers 401); the card's Retry runs a turn whose model
    finds nothing to do (skipped): the failure card goes and does not come back, because
    the card follows the last turn."""
    sync_api = pytest.importorskip("playwright.sync_api")
    from .scripted import MODEL, fake

    failing = {"on": True}

    def script(body: dict[str, Any], n: int) -> Any:
        if failing["on"]:
            return fake.Http(401)
        return fake.Outcome({"report": "nothing new", "nothing_to_do": True, "reason": "quiet"})

    provider = fake.Provider("openai", script)
    env = {
        **demo_env(home),
        "HZ_MODEL": MODEL,
        "HZ_MODEL_FAST": MODEL,
        "HZ_MODEL_BEST": MODEL,
        "HZ_BASE_URL": provider.base_url,
        "OPENAI_API_KEY": "sk-test",
    }
    hid = heinzel_id(home)
    woke = forkhz.run(
        [sys.executable, "-m", "heinzel", "heinzel", "wake", hid],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert woke.returncode == 1, woke.stderr
    failing["on"] = False
    process, url = start_serving(home, free_port(), env)
    try:
        with sync_api.sync_playwright() as p:
            browser = p.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox"])
            try:
                page = _page(browser, viewport={"width": 1280, "height": 900})
                page.goto(url)
                page.goto(url.split("/auth", maxsplit=1)[0] + f"/h/{hid}")
                card = page.locator("#part-failure section.failed")
                card.wait_for()
                card.locator("button", has_text="Retry").click()
                page.locator("#part-turns li", has_text="retry").filter(
                    has_text="skipped"
                ).first.wait_for(timeout=HANG_MS)
                card.wait_for(state="detached", timeout=HANG_MS)
                page.reload()
                page.locator("#part-turns li", has_text="skipped").first.wait_for()
                assert page.locator("#part-failure section.failed").count() == 0
            finally:
                browser.close()
    finally:
        stop_serving(process)
        provider.close()


def test_a_text_answer_on_the_page_returns_at_once(home: Path) -> None:
    """The model asks a question; its answer box on the page says "Answered" while the
    follow-up turn's model request is still held (a gate only the test opens), then the
    question leaves "Waiting on you" once the turn goes on, without a reload."""
    import json
    import threading

    sync_api = pytest.importorskip("playwright.sync_api")
    from .scripted import MODEL, fake

    answer, question = "only the platform team's", "Which incidents belong in it?"
    gate, reached = threading.Event(), threading.Event()

    def script(body: dict[str, Any], n: int) -> Any:
        if answer in json.dumps(body):
            reached.set()
            gate.wait(timeout=HANG)
            return fake.Outcome({"report": "noted", "nothing_to_do": True, "reason": "answered"})
        return fake.Outcome({"report": "one thing is unclear", "question": question})

    provider = fake.Provider("openai", script)
    env = {
        **demo_env(home),
        "HZ_MODEL": MODEL,
        "HZ_MODEL_FAST": MODEL,
        "HZ_MODEL_BEST": MODEL,
        "HZ_BASE_URL": provider.base_url,
        "OPENAI_API_KEY": "sk-test",
    }
    hid = heinzel_id(home)
    woke = forkhz.run(
        [sys.executable, "-m", "heinzel", "heinzel", "wake", hid, "--json"],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert json.loads(woke.stdout)["state"] == "waiting", woke.stderr
    process, url = start_serving(home, free_port(), env)
    try:
        with sync_api.sync_playwright() as p:
            browser = p.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox"])
            try:
                page = _page(browser, viewport={"width": 1280, "height": 900})
                page.goto(url)
                page.goto(url.split("/auth", maxsplit=1)[0] + f"/h/{hid}")
                asked = page.locator("#part-pending .question.ask", has_text=question)
                asked.locator("textarea").fill(answer)
                asked.locator("button", has_text="Answer").click()
                page.locator("#said", has_text="Answered; its turn goes on.").wait_for()
                assert not gate.is_set()
                assert reached.wait(timeout=HANG)  # the child's follow-up asks the model
                gate.set()
                page.locator("#part-pending", has_text=question).wait_for(
                    state="detached", timeout=HANG_MS
                )
            finally:
                browser.close()
    finally:
        gate.set()
        stop_serving(process)
        provider.close()
