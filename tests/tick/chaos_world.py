"""The world of the model-based chaos test (tests/tick/test_model_chaos.py): a loopback
provider that charges for what it answers, and the invariants, read from the spine files
as plain JSONL (docs/spine.md) so that they never depend on hz's own reading.

The provider speaks OpenAI chat completions on 127.0.0.1 to pydantic-ai's real client.
Each `hz` process gets its own base URL (``/<tag>/v1``), so the provider knows which
process (and so which day, the process's ``HZ_NOW``) paid for each answer. Its weather is
set by the state machine: ``fair`` drafts, ``ask`` asks one question, ``fail`` answers
500, and a closed gate holds every request until the machine opens it (a slow provider:
the turn stays in think while other processes come). A process started in a faulty
weather keeps it for all its requests (`Loopback.modes`): ``garbage`` answers 200 with a
body that is not JSON, ``shape`` 200 with JSON of the wrong shape, ``stall`` holds each
request past the process's request timeout, and ``refuse`` (`Loopback.refused_url`)
points it at a port nobody listens on. None of these is paid: the provider's takings are
only the answers it served.
"""

from __future__ import annotations

import hashlib
import json
import re
import socket
import threading
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from decimal import Decimal
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from subprocess import Popen
from typing import Any

from tests.models.fake_providers import Provider

__all__ = ["DONE_WHEN", "FAULTS", "Loopback", "Spines", "violations"]

