"""The web head's ``web/turns.log``, where a chat turn's child writes its errors, is one of
hz's private files: 0600 whatever the umask, and never written through a link planted at
its path (docs/spine.md). Driven through `hz system serve` as a person runs it."""

from __future__ import annotations

import json
import stat
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from http.cookiejar import CookieJar
from pathlib import Path
from typing import Any

from tests.waits import HANG

from .conftest import demo_env, heinzel_id
from .test_serve_cli import free_port
from .test_two_homes import HZ


@contextmanager
def browser_at(home: Path) -> Iterator[tuple[urllib.request.OpenerDirector, str, str]]:
    """`hz system serve` over ``home`` started with umask 000, logged in: the browser, the
    server's origin and the page's CSRF token."""
    port = free_port()
    with subprocess.Popen(
        [HZ, "system", "serve", "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=demo_env(home),
        umask=0,
    ) as process:
        try:
            assert process.stdout is not None
            line = ""
            while "open: " not in line:
                line = process.stdout.readline()
                assert line, "hz system serve ended before printing its URL"
            browser = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(CookieJar()))
            page = browser.open(line.split("open: ", 1)[1].strip(), timeout=HANG).read().decode()
            csrf = page.split('name="csrf" content="')[1].split('"')[0]
            yield browser, f"http://127.0.0.1:{port}", csrf
        finally:
            process.terminate()
            process.wait(timeout=HANG)


def chat(
    browser: urllib.request.OpenerDirector, origin: str, csrf: str, text: str
) -> tuple[int, dict[str, Any]]:
    """POST a chat message to the week's Heinzelmännchen, asking for JSON."""
    sent = urllib.request.Request(
        f"{origin}/h/weekly-report/chat",
        data=urllib.parse.urlencode({"text": text}).encode(),
        method="POST",
        headers={
            "Origin": origin,
            "X-CSRF-Token": csrf,
            "Accept": "application/json",
            "Content-Type": "application/x-www-form-urlencoded",
        },
    )
    try:
        with browser.open(sent, timeout=HANG) as answer:
            return int(answer.status), json.loads(answer.read().decode("utf-8"))
    except urllib.error.HTTPError as refused:
        return int(refused.code), json.loads(refused.read().decode("utf-8"))


def ended_turns(home: Path) -> int:
    """How many turns the week's spine has ended (finished, or skipped with a reason)."""
    text = (home / "heinzel" / heinzel_id(home) / "session.jsonl").read_text(encoding="utf-8")
    return text.count('"kind":"turn.finished"') + text.count('"kind":"turn.skipped"')


def test_turns_log_is_0600_under_umask_000(home: Path) -> None:
    """A chat from the page starts its turn's child: turns.log is created 0600 although
    the web head runs with umask 000 (it was 0666)."""
    before = ended_turns(home)
    with browser_at(home) as (browser, origin, csrf):
        status, answer = chat(browser, origin, csrf, "what changed this week?")
        assert status == 200, answer
        log = home / "web" / "turns.log"
        assert stat.S_IMODE(log.lstat().st_mode) == 0o600
        deadline = time.monotonic() + HANG
        while ended_turns(home) == before and time.monotonic() < deadline:
            time.sleep(0.1)  # the child's turn ends before the home is left behind
    assert ended_turns(home) == before + 1, log.read_text("utf-8")


def test_a_link_planted_at_turns_log_is_not_written_through(home: Path, tmp_path: Path) -> None:
    """turns.log a symlink to a file elsewhere: the chat is refused with HZL001 (code,
    message, hint), the link's target is never created, and the message stays in the
    inbox for the tick to deliver."""
    (home / "web").mkdir(mode=0o700, exist_ok=True)
    target = tmp_path / "elsewhere.log"
    (home / "web" / "turns.log").symlink_to(target)
    inbox = home / "heinzel" / heinzel_id(home) / "inbox"
    waiting = set(inbox.glob("rq-*.json")) if inbox.exists() else set()
    with browser_at(home) as (browser, origin, csrf):
        status, answer = chat(browser, origin, csrf, "what changed this week?")
    assert (status, answer["code"]) == (400, "HZL001"), answer
    assert "turns.log is a symlink" in answer["message"] and answer["hint"]
    assert not target.exists()
    assert (home / "web" / "turns.log").is_symlink()
    assert len(set(inbox.glob("rq-*.json")) - waiting) == 1
