"""The sidebar's JSON answers from `hz system serve` as a person runs it, over real HTTP:
a refusal's status is the one its page has."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from http.cookiejar import CookieJar
from pathlib import Path

from tests.waits import HANG

from .test_serve_cli import free_port
from .test_two_homes import serving


def test_a_chat_to_no_such_one_answers_404_with_its_code_message_and_hint(home: Path) -> None:
    """POST /h/nobody/chat asking for JSON: HZH080 is 404, as the page /h/nobody is, and
    the body still carries the code, the message and the hint."""
    port = free_port()
    jar = CookieJar()
    browser = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
    with serving(home, port) as login:
        page = browser.open(login, timeout=HANG).read().decode("utf-8")
        csrf = page.split('name="csrf" content="')[1].split('"')[0]
        origin = f"http://127.0.0.1:{port}"
        sent = urllib.request.Request(
            f"{origin}/h/nobody/chat",
            data=b"text=hello",
            method="POST",
            headers={
                "Origin": origin,
                "X-CSRF-Token": csrf,
                "Accept": "application/json",
                "Content-Type": "application/x-www-form-urlencoded",
            },
        )
        try:
            browser.open(sent, timeout=HANG)
            raise AssertionError("the chat to no such one was accepted")
        except urllib.error.HTTPError as refused:
            status, body = refused.code, json.loads(refused.read().decode("utf-8"))
        try:
            browser.open(f"{origin}/h/nobody", timeout=HANG)
            raise AssertionError("the page of no such one was served")
        except urllib.error.HTTPError as missing:
            page_status = missing.code
    assert (status, page_status) == (404, 404)
    assert body == {
        "code": "HZH080",
        "message": "no Heinzelmännchen named 'nobody'",
        "hint": "`hz heinzel list` shows them all",
    }