DONE_WHEN = (
    "every pull request merged this week appears in exactly one bullet",
    "every issue that moved to Done this week is covered",
    "the section has at most eight bullets",
)
"""The weekly report's ``### Done when`` (fixtures/priya/weekly-report.prose.md)."""
DRAFT = {
    "report": "drafted this week's section",
    "draft": {
        "text": "## Week\n\n- shipped the rounding fix\n",
        "output": "section",
        "contract_version": 1,
        "done_when": [{"item": item, "met": True, "note": "checked"} for item in DONE_WHEN],
    },
}
READER_GOAL = "Reader of report-0"
"""Words of the reader's goal (tests/tick/test_model_chaos.py): a request that holds them
is the reader's, and must hold no pending draft of report-0's document (`Loopback.leaked`)."""
LEAKS = ("🧝 DRAFT", "hz:draft key=", "hz:end key=")
ASK = {"report": "one thing is unclear", "question": "Which incidents belong in it?"}
LEARNED = {"report": "learned from the edits", "lessons": [{"sentence": "keep it short"}]}
INPUT_USD, OUTPUT_USD = Decimal("0.15"), Decimal("0.6")
"""The model's price per million tokens (the test's configuration sets the same)."""
OUTPUT_TOKENS = 1000
"""What every answer says it generated (fewer when the request's ``max_tokens`` says so)."""
HOLD_LIMIT = 60.0
"""Seconds a held request waits for the gate at most (the machine opens it before it
waits for any process, so reaching this is a bug of the test, reported loudly)."""
SLOT = re.compile(r"^hz-[0-9A-Za-z]+@\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
NANO = Decimal("0.000000001")
KEYS = {"v", "seq", "ts", "prev", "turn", "kind", "key", "data"}
LIFECYCLE = {"turn.started", "turn.resumed", "turn.waiting", "turn.finished", "turn.skipped"}
LIFECYCLE_OPEN = {"turn.started", "turn.resumed"}
HEINZEL_VERBS = {"heinzel.paused", "heinzel.unpaused", "heinzel.retired", "heinzel.unretired"}
FAULTS = ("garbage", "shape", "stall", "refuse")
"""The provider's faults a process keeps from its start (module docstring)."""
STALL = 1.5
"""Seconds a stalled request is held: past the 1 s request timeout its process runs with."""
RETRY_KEY = re.compile(r"^(hz-[0-9A-Za-z]+)@retry:(?:.*:)?(rq-[^:]+)$")
"""A retry's wake key, ``<id>@retry:<request id>`` (older: ``<id>@retry:<parent>:<id>``)."""
WAKE_ID = re.compile(r"@rq-chaos\d+w$")
"""The key of a wake the chaos model sent with ``--request-id`` (its ids end in ``w``)."""
PENDING = re.compile(r"🧝 DRAFT .*\n<!-- hz:draft key=(\S+) -->")
MARKED = re.compile(r"<!-- hz:draft key=(\S+) -->")


@dataclass
class Loopback:
    """The provider: charges every answer what its usage costs, by the process's tag.

    An answer's usage is half a token per byte of the request's body (a real tokenizer
    makes fewer of JSON) and `OUTPUT_TOKENS`, so a request costs about 0.002 USD, about a
    third of what hz must reserve for it (a token per byte sent and its ``max_tokens``).
    """

    weather: str = "fair"
    asks: int = 0
    paid: dict[str, list[Decimal]] = field(default_factory=dict)
    """Process tag -> what each of its answered requests cost."""
    problems: list[str] = field(default_factory=list)
    modes: dict[str, str] = field(default_factory=dict)
    """Process tag -> the fault it met from its start (`FAULTS`), for all its requests."""
    held: int = 0
    """Requests waiting at the closed gate right now."""
    leaked: list[str] = field(default_factory=list)
    """What the reader's requests saw of report-0's pending drafts or hz's tags."""
    dismissed: set[str] = field(default_factory=set)
    """The words of lessons the user dismissed (added once `hz heinzel dismiss` ended)."""
    resurfaced: list[str] = field(default_factory=list)
    """Requests that arrived after a dismissal and still held the dismissed words."""
    taught: int = 0
    """Lessons taught so far: each learning answer's sentence is its own."""

    def __post_init__(self) -> None:
        self.lock = threading.Lock()
        self.arrived = threading.Condition(self.lock)
        self.gate = threading.Event()
        self.gate.set()
        world = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers["Content-Length"]))
                status, out = world.answer(self.path.split("/")[1], json.loads(raw), len(raw))
                if status == 0:  # stalled: its process gave up; nothing is sent
                    return
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(out)))
                self.send_header("retry-after-ms", "1")
                self.end_headers()
                self.wfile.write(out)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        with socket.socket() as probe:  # a port that was free: nobody listens there
            probe.bind(("127.0.0.1", 0))
            self.refused_url = f"http://127.0.0.1:{probe.getsockname()[1]}/v1"

    def base_url(self, tag: str) -> str:
        return f"http://127.0.0.1:{self.server.server_port}/{tag}/v1"

    def wait_held(self, process: Popen[Any], limit: float = HOLD_LIMIT) -> bool:
        """Until a request waits at the closed gate (a turn is in think): whether one does
        before ``process`` ends (it may have sent none: a cap, a refusal) or ``limit``."""
        for _ in range(int(limit * 10)):
            with self.arrived:
                if self.arrived.wait_for(lambda: self.held > 0, timeout=0.1):
                    return True
            if process.poll() is not None:
                return False
        return False

    def close(self) -> None:
        self.gate.set()
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=10)

    def answer(self, tag: str, body: dict[str, Any], size: int) -> tuple[int, bytes]:
        with self.arrived:
            self.held += 1
            self.arrived.notify_all()
        try:
            opened = self.gate.wait(HOLD_LIMIT)
        finally:
            with self.lock:
                self.held -= 1
        if not opened:
            self.problems.append(f"a request of {tag} was held {HOLD_LIMIT} s")
            return 500, b"{}"
        mode = self.modes.get(tag)
        if mode == "stall":
            threading.Event().wait(STALL)  # the provider's own hang, past the client's timeout
            return 0, b""
        if mode == "garbage":
            return 200, b"<html>502 bad gateway</html>"
        if mode == "shape":
            return 200, b'{"object": "list", "data": []}'
        sent = json.dumps(body, ensure_ascii=False)
        with self.lock:
            back = [words for words in self.dismissed if words in sent]
            if back:
                self.resurfaced.append(f"a request of {tag} held the dismissed {back}")
        if READER_GOAL in sent:
            seen = [leak for leak in LEAKS if leak in sent]
            if seen:
                with self.lock:
                    self.leaked.append(f"a request of the reader ({tag}) held {seen}")
        tools = [t["function"]["name"] for t in body.get("tools") or []]
        final = next((t for t in tools if t.startswith("final_result")), None)
        with self.lock:
            if self.weather == "fail" or final is None:
                error = {"error": {"message": "boom", "type": "server_error"}}
                return 500, json.dumps(error).encode()
            if "read_approved" in tools:
                self.taught += 1
                taught = [{"sentence": f"keep it short, lesson {self.taught}"}]
                outcome: dict[str, Any] = {**LEARNED, "lessons": taught}
            elif self.asks > 0:
                self.asks -= 1
                outcome = ASK
            else:
                outcome = DRAFT
            prompt = size // 2
            limit = body.get("max_completion_tokens") or body.get("max_tokens") or OUTPUT_TOKENS
            output = min(OUTPUT_TOKENS, int(limit))
            cost = (prompt * INPUT_USD + output * OUTPUT_USD) / 1_000_000
            self.paid.setdefault(tag, []).append(cost)  # spent once the answer leaves
            n = sum(len(costs) for costs in self.paid.values())
        reply = Provider._openai([(final, outcome)], n)
        reply["usage"] = {
            "prompt_tokens": prompt,
            "completion_tokens": output,
            "total_tokens": prompt + output,
        }
        return 200, json.dumps(reply).encode()


