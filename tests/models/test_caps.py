"""A cap is a cap: real `hz` processes against a loopback OpenAI server that bills each
request at its worst case (all the ``max_tokens`` it was allowed), so a cap "worth two
requests" is exact. Each request's worst case is reserved before it is sent, under the
home's spend lock; what was spent, on a skipped turn too, and a reservation a crash cut
off count towards the day, and `show` reports that spend."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from heinzel.session.spend import spent_on_spines
from heinzel.store.home import Home
from ledger.spine import read_events
from tests import forkhz

from .conftest import CONTRACT, CREATED, DRAFT, FRIDAY, KEY, MODELS, User, outcome_after_report
from .fake_providers import Hang, Http, Outcome, Page, Provider, Raw, Stall, closed_port

OUT_TOKENS = 4096
"""What hz allows a request to write (``max_tokens``), all of which the meter bills."""
W = Decimal(OUT_TOKENS) / Decimal(1_000_000)
"""One request's price: 4096 output tokens at 1 USD per million (input is free)."""


@dataclass
class Meter(Provider):
    """The fake OpenAI server, billing every request all its ``max_tokens`` (4096 when
    none is sent); with ``gate``, each request waits for it before it is answered."""

    gate: threading.Event | None = None
    arrived: list[threading.Event] = field(default_factory=list)

    def answer(self, body: dict[str, Any], n: int) -> tuple[int, str, bytes]:
        for signal in self.arrived[: len(self.seen)]:
            signal.set()
        if self.gate is not None:
            assert self.gate.wait(120), "the test never opened the gate"
        status, kind, out = super().answer(body, n)
        reply = json.loads(out)
        billed = body.get("max_completion_tokens") or body.get("max_tokens") or OUT_TOKENS
        reply["usage"] = {
            "prompt_tokens": 1000,
            "completion_tokens": billed,
            "total_tokens": 1000 + billed,
        }
        return status, kind, json.dumps(reply).encode()


@pytest.fixture
def buyer(tmp_path: Path) -> Iterator[User]:
    """A user of the OpenAI API, its model priced at 1 USD per million output tokens."""
    person = User(tmp_path, "openai", execd=False)
    person.folder.mkdir()
    (person.folder / "notes.txt").write_text("ship the rounding fix\n", encoding="utf-8")
    (person.folder / "report.md").write_text("# Report\n", encoding="utf-8")
    (person.folder / "other.md").write_text("# Other\n", encoding="utf-8")
    config = tmp_path / "hz.toml"
    config.write_text(
        '[heinzel.prices]\n"gpt-4o-mini" = {input = 0.0, output = 1.0}\n', encoding="utf-8"
    )
    person.env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(tmp_path),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "HZ_HOME": str(person.home),
        "HZ_CONFIG": str(config),
        "HZ_NOW": FRIDAY,
        "HZ_USER": "me",
        "HZ_MODEL": MODELS["openai"],
        "OPENAI_API_KEY": KEY,
    }
    yield person
    if person.provider is not None:
        person.provider.close()


def _meter(user: User, script: Any, *, gate: threading.Event | None = None) -> Meter:
    meter = Meter("openai", script, gate=gate)
    user.provider = meter
    user.env["HZ_BASE_URL"] = meter.base_url
    return meter


def _create(user: User, name: str = "notes-digest", asset: str = "report.md") -> None:
    text = CONTRACT.replace("notes-digest", name).replace("report.md", asset)
    path = user.folder / f"{name}.prose.md"
    path.write_text(text, encoding="utf-8")
    made = user.in_process("heinzel", "new", "--from", str(path))
    assert made.returncode == 0, made.stderr
    approved = user.in_process("approve", name)
    assert approved.returncode == 0, approved.stderr


def _lines(user: User, kind: str) -> list[Any]:
    return [
        event
        for spine in sorted((user.home / "heinzel").glob("hz-*/session.jsonl"))
        for event in read_events(spine)
        if event.kind == kind
    ]


def _paid(user: User) -> Decimal:
    """The spine's spend: the sum of every ``model.request`` line's ``usd``."""
    return sum((Decimal(str(e.data["usd"])) for e in _lines(user, "model.request")), Decimal(0))


def _show(user: User, name: str = "notes-digest") -> dict[str, Any]:
    shown = user.hz("heinzel", "show", name, "--json")
    assert shown.returncode == 0, shown.stderr
    return dict(json.loads(shown.stdout))


def _close(a: float | str, b: Decimal) -> bool:
    return abs(Decimal(str(a)) - b) < Decimal("0.0000001")


