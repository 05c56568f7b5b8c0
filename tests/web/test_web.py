"""The web head over Starlette's TestClient: the token gate, CSRF and Origin, the pages,
the buttons (the same calls as the ``hz`` commands), escaping, and the spine's events."""

from __future__ import annotations

import json
import stat
import subprocess
from pathlib import Path

import pytest
from starlette.routing import Mount, Route
from starlette.testclient import TestClient

from heinzel.app import App
from heinzel.store.inbox import Inbox
from heinzel.web.auth import COOKIE, new_token
from heinzel.web.server import create_app

from .conftest import ORIGIN, TOKEN, demo_env, heinzel_id

SCRIPT = "<script>alert(1)</script>"


def post(client: TestClient, path: str, data: dict[str, str]) -> object:
    csrf = client.get("/").text.split('name="csrf" content="')[1].split('"')[0]
    return client.post(path, data={**data, "csrf": csrf}, headers={"Origin": ORIGIN})


def app_of(home: Path) -> App:
    return App.from_environment(str(home), demo_env(home))


class TestGate:
    def test_every_route_is_closed_without_the_token(self, home: Path) -> None:
        """Every route of the application, asked without the cookie, is 401 or 403."""
        web = create_app(lambda: app_of(home), TOKEN, hosts=["testserver"], idle_seconds=0)
        hid = heinzel_id(home)
        paths = []
        for route in web.routes:
            if isinstance(route, Mount):
                paths.append(("GET", "/static/hz.css"))
                paths.append(("GET", "/static/hz.js"))
            elif isinstance(route, Route):
                if route.path == "/favicon.ico":
                    continue  # the tab's icon is open: TestGate.test_the_icon_is_open
                for method in sorted(route.methods or {"GET"}):
                    paths.append((method, route.path.replace("{ref}", hid)))
        assert len(paths) >= 11
        with TestClient(web) as anonymous:
            for method, path in paths:
                answer = anonymous.request(method, path, headers={"Origin": ORIGIN})
                assert answer.status_code in (401, 403), (method, path)
                assert "weekly-report" not in answer.text
            wrong = anonymous.get("/auth?token=not-it", follow_redirects=False)
            assert wrong.status_code == 403
            assert COOKIE not in wrong.cookies

    def test_the_token_becomes_a_strict_httponly_cookie(self, home: Path) -> None:
        """/auth with the token sets an HttpOnly, SameSite=Strict cookie that is not the token."""
        web = create_app(lambda: app_of(home), TOKEN, hosts=["testserver"], idle_seconds=0)
        with TestClient(web, follow_redirects=False) as browser:
            answer = browser.get(f"/auth?token={TOKEN}")
            header = answer.headers["set-cookie"]
            assert "HttpOnly" in header
            assert "SameSite=strict" in header or "SameSite=Strict" in header
            assert TOKEN not in header
            assert browser.get("/").status_code == 200

    def test_the_icon_is_open_and_the_rest_still_closed(self, home: Path) -> None:
        """/favicon.ico answers every page's tab (a 401 page's too) with hz's icon; a
        browser's navigation without the cookie gets hz's error page, a script the text."""
        web = create_app(lambda: app_of(home), TOKEN, hosts=["testserver"], idle_seconds=0)
        with TestClient(web) as anonymous:
            icon = anonymous.get("/favicon.ico")
            assert icon.status_code == 200
            assert icon.headers["content-type"].startswith("image/svg+xml")
            page = anonymous.get("/", headers={"Accept": "text/html"})
            assert page.status_code == 401
            assert "HZH546" in page.text and "<h1>" in page.text
            assert 'rel="icon"' in page.text
            assert anonymous.get("/").text.startswith("401: ")

    def test_posting_the_right_token_says_to_open_it(self, home: Path) -> None:
        """POST /auth with the right token is 405 and says to open the URL, never that
        the token is wrong."""
        web = create_app(lambda: app_of(home), TOKEN, hosts=["testserver"], idle_seconds=0)
        with TestClient(web, follow_redirects=False) as browser:
            answer = browser.post(
                f"/auth?token={TOKEN}", headers={"Origin": ORIGIN, "Accept": "text/html"}
            )
            assert answer.status_code == 405
            assert answer.headers["allow"] == "GET"
            assert "HZH544" in answer.text and "not this server" not in answer.text
            assert COOKIE not in answer.cookies

    def test_another_host_is_refused(self, client: TestClient) -> None:
        """A request naming another Host (DNS rebinding) is 403 even with the cookie."""
        assert client.get("/", headers={"Host": "evil.example:8765"}).status_code == 403

    def test_the_token_file_is_private(self, tmp_path: Path) -> None:
        """The token is written 0600 and a new start writes a new one."""
        first = new_token(tmp_path / "web")
        path = tmp_path / "web" / "token"
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        assert path.read_text().strip() == first
        assert new_token(tmp_path / "web") != first