DAMAGED: dict[str, Any] = {"kind": "damaged", "turn": None, "key": None, "data": {}}
"""What a line the machine damaged on purpose (`test_model_chaos.Chaos.flip`) reads as:
no envelope (the chain says so), no fact."""
MOVED = re.compile(r"^hz-[0-9A-Za-z]+@notes:")
"""The key of a source-changed wake of the watcher's input ``notes`` (one per move)."""


def _parsed(line: bytes) -> dict[str, Any]:
    try:
        found = json.loads(line)
    except ValueError:
        return DAMAGED
    return found if isinstance(found, dict) else DAMAGED


def _lines(path: Path) -> tuple[list[bytes], list[dict[str, Any]]]:
    """The complete lines of a spine (a line being appended right now is not yet one)."""
    raw = path.read_bytes()
    complete = raw[: raw.rfind(b"\n") + 1].split(b"\n")[:-1]
    return complete, [_parsed(line) for line in complete]


def _chain(path: Path, raw: list[bytes], lines: list[dict[str, Any]]) -> list[str]:
    """docs/spine.md's verifier: canonical envelopes, seq one more each line, prev chained."""
    prev, seq = None, 0
    for line, obj in zip(raw, lines, strict=True):
        where = f"{path.parent.name} seq {seq + 1}"
        if set(obj) != KEYS or obj["v"] != 1:
            return [f"{where}: not an envelope"]
        canonical = json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        if canonical.encode() != line:
            return [f"{where}: not canonical"]
        if obj["seq"] != seq + 1 or obj["prev"] != prev:
            return [f"{where}: the chain breaks (seq {obj['seq']})"]
        prev, seq = hashlib.sha256(line).hexdigest(), obj["seq"]
    return []


def _wake_keys(line: dict[str, Any]) -> list[str]:
    extra = line["data"].get("keys")
    if isinstance(extra, list) and extra:
        return [str(k) for k in extra]
    return [str(line["key"])] if line["key"] else []