class TestADayCap:
    def test_five_wakes_against_a_cap_worth_two_requests_spend_at_most_the_cap(
        self, buyer: User
    ) -> None:
        """Two wakes pay, three are skipped with reason cap and send nothing; `show`
        reports the day's true spend, the sum of the spine's ``model.request`` lines."""
        _create(buyer)
        cap = W * Decimal("2.5")
        meter = _meter(buyer, lambda body, n: Outcome(DRAFT))
        buyer.env["HZ_MAX_USD_PER_DAY"] = str(cap)
        ends, notices = [], []
        for _ in range(5):
            woke = buyer.hz("heinzel", "wake", "notes-digest", "--json")
            ends.append(json.loads(woke.stdout).get("disposition") if woke.stdout else woke.stderr)
            notices.append((woke.returncode, woke.stderr.split(":")[:2]))
        assert _paid(buyer) <= cap, ends
        assert len(meter.seen) == 2 and _paid(buyer) == 2 * W, ends
        assert notices[2:] == [(0, ["notice", " HZH331"])] * 3, notices  # a coded notice
        skipped = _lines(buyer, "turn.skipped")
        assert [e.data.get("reason") for e in skipped] == ["cap"] * 3, ends
        shown = _show(buyer)
        assert _close(shown["cost_today"], _paid(buyer)), shown["cost_today"]
        assert _close(spent_on_spines(Home(buyer.home), FRIDAY[:10]), _paid(buyer))
        assert _close(shown["spend_today"]["usd"], _paid(buyer)), shown["spend_today"]
        text = buyer.hz("heinzel", "show", "notes-digest").stdout
        assert "0.008192 USD" in text, text  # never 0.01 or 0.00

    def test_a_day_already_spent_is_a_coded_notice(self, buyer: User) -> None:
        """With the day's cap spent to the last cent, the next wake is skipped before its
        turn runs a model, with HZE005 on stderr and exit status 0."""
        _create(buyer)
        meter = _meter(buyer, lambda body, n: Outcome(DRAFT))
        buyer.env["HZ_MAX_USD_PER_DAY"] = str(W)
        first = buyer.hz("heinzel", "wake", "notes-digest")
        assert first.returncode == 0 and len(meter.seen) == 1, first.stderr
        second = buyer.hz("heinzel", "wake", "notes-digest")
        assert second.returncode == 0 and "notice: HZE005" in second.stderr, second.stderr
        assert len(meter.seen) == 1 and _paid(buyer) == W

    def test_a_skipped_turns_paid_request_is_counted(self, buyer: User) -> None:
        """A turn the cap stops after one paid request records that spend: the next wake
        sees it and sends nothing, and `show` counts it."""
        _create(buyer)
        meter = _meter(buyer, outcome_after_report(DRAFT))
        buyer.env["HZ_MAX_USD_PER_DAY"] = str(W * Decimal("1.5"))
        first = buyer.hz("heinzel", "wake", "notes-digest", "--json")
        assert json.loads(first.stdout)["disposition"] == "skipped", first.stdout
        [skip] = _lines(buyer, "turn.skipped")
        assert skip.data["reason"] == "cap" and _close(skip.data["usd"], W), skip.data
        again = buyer.hz("heinzel", "wake", "notes-digest", "--json")
        assert json.loads(again.stdout)["disposition"] == "skipped", again.stdout
        assert len(meter.seen) == 1 and _paid(buyer) == W
        assert _close(_show(buyer)["cost_today"], W)


class TestATurnCap:
    def test_a_turn_stopped_by_its_cap_counts_what_it_paid(self, buyer: User) -> None:
        """Under a turn cap worth one and a half requests, the second request is not
        sent: the turn ends skipped (cap) with a coded notice and its one request's spend,
        which `show` counts."""
        _create(buyer)
        meter = _meter(buyer, outcome_after_report(DRAFT))
        buyer.env["HZ_MAX_USD"] = str(W * Decimal("1.5"))
        woke = buyer.hz("heinzel", "wake", "notes-digest", "--json")
        assert json.loads(woke.stdout)["disposition"] == "skipped", woke.stdout
        assert woke.returncode == 0 and "notice: HZH331" in woke.stderr, woke.stderr
        assert "turn's cap" in woke.stderr
        [skip] = _lines(buyer, "turn.skipped")
        assert skip.data["reason"] == "cap" and _close(skip.data["usd"], W), skip.data
        assert len(meter.seen) == 1 and _close(_show(buyer)["cost_today"], W)