class TestChanges:
    def test_a_change_needs_origin_and_csrf(self, client: TestClient, home: Path) -> None:
        """A chat without Origin, from another origin, or without the CSRF token is 403 and
        leaves the inbox empty."""
        hid = heinzel_id(home)
        csrf = client.get("/").text.split('name="csrf" content="')[1].split('"')[0]
        before = sorted(p.name for p in Inbox(app_of(home).service.home, hid).directory.glob("*"))
        for headers, data in (
            ({}, {"text": "hi", "csrf": csrf}),
            ({"Origin": "http://evil.example"}, {"text": "hi", "csrf": csrf}),
            ({"Origin": ORIGIN}, {"text": "hi"}),
            ({"Origin": ORIGIN}, {"text": "hi", "csrf": "0" * 64}),
        ):
            answer = client.post(f"/h/{hid}/chat", data=data, headers=headers)
            assert answer.status_code == 403, (headers, data)
        after = sorted(p.name for p in Inbox(app_of(home).service.home, hid).directory.glob("*"))
        assert after == before

    def test_approving_the_draft_is_hz_approve(self, client: TestClient, home: Path) -> None:
        """The page's approve button approves the pending draft, as ``hz approve`` does."""
        hid = heinzel_id(home)
        page = client.get(f"/h/{hid}")
        assert "Approve draft" in page.text
        key = app_of(home).service.show(hid)["pending"]["ref"]
        document = Path(key.partition("@file:")[2])
        before = document.read_text(encoding="utf-8")
        answer = post(client, f"/h/{hid}/approve", {"item": key})
        assert answer.status_code == 303  # type: ignore[attr-defined]
        after = document.read_text(encoding="utf-8")
        assert after.count("🧝 DRAFT") == before.count("🧝 DRAFT") - 1
        assert f"<!-- hz:draft key={key} -->" in after

    def test_a_coded_error_is_shown_with_its_hint(self, client: TestClient, home: Path) -> None:
        """Declining when no amendment waits shows HZH076 on the page, status 400."""
        answer = post(client, f"/h/{heinzel_id(home)}/decline", {})
        assert answer.status_code == 400  # type: ignore[attr-defined]
        assert "HZH076" in answer.text  # type: ignore[attr-defined]