@dataclass
class Spines:
    """What every spine and inbox of a home says, read as files."""

    home: Path
    broken: list[str] = field(default_factory=list)
    runs: Counter[str] = field(default_factory=Counter)
    """``<id>@<request or slot>`` -> the runs that delivered it (a turn started or skipped
    with the key, a steer a model request received, an answer recorded)."""
    acknowledged: set[str] = field(default_factory=set)
    """Slot keys any line names (a turn, a skip, a hand-over): each owes one turn."""
    drafts: Counter[str] = field(default_factory=Counter)
    """Slot key -> drafts placed by turns that ran it."""
    chats: dict[str, str] = field(default_factory=dict)
    """``<id>@<request id>`` of every chat request file -> the Heinzelmännchen's id."""
    said: dict[str, list[str]] = field(default_factory=dict)
    """A chat's words -> the ``<id>@<request id>`` of the requests that hold them."""
    spent: dict[str, Decimal] = field(default_factory=dict)
    """UTC day -> the sum of its ``model.request`` lines' ``usd``."""
    ended_with: Counter[str] = field(default_factory=Counter)
    """``<id>@<request id>`` -> steers into a turn that then failed, was stopped or was
    skipped (a cap) before a model request carried them: delivered into that turn, which
    the user sees end so, as a chat whose own turn ends so."""
    open: list[str] = field(default_factory=list)
    """``<id>/<turn>`` of the turns neither ended (finished, skipped) nor parked (waiting)."""
    kept: list[str] = field(default_factory=list)
    """``model.reserved`` lines neither settled (``model.request``) nor let go
    (``model.released``) by a turn that then ended or waited in the same process (no
    ``turn.resumed`` between): a request its process saw fail, booked as spend."""
    retries: Counter[str] = field(default_factory=Counter)
    """``<id>@<request id>`` of a retry -> the turns its key started (or skipped)."""
    answers: Counter[str] = field(default_factory=Counter)
    """A question's key -> its ``question.answered`` lines."""
    approvals: Counter[str] = field(default_factory=Counter)
    """A draft's key -> the ``approval.observed`` lines naming it (``draft_key``)."""
    approved: set[str] = field(default_factory=set)
    """Drafts the user approved in their document (its 🧝 DRAFT line gone, hz's markers
    still there: hz has not yet observed it)."""
    pending: set[str] = field(default_factory=set)
    """Drafts whose 🧝 DRAFT line is still in their document."""
    twice: list[str] = field(default_factory=list)
    """A Heinzelmännchen-level line (``heinzel.paused``, ``heinzel.retired``, their undoing)
    written again with no other of them between: a lifecycle verb that took effect twice."""
    taken_approvals: set[str] = field(default_factory=set)
    """``#<16 hex of a draft's key>`` of the approval wakes a turn took on (however it then
    ended: learned, skipped by a cap, failed, each shown to the user), and of the approvals
    a ``notice.posted`` (``superseded``) told the user count for nothing (a newer draft had
    replaced that one)."""

    @classmethod
    def read(cls, home: Path) -> Spines:
        facts = cls(home)
        for spine in sorted((home / "heinzel").glob("hz-*/session.jsonl")):
            facts._fold(spine)
            facts._inbox(spine.parent)
        for document in sorted(home.parent.glob("*.md")):
            if not document.name.endswith(".prose.md"):
                text = document.read_text(encoding="utf-8")
                pending = set(PENDING.findall(text))
                facts.pending |= pending
                facts.approved |= set(MARKED.findall(text)) - pending
        return facts

    def _fold(self, spine: Path) -> None:
        raw, lines = _lines(spine)
        self.broken += _chain(spine, raw, lines)
        heinzel = spine.parent.name
        waiting: dict[str, list[str]] = {}
        keys_of: dict[str, list[str]] = {}
        state: dict[str, str] = {}
        reserved: dict[str, int] = {}  # turn -> the seq of its open reservation
        last_verb = ""  # the last heinzel.paused / unpaused / retired / unretired line
        for line in lines:
            if line is DAMAGED:
                continue
            kind, turn, data = line["kind"], str(line["turn"]), line["data"]
            if kind in HEINZEL_VERBS:
                if kind == last_verb:
                    self.twice.append(f"{heinzel} seq {line['seq']}: {kind} again")
                last_verb = kind
            if kind in LIFECYCLE:
                state[turn] = kind
            if kind == "model.reserved":
                reserved[turn] = int(line["seq"])
            elif kind in ("model.request", "model.released", "turn.resumed"):
                reserved.pop(turn, None)  # settled, let go, or its process died with it
            elif (
                kind in ("turn.finished", "turn.skipped", "turn.waiting")
                and turn in reserved
                and data.get("disposition") != "abandoned"  # a dead process's, ended by another
            ):
                seq = reserved.pop(turn)
                self.kept.append(f"{heinzel}/{turn} seq {seq} ({data.get('error')})")
            if kind == "question.answered":
                self.answers[str(line["key"])] += 1
            if kind == "notice.posted" and data.get("reason") == "superseded":
                self.taken_approvals.add("#" + str(line["key"]).rpartition(":")[2])
            if kind == "approval.observed" and data.get("draft_key"):
                self.approvals[str(data["draft_key"])] += 1
            if kind == "turn.skipped" or (
                kind == "turn.finished" and data.get("disposition") in ("failed", "abandoned")
            ):
                self.ended_with.update(waiting.pop(turn, []))
            if kind in ("turn.started", "turn.skipped"):  # a turn took the approval on
                for key in _wake_keys(line):
                    if "@approval:" in key:
                        self.taken_approvals.add(key.rpartition(":")[2])
            if kind in ("turn.started", "turn.skipped"):
                keys_of[turn] = _wake_keys(line)
                self.runs.update(keys_of[turn])
                for key in keys_of[turn]:
                    retried = RETRY_KEY.match(key)
                    if retried:
                        self.retries[f"{retried[1]}@{retried[2]}"] += 1
            elif kind == "turn.steered":
                waiting.setdefault(turn, []).append(f"{heinzel}@{data['request_id']}")
            elif kind == "model.request":
                self.runs.update(waiting.pop(turn, []))  # steers this request carried
                day = str(line["ts"])[:10]
                usd = Decimal(str(data.get("usd") or 0))  # a free request writes none
                self.spent[day] = self.spent.get(day, Decimal(0)) + usd
            if kind == "draft.placed" or _carries_a_draft(data):
                self.drafts.update(k for k in keys_of.get(turn, []) if SLOT.match(k))
            if kind == "question.answered" and str(data.get("id", "")).startswith("answer-"):
                answered = spine.parent / "inbox" / f"{data['id']}.json"
                request = json.loads(answered.read_text(encoding="utf-8")).get("request")
                if request:
                    self.runs[f"{heinzel}@{request}"] += 1
            if line["key"] and SLOT.match(str(line["key"])):
                self.acknowledged.add(str(line["key"]))
            self.acknowledged.update(k for k in _wake_keys(line) if SLOT.match(k))
        self.open += [f"{heinzel}/{t}" for t, k in state.items() if k in LIFECYCLE_OPEN]

    def _inbox(self, session: Path) -> None:
        for path in sorted((session / "inbox").glob("rq-*.json")):
            try:
                request = json.loads(path.read_text(encoding="utf-8"))
            except ValueError:  # written atomically: never torn; say so if it is
                self.broken.append(f"{path}: not JSON")
                continue
            if request.get("kind") == "chat":
                key = f"{session.name}@{request['request_id']}"
                self.chats[key] = session.name
                self.said.setdefault(str(request["message"]), []).append(key)