class TestACreatedTurn:
    def test_a_sentence_is_held_to_the_days_cap_too(self, buyer: User) -> None:
        """`hz heinzel new "sentence"` under a day cap smaller than one request's worst case
        sends nothing: the created turn is refused by the cap, nothing is spent."""
        meter = _meter(buyer, lambda body, n: Outcome(CREATED))
        buyer.env["HZ_MAX_USD_PER_DAY"] = str(W / 2)
        made = buyer.hz("heinzel", "new", "summarise notes.txt into report.md every Friday")
        assert made.returncode == 1, made.stdout
        assert meter.seen == [] and _paid(buyer) == 0, made.stderr
        assert "HZH331" in made.stderr and "day's cap" in made.stderr, made.stderr


class TestACrashCountsTheReservation:
    def test_a_kill_after_the_reservation_counts_it(self, buyer: User) -> None:
        """Killed after ``model.reserved`` and before its request's record, the turn's
        reservation counts: `show` reports it, and the next wake under a cap worth one and
        a half requests sends nothing."""
        _create(buyer)
        meter = _meter(buyer, lambda body, n: Outcome(DRAFT))
        buyer.env["HZ_MAX_USD_PER_DAY"] = str(W * Decimal("1.5"))
        killed = buyer.hz("heinzel", "wake", "notes-digest", HZ_CRASH_AT="after:model.reserved")
        assert killed.returncode == 137, killed.stderr
        [reserved] = _lines(buyer, "model.reserved")
        assert _close(reserved.data["usd"], W)
        assert _close(_show(buyer)["spend_today"]["usd"], W)
        buyer.hz("heinzel", "wake", "notes-digest")
        assert meter.seen == [] and _paid(buyer) == 0
        shown = _show(buyer)
        assert _close(shown["spend_today"]["usd"], W) and _close(shown["cost_today"], W)
        assert _close(spent_on_spines(Home(buyer.home), FRIDAY[:10]), W)  # the reservation


class TestARefusedRequestCostsNothing:
    def test_an_http_error_releases_the_reservation(self, buyer: User) -> None:
        """A request the provider refuses (HTTP 400: no reply, no bill) lets its
        reservation go: the failed turn and the day spent nothing."""
        _create(buyer)
        _meter(buyer, lambda body, n: Http(400))
        failed = buyer.hz("heinzel", "wake", "notes-digest")
        assert failed.returncode == 1 and "HZE010" in failed.stderr, failed.stderr
        kinds = [e.kind for e in _lines(buyer, "model.reserved") + _lines(buyer, "model.released")]
        assert kinds == ["model.reserved", "model.released"]
        [end] = _lines(buyer, "turn.finished")
        assert end.data["disposition"] == "failed" and end.data["usd"] == 0
        assert _show(buyer)["spend_today"]["usd"] == 0


def _nowhere(user: User) -> None:
    user.env["HZ_BASE_URL"] = f"http://127.0.0.1:{closed_port()}/v1"


def _no_such_host(user: User) -> None:
    user.env["HZ_BASE_URL"] = "http://hz-provider.invalid/v1"  # RFC 6761: never resolves


def _tls(user: User) -> None:
    user.serve(lambda body, n: Http(500))
    user.env["HZ_BASE_URL"] = user.env["HZ_BASE_URL"].replace("http://", "https://")


def _timed_out(step: Any) -> Any:
    def setup(user: User) -> None:
        user.serve(lambda body, n: step)
        user.env["HZ_REQUEST_TIMEOUT"] = "1s"

    return setup


USAGE = '"usage": {"prompt_tokens": 1000, "completion_tokens": 100, "total_tokens": 1100}'
UNPAID: dict[str, tuple[Any, str]] = {
    # name: (set-up, the failed turn's spine code); each request reached no provider or
    # was answered without usage
    "refused": (_nowhere, "provider-unreachable"),
    "dns": (_no_such_host, "provider-unreachable"),
    "tls": (_tls, "provider-tls"),
    "timeout": (_timed_out(Hang()), "provider-timeout"),
    "html": (lambda u: u.serve(lambda b, n: Page()), "reply-not-json"),
    "shape": (lambda u: u.serve(lambda b, n: Raw('{"choices": "oops"}')), "reply-malformed"),
}
MAYBE_PAID: dict[str, tuple[Any, str]] = {
    # a reply that began and was cut off, or one whose usage said something: counted
    "cut-off": (_timed_out(Stall()), "provider-timeout"),
    "shape-with-usage": (
        lambda u: u.serve(lambda b, n: Raw('{"choices": "oops", ' + USAGE + "}")),
        "reply-malformed",
    ),
}


def _failed_wake(user: User, spine: str) -> None:
    woke = user.hz("heinzel", "wake", "notes-digest", "--json")
    assert woke.returncode == 1, woke.stderr
    assert json.loads(woke.stdout)["error"] == spine, woke.stdout