class TestPages:
    def test_the_list_filters_like_hz_heinzel_list(self, client: TestClient) -> None:
        """The list shows the row with its state and pending item; filters narrow it; a bad
        state is HZH082 on the page."""
        page = client.get("/")
        assert "weekly-report" in page.text and "draft waiting" in page.text
        assert "weekly-report" not in client.get("/?state=paused").text.split("</form>")[1]
        assert "weekly-report" in client.get("/?contract=weekly-report@2").text
        assert "weekly-report" in client.get("/?artifact=doc:nowhere").text.split("</form>")[0]
        bad = client.get("/?state=sleepy")
        assert bad.status_code == 400 and "HZH082" in bad.text

    def test_the_page_shows_contract_turns_lessons_and_verify(
        self, client: TestClient, home: Path
    ) -> None:
        """One page holds the versions with their diff, the turns, the lessons and the chain."""
        shown = app_of(home).service.show(heinzel_id(home))
        page = client.get(f"/h/{heinzel_id(home)}").text
        assert "v2.prose.md" in page and "v1.prose.md" in page and 'class="diff"' in page
        for lesson in shown["lessons"]:
            assert lesson["sentence"].replace("'", "&#39;") in page
        assert page.count("<time>") >= len(shown["turns"])
        assert "verified" in page
        assert client.get("/h/no-such-one").status_code == 404

    def test_script_in_a_name_lesson_and_chat_is_text(self, client: TestClient, home: Path) -> None:
        """A <script> in a lesson and a chat message, and a tag in a name asked for, are
        shown escaped, never as HTML."""
        app = app_of(home)
        hid = heinzel_id(home)
        app.service.append(hid, "lesson.recorded", {"sentence": SCRIPT, "turn": None})
        Inbox(app.service.home, hid).write("rq-9", "chat", SCRIPT, at=app.service.clock())
        page = client.get(f"/h/{hid}").text
        assert SCRIPT not in page
        assert page.count("&lt;script&gt;alert(1)&lt;/script&gt;") >= 2
        tag = "<img src=x onerror=alert(1)>"
        bad_name = client.get(f"/h/{tag}")
        assert bad_name.status_code == 404
        assert tag not in bad_name.text and "&lt;img src=x onerror=alert(1)&gt;" in bad_name.text


class TestChatAndEvents:
    def test_a_chat_is_hz_heinzel_chat_and_its_lines_arrive(
        self, client: TestClient, home: Path, children: list[subprocess.Popen[bytes]]
    ) -> None:
        """A chat from the page lands in the inbox and starts an asked turn in a child process;
        the events after the page's seq carry that turn's lines, and the stream starts at the
        row, not seq 1."""
        hid = heinzel_id(home)
        seq = int(client.get(f"/h/{hid}").text.split('data-seq="')[1].split('"')[0])
        csrf = client.get("/").text.split('name="csrf" content="')[1].split('"')[0]
        answer = client.post(
            f"/h/{hid}/chat",
            data={"text": "keep it under ten lines"},
            headers={"Origin": ORIGIN, "X-CSRF-Token": csrf, "Accept": "application/json"},
        )
        assert answer.status_code == 200, answer.text
        assert answer.json()["delivered"] == "a new turn"
        assert [child.wait(timeout=120) for child in children] == [0]
        texts = [r.message for r in _all(Inbox(app_of(home).service.home, hid))]
        assert "keep it under ten lines" in texts
        events = _events(client.get(f"/h/{hid}/events", headers={"Last-Event-ID": str(seq)}).text)
        lines = [data for kind, _, data in events if kind == "line"]
        assert events[0][0] == "row"
        assert lines and lines[0]["seq"] == seq + 1
        assert "turn.started" in [line["kind"] for line in lines]
        fresh = _events(client.get(f"/h/{hid}/events").text)
        assert [kind for kind, _, _ in fresh] == ["row", "parts"]  # the current row, no line

    def test_a_refused_chat_answers_its_code_message_and_hint(self, client: TestClient) -> None:
        """The sidebar's JSON answer to a coded error carries the hint the command prints,
        with the status the page has for it (404: no such Heinzelmännchen)."""
        csrf = client.get("/").text.split('name="csrf" content="')[1].split('"')[0]
        answer = client.post(
            "/h/nobody/chat",
            data={"text": "hello"},
            headers={"Origin": ORIGIN, "X-CSRF-Token": csrf, "Accept": "application/json"},
        )
        assert answer.status_code == 404
        assert answer.json() == {
            "code": "HZH080",
            "message": "no Heinzelmännchen named 'nobody'",
            "hint": "`hz heinzel list` shows them all",
        }


def _all(inbox: Inbox) -> list[object]:
    return [inbox.read(p.name.removesuffix(".json")) for p in sorted(inbox.directory.glob("rq-*"))]


def _events(text: str) -> list[tuple[str, str | None, dict[str, object]]]:
    found = []
    for block in text.split("\n\n"):
        fields = dict(line.split(": ", 1) for line in block.splitlines() if ": " in line)
        if "event" in fields:
            found.append((fields["event"], fields.get("id"), json.loads(fields["data"])))
    return found


