"""What a browser sends to the served web head (a real ``hz system serve``) is data: a
``Last-Event-ID`` that is not a seq is HZH348 (it was a 500 with a traceback), and a path,
query or form that is not UTF-8 text is HZH346 (it reached hz altered, as U+FFFD)."""

from __future__ import annotations

import http.client
import json
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from heinzel.web.auth import Keys
from tests.waits import HANG

from .conftest import heinzel_id
from .test_serve_cli import ask, free_port, opened, serve


class Served:
    """A running ``hz system serve`` over ``home``, logged in."""

    def __init__(self, home: Path) -> None:
        self.home = home
        self.port = free_port()
        self.process = serve(home, self.port)
        login = urlsplit(opened(self.process, self.port))
        self.cookie = ask(self.port, f"{login.path}?{login.query}")[1].split(";")[0]
        self.csrf = Keys((home / "web" / "token").read_text().strip()).csrf

    def request(
        self, method: str, path: str, body: bytes | None = None, **headers: str
    ) -> tuple[int, str]:
        """The status and the body of one request (``path`` sent as given)."""
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=HANG)
        try:
            connection.putrequest(method, path, skip_accept_encoding=True)
            sent = {"Cookie": self.cookie, **{k.replace("_", "-"): v for k, v in headers.items()}}
            if body is not None:
                sent["Content-Length"] = str(len(body))
            for name, value in sent.items():
                connection.putheader(name, value)
            connection.endheaders(body)
            answer = connection.getresponse()
            return answer.status, answer.read().decode("utf-8", "replace")
        finally:
            connection.close()

    def post_form(self, path: str, body: bytes) -> tuple[int, str]:
        """A form post as the page's script sends it (Origin, CSRF header, JSON asked)."""
        return self.request(
            "POST",
            path,
            body,
            Origin=f"http://127.0.0.1:{self.port}",
            X_CSRF_Token=self.csrf,
            Accept="application/json",
            Content_Type="application/x-www-form-urlencoded",
        )

    def stop(self) -> str:
        """End the server; its stderr."""
        self.process.terminate()
        _, err = self.process.communicate(timeout=HANG)
        return err


@pytest.fixture
def served(home: Path) -> Iterator[Served]:
    head = Served(home)
    try:
        yield head
    finally:
        head.process.kill()
        head.process.wait()


def test_a_last_event_id_that_is_not_a_seq_is_a_coded_refusal(served: Served) -> None:
    """A 5,000-digit Last-Event-ID, one of 19 digits and a superscript digit are each 400
    with HZH348 on the error page, and the server goes on serving without a traceback."""
    events = f"/h/{heinzel_id(served.home)}/events"
    for given in ["9" * 5000, "9" * 19, "\u00b2"]:
        status, page = served.request("GET", events, Last_Event_ID=given)
        assert (status, "HZH348" in page, "reload the page" in page) == (400, True, True), given
    assert served.request("GET", "/")[0] == 200
    assert "Traceback" not in served.stop()


def test_a_path_query_or_form_that_is_not_utf8_is_a_coded_refusal(served: Served) -> None:
    """A name, a filter and a chat message whose percent-escapes (or raw bytes) are not
    UTF-8 are 400 HZH346 with the bytes shown escaped, not U+FFFD passed on: the chat
    reaches no inbox; a name in UTF-8's escapes is read as its letters."""
    hid = heinzel_id(served.home)
    inbox = served.home / "heinzel" / hid / "inbox"
    before = sorted(p.name for p in inbox.glob("*"))
    status, page = served.request("GET", "/h/weekly%FFreport")
    assert (status, page.split(":")[0]) == (400, "HZH346")
    assert "\\xff" in page and "\nhint: " in page
    status, page = served.request("GET", "/?state=aslee%C3")
    assert (status, page.split(":")[0]) == (400, "HZH346")
    for body in [b"text=caf%E9+au+lait", b"text=caf\xe9 au lait"]:
        status, page = served.post_form(f"/h/{hid}/chat", body)
        answer = json.loads(page)
        assert (status, answer["code"]) == (400, "HZH346"), page
        assert "caf\\xe9 au lait" in answer["message"] and answer["hint"]
    assert sorted(p.name for p in inbox.glob("*")) == before
    status, page = served.request("GET", "/h/caf%C3%A9")
    assert (status, "HZH080" in page, "café" in page) == (404, True, True)
    assert served.request("GET", "/?state=asleep")[0] == 200
    assert "Traceback" not in served.stop()