def _report_usd(user: User) -> list[float]:
    shown = user.hz("heinzel", "report", "notes-digest", "--json")
    assert shown.returncode == 0, shown.stderr
    return [t["decided"]["usd"] for t in json.loads(shown.stdout)["turns"]]


class TestAFailedRequestCostsWhatWasPaid:
    @pytest.mark.parametrize("fault", list(UNPAID))
    def test_a_request_that_reached_no_provider_costs_nothing(
        self, buyer: User, fault: str
    ) -> None:
        """Refused, no such host, TLS, a timeout before any byte, no JSON, the wrong shape
        without usage: each request's reservation is released, the failed turn's end line,
        `show`, `report` and the day's spend say 0, and under a day cap worth one and a
        half requests a second wake is sent again (not skipped for the cap)."""
        setup, spine = UNPAID[fault]
        _create(buyer)
        setup(buyer)
        buyer.env["HZ_MAX_USD_PER_DAY"] = str(W * Decimal("1.5"))
        for _ in range(2):
            _failed_wake(buyer, spine)
        reserved, released = _lines(buyer, "model.reserved"), _lines(buyer, "model.released")
        assert (len(reserved), len(released)) == (2, 2), (reserved, released)
        assert [e.data["usd"] for e in _lines(buyer, "turn.finished")] == [0, 0]
        assert _lines(buyer, "turn.skipped") == []
        shown = _show(buyer)
        assert shown["spend_today"]["usd"] == 0 and shown["cost_today"] == 0, shown
        assert _report_usd(buyer) == [0, 0]
        assert spent_on_spines(Home(buyer.home), FRIDAY[:10]) == 0

    @pytest.mark.parametrize("fault", list(MAYBE_PAID))
    def test_a_request_that_may_have_been_paid_counts_in_full(
        self, buyer: User, fault: str
    ) -> None:
        """A reply cut off after its headers, or one of the wrong shape that carried a
        usage, may have been billed: its reservation counts, and the next wake under a
        cap worth one and a half requests is skipped for the cap."""
        setup, spine = MAYBE_PAID[fault]
        _create(buyer)
        setup(buyer)
        buyer.env["HZ_MAX_USD_PER_DAY"] = str(W * Decimal("1.5"))
        _failed_wake(buyer, spine)
        assert _lines(buyer, "model.released") == []
        [reserved] = _lines(buyer, "model.reserved")
        [end] = _lines(buyer, "turn.finished")
        assert end.data["usd"] == reserved.data["usd"] > 0
        shown = _show(buyer)
        assert _close(shown["spend_today"]["usd"], Decimal(str(end.data["usd"]))), shown
        assert _report_usd(buyer) == [end.data["usd"]]
        skipped = buyer.hz("heinzel", "wake", "notes-digest")
        assert [e.data.get("reason") for e in _lines(buyer, "turn.skipped")] == ["cap"], skipped


class TestTwoProcessesAtZero:
    def test_two_turns_cannot_both_pass_a_cap_worth_one_request(self, buyer: User) -> None:
        """While one process's request is at the provider (held there), a second
        Heinzelmännchen's turn in another process sees its reservation and is skipped
        with reason cap: one request in all, under the cap."""
        _create(buyer, "first", "report.md")
        _create(buyer, "second", "other.md")
        gate = threading.Event()
        first_in, second_in = threading.Event(), threading.Event()
        meter = _meter(buyer, lambda body, n: Outcome(DRAFT), gate=gate)
        meter.arrived = [first_in, second_in]
        cap = W * Decimal("1.5")
        buyer.env["HZ_MAX_USD_PER_DAY"] = str(cap)

        def wake(name: str) -> forkhz.Popen:
            return forkhz.Popen(
                [os.path.join(os.path.dirname(forkhz.HZ), "hz"), "heinzel", "wake", name],
                cwd=buyer.folder,
                env=buyer.env,
                stdout=forkhz.subprocess.PIPE,
                stderr=forkhz.subprocess.PIPE,
                text=True,
            )

        one = wake("first")
        try:
            assert first_in.wait(120), "the first request never reached the provider"
            two = wake("second")
            threading.Thread(target=lambda: (two.wait(), second_in.set()), daemon=True).start()
            assert second_in.wait(120)  # the second process ended, or its request came
        finally:
            gate.set()
        for process in (one, two):
            process.communicate(timeout=120)
        assert len(meter.seen) == 1, [s.body.get("messages", [])[:0] for s in meter.seen]
        assert _paid(buyer) == W <= cap
        assert [e.data.get("reason") for e in _lines(buyer, "turn.skipped")] == ["cap"]