@pytest.mark.parametrize("seq_back", [1, 3])
def test_resuming_sends_only_what_follows(client: TestClient, home: Path, seq_back: int) -> None:
    """With Last-Event-ID a few seqs back, exactly the lines after it come, in order."""
    hid = heinzel_id(home)
    last = int(client.get(f"/h/{hid}").text.split('data-seq="')[1].split('"')[0])
    events = _events(
        client.get(f"/h/{hid}/events", headers={"Last-Event-ID": str(last - seq_back)}).text
    )
    seqs = [data["seq"] for kind, _, data in events if kind == "line"]
    assert seqs == list(range(last - seq_back + 1, last + 1))


def test_a_page_far_behind_gets_the_backlog_not_the_spine(
    client: TestClient, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Last-Event-ID 0 (or any seq further back than the backlog) sends only the last
    BACKLOG lines, never the spine from its first line."""
    from heinzel.web import events

    monkeypatch.setattr(events, "BACKLOG", 5)
    hid = heinzel_id(home)
    last = events.last_seq(app_of(home).service.home.spine_path(hid))
    sent = _events(client.get(f"/h/{hid}/events", headers={"Last-Event-ID": "0"}).text)
    seqs = [data["seq"] for kind, _, data in sent if kind == "line"]
    assert seqs == list(range(last - 4, last + 1))
    ahead = _events(client.get(f"/h/{hid}/events", headers={"Last-Event-ID": "99999"}).text)
    assert [kind for kind, _, _ in ahead] == ["row", "parts"]


def test_dismissing_a_lesson_is_hz_heinzel_dismiss(client: TestClient, home: Path) -> None:
    """The Dismiss button marks the lesson dismissed in the index and the page drops it."""
    hid = heinzel_id(home)
    lesson = app_of(home).service.lessons(hid)[0]
    assert lesson["sentence"] in client.get(f"/h/{hid}").text
    answer = post(client, f"/h/{hid}/dismiss", {"lesson": str(lesson["seq"])})
    assert answer.status_code == 303  # type: ignore[attr-defined]
    assert app_of(home).service.lessons(hid)[0]["dismissed"]
    assert lesson["sentence"] not in client.get(f"/h/{hid}").text


def test_the_answer_button_is_hz_heinzel_answer(client: TestClient, home: Path) -> None:
    """Answering when no proposed write waits gives `hz heinzel answer`'s HZH210 on the page."""
    answer = post(client, f"/h/{heinzel_id(home)}/answer", {"said": "yes"})
    assert answer.status_code == 400  # type: ignore[attr-defined]
    assert "HZH210" in answer.text  # type: ignore[attr-defined]


class TestErrorPages:
    def test_an_unknown_address_is_hz_own_page(self, client: TestClient) -> None:
        """An address with no route is hz's page (HZH540, a link back), not "Not Found"."""
        for path in ("/nowhere", "/h/x/y/z", "/static/nothing.css"):
            answer = client.get(path)
            assert answer.status_code == 404, path
            assert "HZH540" in answer.text and 'href="/"' in answer.text, path
            assert answer.headers["content-type"].startswith("text/html")
        wanted = client.get("/nowhere", headers={"Accept": "application/json"})
        assert wanted.json()["code"] == "HZH540"

    def test_a_wrong_method_says_which_one(self, client: TestClient, home: Path) -> None:
        """GET on a button's address is 405 HZH541 naming POST, with a link to the page;
        POST on a page's address names GET."""
        hid = heinzel_id(home)
        answer = client.get(f"/h/{hid}/approve")
        assert answer.status_code == 405 and answer.headers["allow"] == "POST"
        assert "HZH541" in answer.text and "(POST), not GET" in answer.text
        assert f'href="/h/{hid}"' in answer.text
        csrf = client.get("/").text.split('name="csrf" content="')[1].split('"')[0]
        posted = client.post("/graph", data={"csrf": csrf}, headers={"Origin": ORIGIN})
        assert posted.status_code == 405 and "(GET), not POST" in posted.text