@dataclass(frozen=True)
class Ended:
    """One `hz` process that ended: what it ran, how, and what it printed."""

    args: tuple[str, ...]
    code: int
    killed: bool
    stdout: str
    stderr: str
    message: str | None = None
    """The words of a chat sent for the first time (each chat's words are its own)."""


CODED = re.compile(r"^HZ[A-Z]\d{3}: ")


def _unsent(stderr: str) -> bool:
    """A refusal that tells the user the message did not go (so they send it again): the
    spine's lock not had in time (HZL010, "retry when it is done"), or "not kept"."""
    return stderr.startswith("HZL010: ") or "was not kept" in stderr.split("\nhint:", maxsplit=1)[0]


def violations(
    facts: Spines,
    ended: Iterable[Ended],
    *,
    cap: Decimal,
    charged: dict[str, Decimal],
    unrecorded: dict[str, Decimal],
    owed: set[str],
    quiet: bool,
    flipped: frozenset[str] = frozenset(),
) -> dict[str, list[str]]:
    """Every broken invariant by its name (`test_model_chaos.INVARIANTS`) and what broke it.

    ``charged``: the provider's takings per day; ``unrecorded``: per day, what processes
    killed after a paid answer may have left without its ``model.request`` line (one
    request each); ``owed``: the slot keys a tick reported woken, skipped or handed.
    ``quiet``: every process has ended and the ticks woke nothing (then "exactly once"
    and "equal" are checked, not only "at most"). ``flipped``: the ids of the spines the
    machine broke in the middle on purpose (their chain is checked by `hz heinzel verify`
    naming the break, not here).
    """
    broken: dict[str, list[str]] = {}

    def say(name: str, found: list[str]) -> None:
        if found:
            broken.setdefault(name, []).extend(found)

    say("chain", [b for b in facts.broken if b.split()[0] not in flipped])
    say(
        "chat-once",
        [f"{k} delivered {n} times" for k, n in facts.runs.items() if k in facts.chats and n > 1],
    )
    say(
        "slot-once",
        [f"{k} ran {n} times" for k, n in facts.runs.items() if SLOT.match(k) and n > 1],
    )
    say("slot-once", [f"{k} drafted {n} times" for k, n in facts.drafts.items() if n > 1])
    say("retry-once", [f"retry {k} ran {n} times" for k, n in facts.retries.items() if n > 1])
    say(
        "wake-once",
        [f"wake {k} ran {n} times" for k, n in facts.runs.items() if WAKE_ID.search(k) and n > 1],
    )
    say("answer-once", [f"{k} answered {n} times" for k, n in facts.answers.items() if n > 1])
    say(
        "source-once",
        [f"{k} woke {n} times" for k, n in facts.runs.items() if MOVED.match(k) and n > 1],
    )
    say("approval-once", [f"{k} observed {n} times" for k, n in facts.approvals.items() if n > 1])
    say("spend-released", [f"{k}: its reservation booked as spend" for k in facts.kept])
    say("lifecycle-once", facts.twice)
    for day in sorted(set(charged) | set(facts.spent)):
        # to the 1e-9 USD the spine's floats keep (hz rounds a day's spend to 9 digits)
        paid = charged.get(day, Decimal(0)).quantize(NANO)
        recorded = facts.spent.get(day, Decimal(0)).quantize(NANO)
        if paid > cap:
            say("cap", [f"{day}: the provider was paid {paid} USD, over the cap {cap}"])
        if recorded > cap:
            say("cap", [f"{day}: model.request lines sum to {recorded} USD, over the cap {cap}"])
        if recorded > paid:
            say("spend-recorded", [f"{day}: {recorded} USD recorded, {paid} paid"])
        if quiet and recorded < paid - unrecorded.get(day, Decimal(0)):
            say("spend-recorded", [f"{day}: {paid} USD paid, only {recorded} recorded"])
    for done in ended:
        command = " ".join(done.args)
        if "Traceback" in done.stderr:
            say("coded", [f"hz {command}: a traceback: {done.stderr[-2000:]}"])
        elif done.code != 0 and not done.killed and not CODED.match(done.stderr):
            say("coded", [f"hz {command}: exit {done.code} without a code: {done.stderr[-600:]!r}"])
        first = done.stderr.splitlines()[0] if done.stderr else ""
        sent = facts.said.get(done.message or "", [])
        delivered = any(facts.runs[k] or facts.ended_with[k] for k in sent)
        if done.code == 1 and _unsent(done.stderr) and delivered:
            say("chat-honest", [f"hz {command}: refused ({first}) but delivered"])
        if done.args[:2] == ("heinzel", "forget") and first.startswith("HZL010"):
            say("forget-runs", [f"hz {command}: {first} (it takes effect from the next turn)"])
    if quiet:
        lost = [k for k in facts.chats if not facts.runs[k] and not facts.ended_with[k]]
        say("chat-kept", [f"{k} never delivered" for k in lost])
        unowned = (owed | facts.acknowledged) - {k for k, n in facts.runs.items() if n}
        say("slot-kept", [f"{k} never ran" for k in sorted(unowned)])
        # a turn whose end line was flipped reads as open here (hz leaves the line out)
        ended = [t for t in facts.open if t.split("/")[0] not in flipped]
        say("turns-end", [f"{t} is still open" for t in ended])
        unseen = sorted(
            k
            for k in facts.approved
            if not facts.approvals[k] and approval_part(k) not in facts.taken_approvals
        )
        say("approval-seen", [f"{k} approved in its document, never observed" for k in unseen])
    return broken


def approval_part(draft_key: str) -> str:
    """The draft's part of its approval wake's key: ``#`` and 16 hex of its key's sha256."""
    return "#" + hashlib.sha256(draft_key.encode("utf-8")).hexdigest()[:16]


def _carries_a_draft(data: dict[str, Any]) -> bool:
    """A line that carries a placed draft with its effect's end (docs/spine.md)."""
    done = data.get("done")
    return isinstance(done, dict) and any(
        isinstance(end, dict) and "draft.placed" in end for end in done.values()
    )
