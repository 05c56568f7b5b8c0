"""Every way a model's provider fails, through the real clients and the real `hz`: its own
code, message, hint and spine code; bounded in time; stopped by Ctrl-C or `hz heinzel stop`."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from typing import Any

import pytest

from ledger.spine import read_events
from tests import forkhz
from tests.waits import HANG

from .conftest import CREATED, User
from .fake_providers import Filtered, Hang, Http, Outcome, Page, Raw, closed_port


def _events(user: User) -> list[Any]:
    [spine] = (user.home / "heinzel").glob("hz-*/session.jsonl")
    return list(read_events(spine))


def _created(user: User) -> None:
    """notes-digest created from a sentence and approved (set-up, in this process)."""
    user.serve(lambda body, n: Outcome(CREATED))
    made = user.in_process("heinzel", "new", "summarise notes.txt into report.md every Friday")
    assert made.returncode == 0, made.stderr
    approved = user.in_process("approve", "notes-digest")
    assert approved.returncode == 0, approved.stderr


def _finished(user: User) -> dict[str, Any]:
    return [e.data for e in _events(user) if e.kind == "turn.finished"][-1]


def _tls(user: User) -> None:
    provider = user.serve(lambda body, n: Http(500))
    user.env["HZ_BASE_URL"] = provider.base_url.replace("http://", "https://")


def _refused(user: User) -> None:
    assert user.provider is not None
    user.provider.close()
    user.provider = None
    root = f"http://127.0.0.1:{closed_port()}"
    user.env["HZ_BASE_URL"] = root if user.api == "anthropic" else root + "/v1"


def _hung(user: User) -> None:
    user.serve(lambda body, n: Hang())
    user.env["HZ_REQUEST_TIMEOUT"] = "1s"


FAULTS: dict[str, tuple[Any, str, str, str, int | None]] = {
    # name: (set-up, spine code, HZE code, words of the message, requests the provider saw:
    # three for a transient fault, asked again; one for the rest; None: no server to count)
    "refused": (_refused, "provider-unreachable", "HZE013", "the connection was refused", None),
    "tls": (_tls, "provider-tls", "HZE014", "TLS handshake", 0),
    "timeout": (_hung, "provider-timeout", "HZE015", "did not answer in time", 3),
    "401": (
        lambda u: u.serve(lambda b, n: Http(401)),
        "provider-http-401",
        "HZE016",
        "HTTP 401",
        1,
    ),
    "403": (
        lambda u: u.serve(lambda b, n: Http(403)),
        "provider-http-403",
        "HZE016",
        "HTTP 403",
        1,
    ),
    "404": (
        lambda u: u.serve(lambda b, n: Http(404)),
        "provider-http-404",
        "HZE017",
        "HTTP 404",
        1,
    ),
    "429": (
        lambda u: u.serve(lambda b, n: Http(429)),
        "provider-http-429",
        "HZE018",
        "HTTP 429",
        3,
    ),
    "503": (
        lambda u: u.serve(lambda b, n: Http(503)),
        "provider-http-503",
        "HZE019",
        "HTTP 503",
        3,
    ),
    "html": (lambda u: u.serve(lambda b, n: Page()), "reply-not-json", "HZE020", "not JSON", 1),
    "shape": (
        lambda u: u.serve(lambda b, n: Raw('{"choices": "oops"}')),
        "reply-malformed",
        "HZE012",
        "not its API's shape",
        1,
    ),
    "filter": (
        lambda u: u.serve(lambda b, n: Filtered()),
        "reply-refused",
        "HZE021",
        "content filter",
        1,
    ),
}


EXECD_FAULTS = {"timeout"}
"""The fault whose wake is the real executable, once per provider: a fresh interpreter that
imports the provider's client after its environment is set, and exits with a connection
that never answered still open. The others' wakes are `hz` processes forked from the fork
server (tests/forkhz.py): the same command, client and loopback provider, its own
process, exit status and streams; only what the reply was differs, which is hz's logic
(a refused connection or a bad certificate is met by the same client in the forked
process)."""


class TestEveryFaultHasItsCode:
    """wake, show and the spine name the fault: never invalid-outcome, a Python name or a
    traceback."""

    @pytest.mark.parametrize("fault", list(FAULTS))
    def test_wake_names_the_fault(self, user: User, fault: str) -> None:
        """The turn fails with the fault's spine code; the CLI line, --json's cause and
        `show` give its HZE code, message and hint; a transient fault was asked three
        times, any other once."""
        setup, spine, code, words, requests = FAULTS[fault]
        _created(user)
        setup(user)
        user.execd = fault in EXECD_FAULTS
        woke = user.hz("heinzel", "wake", "notes-digest", "--json")
        assert woke.returncode == 1, woke.stderr
        shown = json.loads(woke.stdout)
        assert (shown["disposition"], shown["error"]) == ("failed", spine), shown
        assert shown["cause"]["code"] == code, shown
        assert words in shown["cause"]["message"], shown
        assert f"{code}: " in woke.stderr and "hint: " in woke.stderr, woke.stderr
        assert "Traceback" not in woke.stderr and "Error:" not in woke.stderr, woke.stderr
        assert _finished(user)["error"] == spine
        if requests is not None:
            assert user.provider is not None and len(user.provider.seen) == requests
        if requests == 3 or fault == "refused":
            assert "3 attempts" in shown["cause"]["message"], shown
        # what `show` reads back from the index (its logic): in this process
        show = json.loads(user.in_process("heinzel", "show", "notes-digest", "--json").stdout)
        assert show["turns"][-1]["reason"] == spine
        assert show["failure"]["code"] == code, show.get("failure")

    def test_chat_and_retry_name_the_fault(self, user: User) -> None:
        """chat and retry run turns of their own: each command's line gives the code and
        hint, exit 1."""
        _created(user)
        _refused(user)
        for args in (("chat", "notes-digest", "keep it short"), ("retry", "notes-digest")):
            ran = user.hz("heinzel", *args)
            assert ran.returncode == 1, ran.stderr
            assert "HZE013: could not reach the model's provider" in ran.stderr, ran.stderr
            assert "hint: start the model server" in ran.stderr, ran.stderr
        errors = [e.data.get("error") for e in _events(user) if e.kind == "turn.finished"]
        assert errors[-2:] == ["provider-unreachable"] * 2, errors


def _popen(user: User, *args: str, **extra: str) -> subprocess.Popen[str]:
    """``hz`` as a process of its own, its streams piped: the real executable for the tests
    in `FRESH` (Ctrl-C's), forked from the fork server for the others."""
    return (subprocess.Popen if user.execd else forkhz.Popen)(
        [sys.executable, "-m", "heinzel", *args],
        cwd=user.folder,
        env={**user.env, **extra},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _held(user: User) -> Any:
    """A provider that never answers, with the default request_timeout (60 s): only a stop
    ends the request early."""
    provider = user.serve(lambda body, n: Hang())
    return provider


class TestBoundedInTime:
    """A hung provider ends within its timeout; Ctrl-C or `hz heinzel stop` end the turn in
    the middle of a model request, abandoned (stopped), and say so truthfully."""

    def test_ctrl_c_during_a_request_stops_the_turn(self, user: User) -> None:
        """SIGINT once the provider holds the request: abandoned (stopped) on the spine and
        on the command's line, exit 1, and the provider was asked once."""
        _created(user)
        provider = _held(user)
        woke = _popen(user, "heinzel", "wake", "notes-digest")
        try:
            assert provider.received.wait(timeout=HANG), "the request never reached the provider"
            woke.send_signal(signal.SIGINT)
            _out, err = woke.communicate(timeout=HANG)
        finally:
            woke.kill()
        assert woke.returncode == 1, err
        assert "HZH361: SIGINT: turn tn-" in err and "ended abandoned (stopped)" in err, err
        assert "before it could stop" not in err, err
        finished = _finished(user)
        assert (finished["disposition"], finished["reason"]) == ("abandoned", "stopped")
        assert len(provider.seen) == 1

    def test_hz_heinzel_stop_during_a_request_stops_the_turn(self, user: User) -> None:
        """`hz heinzel stop` from another shell while the request is held: the running wake
        ends abandoned (stopped) without waiting for the provider."""
        _created(user)
        provider = _held(user)
        woke = _popen(user, "heinzel", "wake", "notes-digest", "--json")
        try:
            assert provider.received.wait(timeout=HANG), "the request never reached the provider"
            stop = user.hz("heinzel", "stop", "notes-digest")
            assert stop.returncode == 0, stop.stderr
            out, err = woke.communicate(timeout=HANG)
        finally:
            woke.kill()
        assert woke.returncode == 1, err
        # coded, as every refusal is: never `stopped: turn ... ended abandoned`
        assert err.startswith("HZH361: turn tn-") and "was stopped" in err, err
        ended = json.loads(out)
        assert (ended["state"], ended["reason"]) == ("abandoned", "stopped"), ended
        finished = _finished(user)
        assert (finished["disposition"], finished["reason"]) == ("abandoned", "stopped")

    def test_the_turns_time_limit_ends_a_hung_request(self, user: User) -> None:
        """A contract whose timeout is shorter than request_timeout: the turn ends abandoned
        (timeout) with HZE022, not after the request's minute."""
        user.serve(lambda body, n: Outcome(CREATED))
        text = CREATED["amendment"]["text"].replace(
            "  agent: {max_usd: 0.5}", "  agent: {max_usd: 0.5}\n  timeout: 2s"
        )
        assert "timeout: 2s" in text
        quick = {**CREATED, "amendment": {**CREATED["amendment"], "text": text}}
        user.serve(lambda body, n: Outcome(quick))
        made = user.in_process("heinzel", "new", "summarise notes.txt into report.md every Friday")
        assert made.returncode == 0, made.stderr
        assert user.in_process("approve", "notes-digest").returncode == 0
        _held(user)
        woke = user.hz("heinzel", "wake", "notes-digest", "--json")
        assert woke.returncode == 1, woke.stderr
        ended = json.loads(woke.stdout)
        assert (ended["state"], ended["reason"]) == ("abandoned", "timeout"), ended
        assert ended["cause"]["code"] == "HZE022", ended
        assert "HZE022: the turn ran out of its time limit" in woke.stderr


class TestEverySurfaceShowsIt:
    """MCP and the web page read the same turn record: the fault's code and hint."""

    def test_mcp_wake_and_show_and_the_web_page(self, user: User) -> None:
        """A provider that is down: `hz mcp`'s heinzel_wake and heinzel_show (the MCP SDK's
        client) give HZE013 and its spine code; the web page and the turn's page show them."""
        from starlette.testclient import TestClient

        from heinzel.app import App
        from heinzel.web.server import create_app
        from tests.hz_mcp.client import session

        _created(user)
        _refused(user)

        async def calls(s: Any) -> tuple[Any, Any]:
            woke = await s.call_tool("heinzel_wake", {"name": "notes-digest"})
            shown = await s.call_tool("heinzel_show", {"name": "notes-digest"})
            return woke.structured_content, shown.structured_content

        woke, shown = session(user.env, user.folder, calls)
        assert (woke["error"], woke["cause"]["code"]) == ("provider-unreachable", "HZE013"), woke
        assert shown["failure"]["code"] == "HZE013", shown
        assert shown["turns"][-1]["reason"] == "provider-unreachable", shown
        env = dict(user.env)
        app = create_app(
            lambda: App.from_environment(str(user.home), env),
            "t0ken",
            hosts=["testserver"],
            idle_seconds=0,
        )
        with TestClient(app, follow_redirects=False) as web:
            assert web.get("/auth?token=t0ken").status_code == 303
            page = web.get(f"/h/{shown['id']}").text
            assert "HZE013" in page and "provider-unreachable" in page
            turn = web.get(f"/h/{shown['id']}/turn/{woke['turn']}").text
            assert "HZE013" in turn and "error=provider-unreachable" in turn
