"""The lever (issue 27, item 5; issue 38, item 9): a model-based chaos test across features.

A Hypothesis `RuleBasedStateMachine` drives real `hz` processes on one home, several at
once: ``hz heinzel wake``, ``hz heinzel chat`` (with and without ``--request-id``, and a
chat sent again with its id), ``hz system daemon tick`` with ``HZ_NOW`` moved forward to
and past the schedule's slots, a draft approved in its document (its ``🧝 DRAFT`` line
deleted; two drafts of the same text each approved on its day) and by ``hz approve``,
``hz heinzel answer`` (with ``--question``, and sent again), ``retry`` (with
``--request-id``, and sent again), ``stop``, ``forget`` (also while a turn runs),
``dismiss`` of a learned lesson, chats while a question waits (the answering chat sent
again, a delivered chat sent again, a chat while another writer holds the lock), tool
calls through ``hz mcp`` from the MCP SDK's client, the page's buttons POSTed to the
served head (``hz system serve``) one at a time and several together from threads while
a tick runs, raw JSON-RPC frames to ``hz mcp`` (an object or array id, a resent id), a
scheduled watcher whose input moves, a byte flipped in the middle of a spine, a
hard-linked document, a bad skill file, a reader of another's document (also through
``files.read``, ``..``, a symbolic or a hard link), one request id sent by the page, MCP
and the command in turn (a wake or retry killed first), and kills: a real
``SIGKILL`` of a running process (also while its request waits at the provider), an
``HZ_CRASH_AT`` point, or a power cut (every process killed, a source-cache entry lost or
torn). The provider is a loopback OpenAI-compatible server (tests/tick/chaos_world.py)
that the real client talks to; the machine makes it slow (a closed gate), failing (500),
asking a question, refusing the connection, stalling past the request timeout, or
answering garbage or the wrong shape, and it charges every answer it serves, so the day's
spend is real money against ``max_usd_per_day``.

After every step the invariants are checked on the spine files themselves; at the end
the machine waits for every process, ticks until a tick wakes nothing, and checks that
what must happen did (`INVARIANTS`). A broken one fails with its name and the
falsifying steps. ``HZ_CHAOS_DISABLE=name,name`` switches named invariants off (to say
which defect is still open, never to hide one).

The short run is part of `make test`: a fixed tour (every rule and fault once, in order,
each on a day of its own, so each defect of issue 38 has the step that shows it), one path
test per rule that guards a fix a one-off test guarded before (`PATHS`), and two
seeded random examples (``derandomize``: the same sequences every time); `make soak` runs
the long one (``HZ_SOAK_EXAMPLES`` examples of ``HZ_SOAK_STEPS`` steps, new sequences each
run). ``HZ_CHAOS_TRACE=1`` prints how each process ended and
keeps each example's home to read; ``HZ_CHAOS_CAP`` sets another daily cap.
"""

from __future__ import annotations

import contextlib
import fcntl
import http.client
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import urllib.parse
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from tests import forkhz, inprocess
from tests.hz_mcp import client as mcp_client
from tests.tick.chaos_world import (
    DONE_WHEN,
    FAULTS,
    MOVED,
    READER_GOAL,
    Ended,
    Loopback,
    Spines,
    approval_part,
    violations,
)
from tests.tick.homes import HZ, make_home

QUIET_TICKS = 8
INVARIANTS = {
    "chain": "every spine's chain verifies (and `hz heinzel verify` at the end)",
    "chat-once": "no chat request is delivered twice (steered and its own turn, or two turns)",
    "chat-kept": "every chat request is delivered once the home is quiet",
    "chat-honest": "a chat refused with a code was not delivered after all",
    "slot-once": "no schedule slot runs or drafts twice",
    "slot-kept": "every slot a tick took on (and the last one due) ran once, when quiet",
    "turns-end": "once quiet, every turn ended or waits for an answer (none left open)",
    "cap": "no day's spend (paid to the provider, or recorded) is above max_usd_per_day",
    "spend-recorded": "the model.request lines sum to what the provider was paid",
    "coded": "no traceback; every refusal starts with its code",
    "retry-once": "a retry's request id runs one turn, however often it is sent",
    "wake-once": "a wake's request id runs one turn, however often it is sent",
    "answer-once": "a question is answered once (a resent answer or chat is told so)",
    "approval-once": "no draft's approval is observed twice",
    "approval-seen": "once quiet, every draft approved in its document was taken on by a "
    "turn (learned, or skipped or failed as the user sees) or superseded with a notice",
    "spend-released": "a request its process saw reach no provider (or answered without "
    "usage) releases its reservation: only what the provider served is spent",
    "forget-runs": "`forget` while a turn runs is never refused for the lock",
    "lesson-gone": "no model request after a lesson's dismissal holds its words (the "
    "previous turns read verbatim included)",
    "reader-approved": "a model request reading another's document never sees a pending "
    "draft or hz's tags in it",
    "quiet": f"once nothing new comes, {QUIET_TICKS} ticks end with one that wakes nothing",
    "source-once": "a move of a scheduled watcher's input wakes it source-changed once, "
    "never twice",
    "source-kept": "a move of a scheduled watcher's input (after a turn of it read the input) "
    "wakes it source-changed in the next tick, never lost",
    "mcp-frames": "`hz mcp` answers a request whose id is an object or an array -32600 "
    "(id null) and records nothing; every other frame is answered",
    "page-ok": "requests sent to the served page together, while a tick runs, never answer 500",
    "break-contained": "a byte flipped in the middle of a spine: that one's commands refuse "
    "with a code at most once, then go on; every other works; `hz heinzel verify` names it",
    "link-kept": "a hard-linked document keeps its link through every write of hz",
    "resend-resumes": "a wake or retry resent by its request id (by any surface) after its "
    "process was killed resumes the turn it left open, as a resent chat does: never says "
    "it runs when no process runs it, never leaves it open for a tick; an answer so resent "
    "runs the follow-up it owes",
    "lifecycle-once": "a lifecycle verb sent twice at once (two `hz heinzel pause`, then two "
    "`unpause`) writes one line and succeeds once; the other is refused with its code",
    "skill-contained": "a bad skill file refuses the turns that use it with its code (HZC002 "
    "for YAML that does not parse, HZC051 for one that grants a tool) and stops no other turn",
}
DISABLED = frozenset(filter(None, os.environ.get("HZ_CHAOS_DISABLE", "").split(",")))
assert set(INVARIANTS) >= DISABLED, f"HZ_CHAOS_DISABLE names no invariant: {DISABLED}"

NAMES = ("report-0", "report-1")
READER = "reader"
"""A third Heinzelmännchen whose input is report-0's document (its output): every model
request of it must see that document's approved text only (`chaos_world.READER_GOAL`)."""
READER_CONTRACT = f"""---
name: {READER}
kind: responsibility
hz:
  requires: [documents:read, documents:write]
  inputs:
    upstream: {{from: documents.read, args: {{doc: 'file:report-0.md'}}}}
  outputs:
    section: {{asset: 'file:reader.md'}}
  publishes: [documents.place_draft]
  agent: {{max_usd: 0.5}}
---

### Goal

{READER_GOAL}: keep reader.md a digest of what report-0 approved.

### Done when

""" + "".join(f"- [ ] {item}\n" for item in DONE_WHEN)
WATCHER = "watcher"
"""A fourth, scheduled like the reports but with ``hz.source_changed`` left at its default
(``wake``): a move of notes.txt after a turn of it read it wakes it source-changed."""
WATCHER_CONTRACT = f"""---
name: {WATCHER}
kind: responsibility
hz:
  schedule: "0 15 * * FRI"
  timezone: Europe/Berlin
  requires: [files:read, documents:write]
  inputs:
    notes: {{from: files.read, args: {{path: notes.txt}}, recheck: 1m}}
  outputs:
    section: {{asset: 'file:watcher.md'}}
  publishes: [documents.place_draft]
  agent: {{max_usd: 0.5}}
---

### Goal

A digest of notes.txt at the end of watcher.md.

### Done when

""" + "".join(f"- [ ] {item}\n" for item in DONE_WHEN)
STYLED = "styled"
"""A fifth, without a schedule, that uses the skill ``house-style`` (skills/ in the root,
``HZ_SKILLS``): a bad copy of the skill refuses its turns and no other's."""
STYLED_CONTRACT = WATCHER_CONTRACT.replace(f"name: {WATCHER}", f"name: {STYLED}").replace(
    """  schedule: "0 15 * * FRI"
  timezone: Europe/Berlin
  requires: [files:read, documents:write]
  inputs:
    notes: {from: files.read, args: {path: notes.txt}, recheck: 1m}
  outputs:
    section: {asset: 'file:watcher.md'}""",
    """  requires: [documents:write]
  uses: [house-style]
  outputs:
    section: {asset: 'file:styled.md'}""",
)
SKILL = """---
name: house-style
description: The house's way of writing a digest.
---

Plain sentences.
"""
BAD_SKILLS = {
    "malformed": "---\nname: house-style\ndescription: [unclosed\n---\n\nPlain.\n",
    "grants": SKILL.replace("---\n\n", "allowed-tools: [Bash]\n---\n\n", 1),
}
"""A skill file that does not load: bad YAML, or a key that grants a tool."""
SKILL_CODES = {"malformed": "HZC002", "grants": "HZC051"}
"""What refuses a turn that uses each (HZC002: its frontmatter is no YAML, as a contract's)."""
CAP = Decimal(os.environ.get("HZ_CHAOS_CAP", "0.02"))
"""The day's cap: about nine requests (about 0.002 USD each, tests/tick/chaos_world.py), but
a tick takes on a wake only while the turn's cap (`TURN_CAP`) still fits under it, and a
request reserves its worst case (about 0.0087 USD: a token per byte of the worked example's
prompt and the default ``max_tokens``); so a day drafts, asks, answers and learns a little,
and then its cap skips. ``HZ_CHAOS_CAP=0.05`` leaves a day room for more."""
TURN_CAP = os.environ.get("HZ_CHAOS_TURN_CAP", "0.01")
"""A request's worst case fits one turn (0.006 no longer did: every turn skipped); the
storm of `make soak` raises both caps, its prompts growing with its spines."""
START = datetime(2026, 11, 6, 14, 30, tzinfo=UTC)  # half an hour after the first slot
PARALLEL = 4  # processes running at once; the next waits for the oldest
TIMEOUT = 120.0  # seconds any one process may take: more fails the test loudly
CONFIG = f"""[heinzel]
model = "openai-chat:gpt-4o-mini"
max_usd = {TURN_CAP}
max_usd_per_day = {CAP}
lock_timeout = "1s"

[heinzel.prices."gpt-4o-mini"]
input = 0.15
output = 0.6
"""
DRAFT_LINE = re.compile(r"^🧝 DRAFT .*\n", re.MULTILINE)
QUESTION_TURN = re.compile(r"--question (\S+)")
TRACE = os.environ.get("HZ_CHAOS_TRACE") == "1"
SOAK = int(os.environ.get("HZ_SOAK_EXAMPLES", "0"))

pytestmark = pytest.mark.slow


@dataclass
class Head:
    """A running `hz system serve`, logged in: the session cookie and the page's CSRF."""

    port: int
    cookie: str = ""
    csrf: str = ""

    def ask(
        self, method: str, path: str, body: str = "", headers: dict[str, str] | None = None
    ) -> tuple[int, str, str]:
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=TIMEOUT)
        try:
            sent = {"Cookie": self.cookie, **(headers or {})} if self.cookie else headers or {}
            connection.request(method, path, body=body, headers=sent)
            answer = connection.getresponse()
            return answer.status, answer.getheader("set-cookie", ""), answer.read().decode()
        finally:
            connection.close()

    def post(self, path: str, form: dict[str, str]) -> tuple[int, dict[str, Any]]:
        """POST a form as the page's script does (JSON back, the CSRF token, Origin)."""
        status, _, text = self.ask(
            "POST",
            path,
            urllib.parse.urlencode(form),
            {
                "Content-Type": "application/x-www-form-urlencoded",
                "Accept": "application/json",
                "Origin": f"http://127.0.0.1:{self.port}",
                "X-CSRF-Token": self.csrf,
            },
        )
        return status, json.loads(text) if text.startswith("{") else {"body": text[:300]}


@contextlib.contextmanager
def served(env: dict[str, str], cwd: Path) -> Iterator[Head]:
    """`hz system serve` on a free port, as a person starts it, logged in through the URL
    it prints; at the end the turns it started (its children) are waited for, then it is
    stopped (SIGTERM)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = int(probe.getsockname()[1])
    server = forkhz.Popen(
        [HZ, "system", "serve", "--port", str(port)],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert server.stdout is not None
        line = ""
        while "open: " not in line:
            line = server.stdout.readline()
            assert line or server.poll() is None, f"hz system serve ended ({server.returncode})"
        url = urllib.parse.urlsplit(line.split("open: ", 1)[1].strip())
        head = Head(port)
        with contextlib.suppress(OSError):  # it printed its URL before uvicorn binds
            socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT).close()
        for _ in range(int(TIMEOUT * 20)):
            try:
                _, cookie, _ = head.ask("GET", f"{url.path}?{url.query}")
                break
            except ConnectionRefusedError:
                threading.Event().wait(0.05)  # until its port accepts (bounded)
        head.cookie = cookie.split(";")[0]
        page = head.ask("GET", "/")[2]
        head.csrf = page.split('name="csrf" content="')[1].split('"')[0]
        yield head
        _wait_children(server.pid)
    finally:
        server.terminate()
        server.wait(timeout=TIMEOUT)
        if server.stdout is not None:
            server.stdout.close()


def _wait_children(pid: int) -> None:
    """Until the processes ``pid`` started (a served head's turns) have ended."""
    tasks = Path(f"/proc/{pid}/task")
    children: set[int] = set()
    for task in tasks.glob("*"):
        with contextlib.suppress(FileNotFoundError, ProcessLookupError):  # a thread ended
            children.update(int(child) for child in (task / "children").read_text().split())
    for child in children:
        for _ in range(int(TIMEOUT * 20)):
            stat = Path(f"/proc/{child}/stat")
            # a child reaped between the open and the read is ESRCH (ProcessLookupError)
            with contextlib.suppress(FileNotFoundError, ProcessLookupError):
                if stat.read_text().rsplit(")", 1)[1].split()[0] != "Z":
                    threading.Event().wait(0.05)  # a turn in a child runs on (bounded)
                    continue
            break


MCP_INIT = (
    b'{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":'
    b'"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}'
)
MCP_INITIALIZED = b'{"jsonrpc":"2.0","method":"notifications/initialized"}'


def _frame(ident: str, method: str, params: dict[str, Any]) -> bytes:
    """A raw JSON-RPC request frame, its ``id`` written as given (JSON text)."""
    body = json.dumps({"method": method, "params": params}, ensure_ascii=False)
    return ('{"jsonrpc":"2.0","id":' + ident + "," + body[1:]).encode()


def _lessons(listed: str) -> list[tuple[str, str]]:
    """``hz heinzel lessons NAME --json``: each lesson's number and sentence."""
    found = json.loads(listed)
    rows = found.get("lessons", []) if isinstance(found, dict) else found
    return [
        (str(row.get("number", row.get("seq"))), str(row.get("lesson", row.get("sentence"))))
        for row in rows
        if isinstance(row, dict) and not row.get("dismissed")
    ]


def _takes_request_id(verb: str) -> bool:
    """Whether ``hz heinzel VERB`` takes ``--request-id`` (chat and retry do; answer and
    wake once their resends are made idempotent too)."""
    import click

    from heinzel.cli import group

    heinzel = group().get_command(click.Context(group()), "heinzel")
    assert isinstance(heinzel, click.Group)
    command = heinzel.get_command(click.Context(heinzel), verb)
    return command is not None and any("--request-id" in p.opts for p in command.params)


WITH_ID = {verb: _takes_request_id(verb) for verb in ("answer", "wake")}


def _slot(now: datetime) -> datetime:
    """The latest Friday 15:00 in Berlin (14:00 UTC from November to March) at or before now."""
    friday = now - timedelta(days=(now.weekday() - 4) % 7)
    slot = friday.replace(hour=14, minute=0, second=0, microsecond=0)
    return slot if slot <= now else slot - timedelta(days=7)


def _ts(at: datetime) -> str:
    return at.strftime("%Y-%m-%dT%H:%M:%S.000Z")


@dataclass
class Running:
    """One `hz` process the machine started and has not yet waited for."""

    args: tuple[str, ...]
    tag: str
    day: str
    process: subprocess.Popen[Any]
    out: Path
    err: Path
    message: str | None = None
    killed: bool = False
    crash: bool = False


@dataclass
class Ledger:
    """What the machine saw end, and what the provider was paid for by killed processes."""

    ended: list[Ended] = field(default_factory=list)
    unrecorded: dict[str, Decimal] = field(default_factory=dict)
    owed: set[str] = field(default_factory=set)


SPELLED = {
    "files": "{from: files.read, args: {path: report-0.md}}",
    "dot": "{from: files.read, args: {path: ./report-0.md}}",
    "up": "{from: files.read, args: {path: links/../report-0.md}}",
    "absolute": "{from: files.read, args: {path: ROOT/report-0.md}}",
    "doc-dot": "{from: documents.read, args: {doc: 'file:./report-0.md'}}",
    "hard-link": "{from: files.read, args: {path: links/hard.md}}",
    "symlink": "{from: files.read, args: {path: links/soft.md}}",
}
"""How `Chaos.read_spelled`'s readers name report-0's document (``ROOT``: the home's
folder)."""
ACROSS = (
    "answer-killed",
    "wake-killed",
    "wake-ticked",
    "retry-killed",
    "retry-ticked",
    "answer",
    "chat",
    "chat-asked",
    "wake-page",
    "retry-page",
)
"""How `Chaos.across` sends one request id by every surface in turn."""


class Chaos(RuleBasedStateMachine):
    """Real hz processes on one home, several at once, against a charging provider."""

    def __init__(self) -> None:
        super().__init__()
        self.tmp = Path(tempfile.mkdtemp(prefix="hz-chaos-"))
        self.root, ids = make_home(self.tmp, len(NAMES))
        self.ids = dict(zip(NAMES, ids, strict=True))
        (self.tmp / "hz.toml").write_text(CONFIG, encoding="utf-8")
        self.provider = Loopback()
        self.now = START
        self.count = 0
        self.days: dict[str, str] = {}  # process tag -> its HZ_NOW's day
        self.fault: str | None = None  # the provider's fault for processes started now
        self._reader()
        self.flipped: set[str] = set()  # ids of the spines `flip` broke in the middle
        self.links: list[tuple[Path, Path]] = []  # (document, its second name)
        self.moves = 0  # the notes.txt contents `source_moves` wrote
        self.running: list[Running] = []
        self.ledger = Ledger()
        self.steps = -1  # the invariant runs once before the first step, too
        self.breaches: dict[str, str] = {}  # invariant -> when and how it first broke
        self.sent: list[tuple[str, str]] = []  # (name, request id) of chats sent with an id
        self.retried: list[tuple[str, str]] = []  # (name, request id) of retries sent with one
        self.quieted = False  # `_quiet` ran (a tour or a storm runs it before teardown)

    # -- processes -----------------------------------------------------------------

    def _start(
        self, *args: str, message: str | None = None, crash: int | str | None = None
    ) -> None:
        while len(self.running) >= PARALLEL:
            self._wait(self.running[0])
        tag, env = self._env(crash)
        out, err = self.tmp / f"{tag}.out", self.tmp / f"{tag}.err"
        with out.open("w") as stdout, err.open("w") as stderr:
            process = forkhz.Popen(
                [HZ, *args], cwd=self.root, env=env, stdout=stdout, stderr=stderr, text=True
            )
        self.running.append(
            Running(args, tag, self.days[tag], process, out, err, message, crash=crash is not None)
        )

    def _reader(self) -> None:
        """`READER`, which reads report-0's document (another's output) and drafts its own:
        created and approved in this process (set-up, tests/inprocess.py)."""
        (self.root / "reader.prose.md").write_text(READER_CONTRACT, encoding="utf-8")
        (self.root / "reader.md").write_text("# What report-0 said\n", encoding="utf-8")
        # the watcher of notes.txt and the one that uses a skill (`source_moves`, `bad_skill`)
        (self.root / "watcher.prose.md").write_text(WATCHER_CONTRACT, encoding="utf-8")
        (self.root / "styled.prose.md").write_text(STYLED_CONTRACT, encoding="utf-8")
        for document in ("watcher", "styled"):
            (self.root / f"{document}.md").write_text("# Digest\n", encoding="utf-8")
        (self.root / "notes.txt").write_text("ship the rounding fix\n", encoding="utf-8")
        (self.root / "skills" / "house-style").mkdir(parents=True)
        (self.root / "skills" / "house-style" / "SKILL.md").write_text(SKILL, encoding="utf-8")
        self._approve_extra(READER, WATCHER, STYLED)

    def _approve_extra(self, *names: str) -> None:
        """``names`` created from their ``NAME.prose.md`` and approved in this process
        (set-up), and `extra_ids` listed again."""
        _, env = self._env()
        for name in names:
            for args in (["heinzel", "new", "--from", f"{name}.prose.md"], ["approve", name]):
                done = inprocess.hz(args, env, self.root)
                assert done.returncode == 0, (args, done.stderr)
        self.extra_ids = {
            row["name"]: row["id"]
            for row in json.loads(
                inprocess.hz(["heinzel", "list", "--json"], env, self.root).stdout
            )
        }

    def _env(self, crash: int | str | None = None) -> tuple[str, dict[str, str]]:
        """A new process's tag and environment: the provider's URL by its tag (or the
        refused one), the machine's clock, the fault it meets."""
        self.count += 1
        tag = f"p{self.count}"
        self.days[tag] = _ts(self.now)[:10]
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("HZ_")},
            "HZ_HOME": str(self.root / "home"),
            "HZ_FIXTURE_SOURCES": str(self.root),
            "HZ_SKILLS": str(self.root / "skills"),
            "HZ_CONFIG": str(self.tmp / "hz.toml"),
            "HZ_BASE_URL": self.provider.base_url(tag),
            "HZ_NOW": _ts(self.now),
            "HZ_LOG_LEVEL": "error",
            "OPENAI_API_KEY": "sk-chaos",
        }
        if crash is not None:
            # a number: the n-th append; else a point by name (``after:question.answered``)
            env["HZ_CRASH_AT"] = f"append:{crash}" if isinstance(crash, int) else crash
        if self.fault == "refuse":
            env["HZ_BASE_URL"] = self.provider.refused_url
        elif self.fault is not None:
            self.provider.modes[tag] = self.fault
            env["HZ_REQUEST_TIMEOUT"] = "1s"
        return tag, env

    def _mcp(self, *calls: tuple[str, dict[str, Any], bool]) -> None:
        """One `hz mcp` server driven by the MCP SDK's client over stdio (as a user's agent
        drives it), its tool calls ``(tool, arguments, new)`` made in order (``new``: a
        chat's first send); each call's result kept as a process's end (a tool error's
        text carries its code, as a refusal's stderr)."""
        self.provider.gate.set()  # the calls are waited for in this step
        _, env = self._env()

        async def body(session: Any) -> list[Any]:
            return [await session.call_tool(tool, arguments) for tool, arguments, _ in calls]

        results = mcp_client.session(env, self.root, body)
        for (tool, arguments, new), result in zip(calls, results, strict=True):
            said = re.sub(r"^Error executing tool \w+: ", "", mcp_client.text(result))
            words = arguments.get("text") if new else None
            args = ("mcp", tool, json.dumps(arguments))
            code = 1 if result.is_error else 0
            self.ledger.ended.append(
                Ended(args, code, False, "" if code else said, said if code else "", words)
            )
            if TRACE:
                print(f"mcp {tool} {arguments} -> {code}: {said}"[:400])

    def _wait(self, run: Running, *, gate: bool = True) -> None:
        """Wait for one process (the gate opened first: it may be waiting on it)."""
        if gate:
            self.provider.gate.set()
        try:
            code = run.process.wait(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            run.process.kill()
            run.process.wait()
            raise AssertionError(f"hz {' '.join(run.args)} did not end in {TIMEOUT} s") from None
        self.running.remove(run)
        killed = run.killed or (run.crash and code == 137)
        paid = self.provider.paid.get(run.tag)
        if killed and paid:
            # its last paid answer may have no line: at most one request (they are serial)
            self.ledger.unrecorded[run.day] = self.ledger.unrecorded.get(run.day, 0) + max(paid)
        stdout = run.out.read_text(encoding="utf-8")
        ended = Ended(
            run.args, code, killed, stdout, run.err.read_text(encoding="utf-8"), run.message
        )
        self.ledger.ended.append(ended)
        if TRACE:
            said = " | ".join((stdout or ended.stderr).strip().splitlines())
            print(f"{run.tag} {' '.join(run.args)} -> {code}: {said}"[:400])
        if run.args[:3] == ("system", "daemon", "tick") and code == 0:
            self._owe(stdout)

    def _owe(self, stdout: str) -> None:
        """The slots a tick said it woke, skipped or handed over: each owes one turn."""
        report = json.loads(stdout)
        for entry in report["woken"] + report["skipped"] + report["handed"]:
            for key in entry.get("keys") or [entry.get("key")]:
                if key and re.match(r"^hz-\w+@\d{4}-", str(key)):
                    self.ledger.owed.add(str(key))

    def _run(self, *args: str, message: str | None = None, gate: bool = True) -> Ended:
        """Start one process and wait for it (a step of a scenario, in order); ``gate``:
        open the provider's gate first (else a held request stays held)."""
        self._start(*args, message=message)
        self._wait(self.running[-1], gate=gate)
        return self.ledger.ended[-1]

    def _new_day(self) -> None:
        """Everything waited for, a fair provider and a new day (a fresh daily cap)."""
        self.settle()
        self.provider.weather, self.provider.asks, self.fault = "fair", 0, None
        self.now += timedelta(days=1)

    def _reap(self) -> None:
        for run in [r for r in self.running if r.process.poll() is not None]:
            self._wait(run)

    # -- rules ---------------------------------------------------------------------

    crashes = st.none() | st.integers(min_value=1, max_value=8)

    @rule(name=st.sampled_from(NAMES), crash=crashes)
    def wake(self, name: str, crash: int | None) -> None:
        self._start("heinzel", "wake", name, crash=crash)

    @rule(name=st.sampled_from(NAMES), with_id=st.booleans(), crash=crashes)
    def chat(self, name: str, with_id: bool, crash: int | None) -> None:
        if not with_id:
            words = f"a note {self.count}"
            self._start("heinzel", "chat", name, words, message=words, crash=crash)
            return
        rid = f"rq-chaos{self.count:05d}"
        self.sent.append((name, rid))
        words = f"note {rid}"
        self._start("heinzel", "chat", name, words, "--request-id", rid, message=words, crash=crash)

    @rule(
        name=st.sampled_from(NAMES),
        first=st.sampled_from(["wake", "tick"]),
        later=st.sampled_from([0, 2, 90]),
    )
    def chat_as_a_turn_starts(self, name: str, first: str, later: int) -> None:
        """A turn starts (a wake, or a tick at the next slot) and a chat comes right after,
        ``later`` seconds later by the clock (each process reads its clock as it starts)."""
        if first == "wake":
            self._start("heinzel", "wake", name)
        else:
            self.now = _slot(self.now) + timedelta(days=7, minutes=5)
            self._start("system", "daemon", "tick", "--json")
        self.now += timedelta(seconds=later)
        self.chat(name, with_id=True, crash=None)

    @precondition(lambda self: self.sent)
    @rule(pick=st.integers(min_value=0, max_value=1 << 16))
    def chat_again(self, pick: int) -> None:
        """The same chat sent again with its request id (a user who was not sure)."""
        name, rid = self.sent[pick % len(self.sent)]
        self._start("heinzel", "chat", name, f"note {rid}", "--request-id", rid)

    @rule(
        move=st.sampled_from(["none", "minutes", "next-slot", "none"]),
        crash=crashes,
    )
    def tick(self, move: str, crash: int | None) -> None:
        if move == "minutes":
            self.now += timedelta(minutes=20)
        elif move == "next-slot":
            self.now = _slot(self.now) + timedelta(days=7, minutes=5)
        self._start("system", "daemon", "tick", "--json", crash=crash)

    @rule(name=st.sampled_from(NAMES), how=st.sampled_from(["document", "command"]))
    def approve(self, name: str, how: str) -> None:
        """Approve the draft: delete the first 🧝 DRAFT line of the document (written
        atomically, as an editor saves), or `hz approve`."""
        if how == "command":
            self._start("approve", name)
            return
        document = self.root / f"{name}.md"
        text = document.read_text(encoding="utf-8")
        edited = DRAFT_LINE.sub("", text, count=1)
        if edited != text and document.stat().st_nlink > 1:  # as a careful editor: in place
            with document.open("r+", encoding="utf-8") as opened:
                opened.write(edited)
                opened.truncate()
        elif edited != text:
            scratch = document.with_suffix(".md.edit")
            scratch.write_text(edited, encoding="utf-8")
            os.replace(scratch, document)

    @rule(
        name=st.sampled_from(NAMES),
        verb=st.sampled_from(["answer yes", "answer no", "answer in words", "retry", "stop"]),
    )
    def verb(self, name: str, verb: str) -> None:
        """`hz heinzel answer` (yes, no or words), `retry` with a hint, or `stop`."""
        if verb.startswith("answer"):
            words = {"answer yes": "yes", "answer no": "no"}.get(verb, "only incidents")
            self._start("heinzel", "answer", name, words)
        elif verb == "retry":
            self._start("heinzel", "retry", name, "shorter, please")
        else:
            self._start("heinzel", "stop", name)

    @rule(
        name=st.sampled_from(NAMES),
        move=st.sampled_from(["forget", "forget instead", "show", "graph", "lessons"]),
        seq=st.integers(min_value=1, max_value=40),
    )
    def person(self, name: str, move: str, seq: int) -> None:
        """What a person reads and hides while turns run: `forget` a line (hidden, or a
        short text in its place: a second writer of the spine, `HZH400` past its end),
        `show`, `hz graph`, `lessons`. None may break a promise or end uncoded."""
        if move.startswith("forget"):
            instead = ("--instead", f"line {seq} said too much") if move.endswith("d") else ()
            self._start("heinzel", "forget", name, str(seq), *instead)
        elif move == "graph":
            self._start("graph", "--json")
        else:
            self._start("heinzel", move, name, "--json")

    @precondition(lambda self: self.count)  # not `running`: that depends on timing
    @rule(pick=st.integers(min_value=0, max_value=1 << 16))
    def kill(self, pick: int) -> None:
        """A real SIGKILL of a running process (if one still runs), whatever it does now."""
        if not self.running:
            return
        run = self.running[pick % len(self.running)]
        if run.process.poll() is None:
            run.killed = True
            with contextlib.suppress(ProcessLookupError):  # it ended in between
                os.kill(run.process.pid, signal.SIGKILL)

    @rule(pick=st.integers(min_value=0, max_value=1 << 16), torn=st.booleans())
    def power_cut(self, pick: int, torn: bool) -> None:
        """A power cut: every running process dies, and the source cache (written without
        an fsync, docs/spine.md) loses an entry or keeps its name over bytes that are not
        its own. A turn that needs the entry fetches it again; no promise may break."""
        for run in list(self.running):
            if run.process.poll() is None:
                run.killed = True
                with contextlib.suppress(ProcessLookupError):
                    os.kill(run.process.pid, signal.SIGKILL)
            self._wait(run)
        entries = sorted((self.root / "home" / "heinzel" / "sources").glob("*.json"))
        if entries:
            entry = entries[pick % len(entries)]
            if torn:
                entry.write_bytes(entry.read_bytes()[: entry.stat().st_size // 2])
            else:
                entry.unlink()

    @rule(weather=st.sampled_from(["fair", "fail", "ask", "slow", "answers", *FAULTS]))
    def weather(self, weather: str) -> None:
        """The provider from now on: ``fair`` drafts, ``fail`` answers 500, ``ask`` asks one
        question, ``slow`` holds every request until the machine next waits for a process
        (or ``answers``); the processes started from now on until ``fair`` meet one of
        `FAULTS`: refused, stalled past their timeout, garbage or the wrong shape."""
        if weather in FAULTS:
            self.fault = weather
        elif weather == "slow":
            self.provider.gate.clear()
        elif weather == "answers":
            self.provider.gate.set()
        elif weather == "ask":
            self.provider.asks += 1
        else:
            self.provider.weather = weather
            if weather == "fair":
                self.fault = None

    @rule(
        name=st.sampled_from(NAMES),
        how=st.sampled_from(["resend", "delivered-then-asked", "locked", "by-question"]),
    )
    def question(self, name: str, how: str) -> None:
        """A question waits (a new day, the provider asks once) and chats and answers come:
        ``resend``: a chat with an id answers it, then is sent again (it must not run
        again); ``delivered-then-asked``: a chat delivered as its own turn is sent again
        while the question waits (it must not become the answer); ``locked``: a chat that
        would answer it while another writer holds the spine's lock, then another chat
        (neither may be lost, nor the first refused and delivered); ``by-question``:
        ``hz heinzel answer --question TURN``, then the same answer again."""
        self._new_day()
        first, second = f"rq-chaos{self.count:05d}q", f"rq-chaos{self.count:05d}r"
        self.sent += [(name, first), (name, second)] if how == "locked" else [(name, first)]
        if how == "delivered-then-asked":
            self._chat_now(name, first, new=True)
        self.provider.asks = 1
        asked = self._run("heinzel", "wake", name)
        if how == "by-question":
            found = QUESTION_TURN.search(asked.stdout)
            if found is not None:
                answer = ("heinzel", "answer", name, "only incidents", "--question", found[1])
                if WITH_ID["answer"]:
                    answer = (*answer, "--request-id", first)
                self._run(*answer)
                self._run(*answer)
        elif how == "locked":
            lock = self.root / "home" / "heinzel" / self.ids[name] / "lock"
            held = os.open(lock, os.O_RDWR | os.O_CREAT, 0o600)
            try:
                fcntl.flock(held, fcntl.LOCK_EX)  # another writer, for longer than lock_timeout
                self._chat_now(name, first, new=True)
            finally:
                os.close(held)
            self._chat_now(name, second, new=True)
        else:  # resend: the answering chat, then again; delivered-then-asked: again now
            if how == "resend":
                self._chat_now(name, first, new=True)
            self._chat_now(name, first, new=False)

    def _chat_now(self, name: str, rid: str, *, new: bool) -> Ended:
        """`hz heinzel chat NAME WORDS --request-id RID`, waited for (``new``: its first send)."""
        words = f"note {rid}"
        args = ("heinzel", "chat", name, words, "--request-id", rid)
        return self._run(*args, message=words if new else None)

    @precondition(lambda self: WITH_ID["wake"])
    @rule(name=st.sampled_from(NAMES), wait=st.booleans())
    def wake_twice(self, name: str, wait: bool) -> None:
        """`hz heinzel wake NAME --request-id W`, then the same again (after the first
        ended, or beside it): one turn for W."""
        rid = f"rq-chaos{self.count:05d}w"
        self._start("heinzel", "wake", name, "--request-id", rid)
        if wait:
            self.settle()
        self._start("heinzel", "wake", name, "--request-id", rid)

    @rule(name=st.sampled_from(NAMES), crash=crashes)
    def retry_with_id(self, name: str, crash: int | None) -> None:
        """`hz heinzel retry NAME HINT --request-id R`, a new R."""
        rid = f"rq-chaos{self.count:05d}t"
        self.retried.append((name, rid))
        self._start("heinzel", "retry", name, "shorter, please", "--request-id", rid, crash=crash)

    @precondition(lambda self: self.retried)
    @rule(pick=st.integers(min_value=0, max_value=1 << 16), wait=st.booleans())
    def retry_again(self, pick: int, wait: bool) -> None:
        """A retry sent again with its request id (after the first ended, or beside it)."""
        name, rid = self.retried[pick % len(self.retried)]
        if wait:
            self.settle()
        self._start("heinzel", "retry", name, "shorter, please", "--request-id", rid)

    @rule(name=st.sampled_from(NAMES))
    def identical_drafts(self, name: str) -> None:
        """Two drafts of the same text (a quiet week), each approved in the document on its
        own day: each approval must be observed (learned from) once."""
        for _ in range(2):
            self._new_day()
            self._run("heinzel", "wake", name)
            self.approve(name, "document")
            self._run("system", "daemon", "tick", "--json")
            self._approvals_taken()  # this tick had to take it on (a later draft may not)

    def _approvals_taken(self) -> None:
        """approval-seen now: every draft approved in its document taken on by a turn."""
        facts = Spines.read(self.root / "home")
        unseen = sorted(
            k
            for k in facts.approved
            if not facts.approvals[k] and approval_part(k) not in facts.taken_approvals
        )
        if unseen and "approval-seen" not in DISABLED and "approval-seen" not in self.breaches:
            what = "\n    ".join(f"{k} approved in its document, not taken on" for k in unseen)
            self.breaches["approval-seen"] = f"after step {self.steps}: {what}"

    @rule(name=st.sampled_from(NAMES), seq=st.integers(min_value=1, max_value=6))
    def forget_while_running(self, name: str, seq: int) -> None:
        """`forget` while a turn of it runs (held in think by a slow provider): it takes
        effect from the next turn, never refused for the lock."""
        self._new_day()
        self.provider.gate.clear()
        self._start("heinzel", "wake", name)
        if self.provider.wait_held(self.running[-1].process, TIMEOUT):
            self._run("heinzel", "forget", name, str(seq), gate=False)
        self.settle()

    @rule(
        name=st.sampled_from(NAMES),
        tool=st.sampled_from(["chat", "chat again", "answer", "retry"]),
        pick=st.integers(min_value=0, max_value=1 << 16),
    )
    def mcp(self, name: str, tool: str, pick: int) -> None:
        """Tool calls through `hz mcp` (the SDK's client): a new chat with its request id
        sent twice, a chat the CLI sent resent here, a question's answer in words, a retry
        with its request id sent twice."""
        rid = f"rq-chaos{self.count:05d}m"
        if tool == "chat again" and self.sent:
            name, rid = self.sent[pick % len(self.sent)]
            chat = {"name": name, "text": f"note {rid}", "request_id": rid}
            self._mcp(("heinzel_chat", chat, False))
        elif tool in ("chat", "chat again"):
            self.sent.append((name, rid))
            chat = {"name": name, "text": f"note {rid}", "request_id": rid}
            self._mcp(("heinzel_chat", chat, True), ("heinzel_chat", chat, False))
        elif tool == "answer":
            self._mcp(("heinzel_answer", {"name": name, "text": "only incidents"}, False))
        else:
            self.retried.append((name, rid))
            retry = {"name": name, "hint": "shorter, please", "request_id": rid}
            self._mcp(("heinzel_retry", retry, False), ("heinzel_retry", retry, False))

    @rule(name=st.sampled_from(NAMES))
    def dismiss(self, name: str) -> None:
        """A lesson learned from an approved draft, then dismissed (`hz heinzel dismiss`),
        then a turn on the next day: no request after the dismissal may hold its words."""
        self._new_day()
        self._run("heinzel", "wake", name)
        self.approve(name, "document")
        self._run("system", "daemon", "tick", "--json")  # the learning turn
        listed = self._run("heinzel", "lessons", name, "--json")
        lessons = _lessons(listed.stdout) if listed.code == 0 else []
        if lessons:
            number, words = lessons[-1]
            if self._run("heinzel", "dismiss", name, number).code == 0:
                with self.provider.lock:
                    self.provider.dismissed.add(words)
        self._new_day()
        self._run("heinzel", "wake", name)

    @rule(crash=crashes)
    def read(self, crash: int | None) -> None:
        """`hz heinzel wake reader`: it reads report-0's document as it is now (a pending
        draft in it, or not)."""
        self._start("heinzel", "wake", READER, crash=crash)

    @rule(name=st.sampled_from(NAMES), verb=st.sampled_from(["wake", "chat", "tick"]))
    def kill_in_think(self, name: str, verb: str) -> None:
        """A SIGKILL while the process's request waits at the provider (the gate closed):
        reserved, maybe paid for nothing yet; the next process recovers its turn."""
        self.settle()
        self.provider.gate.clear()
        if verb == "tick":
            self._start("system", "daemon", "tick", "--json")
        elif verb == "chat":
            self.chat(name, with_id=True, crash=None)
        else:
            self._start("heinzel", "wake", name)
        run = self.running[-1]
        if self.provider.wait_held(run.process, TIMEOUT):
            run.killed = True
            with contextlib.suppress(ProcessLookupError):
                os.kill(run.process.pid, signal.SIGKILL)
        self._wait(run)

    @rule(
        name=st.sampled_from(NAMES),
        action=st.sampled_from(["chat", "answer", "approve", "retry", "stop", "wake"]),
    )
    def page(self, name: str, action: str) -> None:
        """A button of the page, POSTed to the served head (`hz system serve`, logged in
        with its printed URL, the page's CSRF token and Origin, as a browser sends them):
        the sidebar's chat, an answer in words, approving the draft, and retry, stop, wake.
        The turns it starts run in children of the server, waited for before it stops."""
        form = {
            "chat": ("chat", {"text": f"a page note {self.count}"}),
            "answer": ("answer", {"text": "only incidents"}),
            "approve": ("approve", {}),
        }.get(action, ("do", {"verb": action, "hint": "shorter, please"}))
        with served(self._env()[1], self.root) as head, ThreadPoolExecutor(2) as pool:
            # the page itself asked for at the same time (the head's threads start together)
            shown = pool.submit(head.ask, "GET", f"/h/{name}")
            status, said = head.post(f"/h/{name}/{form[0]}", form[1])
            if shown.result()[0] >= 500:
                status, said = shown.result()[0], {"body": shown.result()[2][:300]}
        code = 0 if status < 400 else 1
        words = form[1].get("text") if action == "chat" else None
        stderr = f"{said.get('code')}: {said.get('message')}" if "code" in said else str(said)
        stderr = stderr if code else ""
        self.ledger.ended.append(
            Ended(("page", action, name), code, False, json.dumps(said), stderr, words)
        )
        if TRACE:
            print(f"page {action} {name} -> {status}: {said}"[:400])

    def _breach(self, name: str, what: str) -> None:
        """Record a broken invariant a rule checked itself (the first breach of each)."""
        if name not in DISABLED and name not in self.breaches:
            self.breaches[name] = f"after step {self.steps}: {what}"

    def _calm(self) -> None:
        """A new day, every process waited for, then ticks until one wakes nothing (a turn
        a killed process left open is resumed; the rule's own checks then meet no awake
        one, HZH050, which is right but not what they look at)."""
        self._new_day()
        for _ in range(QUIET_TICKS):
            ticked = self._run("system", "daemon", "tick", "--json")
            if ticked.code != 0 or not json.loads(ticked.stdout)["woken"]:
                return

    def _moved_keys(self) -> set[str]:
        """The watcher's source-changed keys any turn of it started or skipped with."""
        return {k for k in Spines.read(self.root / "home").runs if MOVED.match(k)}

    @rule(twice=st.booleans())
    def source_moves(self, twice: bool) -> None:
        """notes.txt, the input of the scheduled `WATCHER` (``source_changed`` left at
        ``wake``), moves after a turn of it read it: the next tick wakes it source-changed
        once (a new key), a tick after wakes nothing more for it (``twice``: a second move
        and tick between)."""
        self._calm()
        self._run("heinzel", "wake", WATCHER)  # a turn of it reads notes.txt: seen
        for _ in range(2 if twice else 1):
            before = self._moved_keys()
            self.moves += 1
            notes = self.root / "notes.txt"
            notes.write_text(f"ship the rounding fix\nmove {self.moves}\n", encoding="utf-8")
            self.now += timedelta(minutes=5)
            ticked = self._run("system", "daemon", "tick", "--json")
            new = self._moved_keys() - before
            if ticked.code == 0 and len(new) != 1:
                self._breach(
                    "source-kept",
                    f"notes.txt moved (move {self.moves}), the tick woke {len(new)} "
                    f"source-changed turns of the watcher: {ticked.stdout[-600:]}",
                )
            self.now += timedelta(minutes=5)
            self._run("system", "daemon", "tick", "--json")
            if ticked.code == 0 and self._moved_keys() - before != new:
                self._breach("source-once", f"move {self.moves} woke again a tick later")

    @rule(
        name=st.sampled_from(NAMES),
        first=st.sampled_from(["cli", "mcp"]),
        ident=st.sampled_from(['{"n":1}', "[1]"]),
        asked=st.booleans(),
    )
    def mcp_frames(self, name: str, first: str, ident: str, asked: bool = False) -> None:
        """Raw JSON-RPC frames to `hz mcp` (stdio, as a client that is not the SDK writes
        them): a chat whose JSON-RPC id is an object or an array (-32600, id null, its
        request id recorded nowhere); a chat sent twice with the same JSON-RPC id and the
        same request id; and that request id sent by the CLI too, before (``cli``) or after
        (``mcp``); ``asked``: a question waits first (the first send answers it). The
        request id is delivered once, whatever surface."""
        self.settle()
        if asked:
            self._new_day()
            self.provider.asks = 1
            self._run("heinzel", "wake", name)
        self.provider.gate.set()
        bad, rid = f"rq-chaos{self.count:05d}x", f"rq-chaos{self.count:05d}j"
        self.sent.append((name, rid))
        words = f"note {rid}"
        if first == "cli":
            self._chat_now(name, rid, new=True)
        chat = {"name": name, "text": words, "request_id": rid}
        frames = [
            _frame(
                ident,
                "tools/call",
                {"name": "heinzel_chat", "arguments": {**chat, "request_id": bad}},
            ),
            _frame("7", "tools/call", {"name": "heinzel_chat", "arguments": chat}),
            _frame("7", "tools/call", {"name": "heinzel_chat", "arguments": chat}),
            _frame('"last"', "tools/call", {"name": "heinzel_list", "arguments": {}}),
        ]
        answers, stderr = self._raw_mcp(frames, until=[7, 7, "last"])
        refused = [a for a in answers if a.get("id") is None]
        if [a.get("error", {}).get("code") for a in refused] != [-32600]:
            self._breach("mcp-frames", f"the chat of id {ident} was answered {refused}")
        if len(answers) != 4:
            self._breach("mcp-frames", f"{len(answers)} of 4 frames answered: {answers}")
        if Spines.read(self.root / "home").chats.get(f"{self.ids[name]}@{bad}"):
            self._breach("mcp-frames", f"the chat of id {ident} was recorded ({bad})")
        for answer in answers:
            result = answer.get("result") or {}
            said = " ".join(str(c.get("text", "")) for c in result.get("content") or [])
            code = 1 if result.get("isError") else 0
            new = first == "mcp" and answer is answers[0] and code == 0
            self.ledger.ended.append(
                Ended(
                    ("mcp", "raw", json.dumps(answer.get("id"))),
                    code,
                    False,
                    "" if code else said,
                    (said if code else "") + stderr,
                    words if new else None,
                )
            )
        if first == "mcp":
            self._chat_now(name, rid, new=False)

    def _raw_mcp(
        self, frames: list[bytes], *, until: list[Any]
    ) -> tuple[list[dict[str, Any]], str]:
        """One `hz mcp` given the handshake and ``frames``; its answers (the initialize's
        left out) up to those with the ids ``until`` (a frame it refuses is answered as it
        reads it, before it hands any later frame on, so before those), and its stderr
        when it holds a traceback. A server that never answers one of ``until`` is stopped
        after `TIMEOUT` seconds."""
        _, env = self._env()
        process = forkhz.Popen(  # the frames, not the start, are what this rule proves
            [HZ, "mcp"],
            cwd=self.root,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        timer = threading.Timer(TIMEOUT, process.kill)
        timer.start()
        answers: list[dict[str, Any]] = []
        try:
            assert process.stdin is not None and process.stdout is not None
            process.stdin.write(b"\n".join([MCP_INIT, MCP_INITIALIZED, *frames]) + b"\n")
            process.stdin.flush()
            while sorted(map(str, until)) != sorted(
                str(a.get("id")) for a in answers if a.get("id") in until
            ):
                line = process.stdout.readline()
                if not line:
                    break
                message = json.loads(line)
                if message.get("id") != "init" and "method" not in message:
                    answers.append(message)
            process.stdin.close()
            process.wait(timeout=TIMEOUT)
            assert process.stderr is not None
            stderr = process.stderr.read().decode()
        finally:
            timer.cancel()
            process.kill()
            process.wait()
            for stream in (process.stdout, process.stderr):
                if stream is not None:
                    stream.close()
        return answers, stderr if "Traceback" in stderr else ""

    @rule(name=st.sampled_from(NAMES))
    def page_together(self, name: str) -> None:
        """A tick runs while the served head (logging at info, as a fresh one configures
        it) gets at once: a chat with its request id and the same again (a second click),
        another chat twice the same way, an answer in words, an approval and the page
        itself (the more threads write and log together, the likelier the race). None may
        answer 500; each request id is delivered once (chat-once)."""
        self.provider.gate.set()
        rid, rid2 = f"rq-chaos{self.count:05d}p", f"rq-chaos{self.count:05d}o"
        self.sent += [(name, rid), (name, rid2)]
        words, more = f"note {rid}", f"note {rid2}"
        env = {**self._env()[1], "HZ_LOG_LEVEL": "info"}
        with served(env, self.root) as head:
            self._start("system", "daemon", "tick", "--json")
            sends: list[tuple[str, Any]] = [
                ("chat", lambda: head.post(f"/h/{name}/chat", {"text": words, "request_id": rid})),
                ("chat", lambda: head.post(f"/h/{name}/chat", {"text": words, "request_id": rid})),
                ("answer", lambda: head.post(f"/h/{name}/answer", {"text": "only incidents"})),
                ("approve", lambda: head.post(f"/h/{name}/approve", {})),
                ("chat", lambda: head.post(f"/h/{name}/chat", {"text": more, "request_id": rid2})),
                ("chat", lambda: head.post(f"/h/{name}/chat", {"text": more, "request_id": rid2})),
                ("page", lambda: head.ask("GET", f"/h/{name}")[::2]),
            ]
            together = threading.Barrier(len(sends))

            def send(one: Any) -> tuple[int, Any]:
                together.wait(timeout=TIMEOUT)
                return one()  # type: ignore[no-any-return]

            with ThreadPoolExecutor(len(sends)) as pool:
                done = [pool.submit(send, one) for _, one in sends]
                answers = [
                    (what, *future.result()) for (what, _), future in zip(sends, done, strict=True)
                ]
            self.settle()
        for n, (what, status, said) in enumerate(answers):
            if TRACE:
                print(f"page {what} {name} -> {status}: {said}"[:400])
            if status >= 500:
                self._breach("page-ok", f"the page's {what} answered {status}: {str(said)[:600]}")
            said = said if isinstance(said, dict) else {}
            code = 0 if status < 400 else 1
            stderr = f"{said.get('code')}: {said.get('message')}" if code and "code" in said else ""
            message = {0: words, 2: more}.get(n) if code == 0 else None
            self.ledger.ended.append(
                Ended(("page", what, name), code, False, json.dumps(said), stderr, message)
            )

    @rule(
        name=st.sampled_from(NAMES),
        what=st.sampled_from(ACROSS),
    )
    def across(self, name: str, what: str) -> None:
        """One request id sent by every surface in turn, the later sends while the first's
        turn may still run: ``wake-killed``: `hz heinzel wake --request-id W` killed while
        its request waits at the provider, then W over MCP (``heinzel_wake``) and by the
        command again (``wake-ticked``: a tick between, which resumes the open turn;
        ``wake-page``: the page's Wake form with W first, its child resuming the turn, then
        MCP and the command while it may run), and no turn of it is left open
        (resend-resumes); ``retry-*`` the same for `hz heinzel retry --request-id R`,
        ``heinzel_retry`` and the page's Retry form;
        ``answer``: a question waits, the page answers it (``question`` and ``request_id``
        in the form, its turn going on in the head's child), then MCP (``heinzel_answer``)
        and ``hz heinzel answer --question --request-id`` with the same id while it runs;
        ``chat``: the page's chat with its id (its turn in the child), then MCP's and the
        command's (``chat-asked``: a question waits, the page's chat answers it). Each id
        runs one turn, answers once, is delivered once (wake-once, answer-once,
        chat-once), every send coded or told so."""
        self.settle()
        self._new_day()
        verb = what.partition("-")[0]
        rid = f"rq-chaos{self.count:05d}" + {"wake": "w", "retry": "t"}.get(verb, "a")
        if verb in ("wake", "retry"):
            hint = ("shorter, please",) if verb == "retry" else ()
            if verb == "retry":
                self._run("heinzel", "wake", name)  # an ended turn to fork
                self.retried.append((name, rid))
            self.provider.gate.clear()
            self._start("heinzel", verb, name, *hint, "--request-id", rid)
            run = self.running[-1]
            if self.provider.wait_held(run.process, TIMEOUT):
                run.killed = True
                with contextlib.suppress(ProcessLookupError):
                    os.kill(run.process.pid, signal.SIGKILL)
            self._wait(run)
            if what.endswith("ticked"):
                self._run("system", "daemon", "tick", "--json")
            arguments = {"name": name, "request_id": rid, **({"hint": hint[0]} if hint else {})}
            if what.endswith("page"):
                self._resent_by_page(name, verb, arguments)
            else:
                self._mcp((f"heinzel_{verb}", arguments, False))
                self._run("heinzel", verb, name, *hint, "--request-id", rid)
            left = [t for t in Spines.read(self.root / "home").open if t.startswith(self._id(name))]
            if left:
                self._breach(
                    "resend-resumes",
                    f"{verb} {rid} resent after its process was killed, nothing else "
                    f"running: {left} left open ({self.ledger.ended[-2].stdout[:300]!r})",
                )
            return
        question = None
        if what == "answer-killed":
            self.provider.asks = 1
            found = QUESTION_TURN.search(self._run("heinzel", "wake", name).stdout)
            if found is None:
                return  # no question asked (a cap): nothing to answer
            answer = ("heinzel", "answer", name, "only incidents", "--question", found[1])
            self._start(*answer, "--request-id", rid, crash="after:question.answered")
            self._wait(self.running[-1])
            arguments = {"name": name, "text": "only incidents", "request_id": rid}
            self._mcp(("heinzel_answer", {**arguments, "question": found[1]}, False))
            hid, runs = self._id(name), Spines.read(self.root / "home").runs
            lines = self._spine(hid).read_text(encoding="utf-8").splitlines()
            answered = [json.loads(line) for line in lines if '"question.answered"' in line]
            owed = [a["turn"] for a in answered if not runs[f"{hid}@answer:{a['turn']}"]]
            if owed:
                self._breach(
                    "resend-resumes",
                    f"answer {rid} resent after its process was killed: the follow-up of "
                    f"{owed} still owed",
                )
            return
        if what in ("answer", "chat-asked"):
            self.provider.asks = 1
            found = QUESTION_TURN.search(self._run("heinzel", "wake", name).stdout)
            question = found[1] if found else None
            if question is None and what == "answer":
                return  # no question asked (a cap): nothing to answer
        words = f"note {rid}" if what != "answer" else "only incidents"
        args: tuple[str, ...] = ()
        if what == "answer":
            form: dict[str, str] = {"text": words, "question": str(question), "request_id": rid}
            path, tool, args = "answer", "heinzel_answer", ("--question", str(question))
        else:
            self.sent.append((name, rid))
            form, path, tool, args = {"text": words, "request_id": rid}, "chat", "heinzel_chat", ()
        with served(self._env()[1], self.root) as head:
            status, said = head.post(f"/h/{name}/{path}", form)
            if status >= 500:
                self._breach("page-ok", f"the page's {path} answered {status}: {said}")
            code = 0 if status < 400 else 1
            stderr = f"{said.get('code')}: {said.get('message')}" if code else ""
            message = words if code == 0 and what != "answer" else None
            self.ledger.ended.append(
                Ended(("page", path, name), code, False, json.dumps(said), stderr, message)
            )
            if TRACE:
                print(f"page {path} {name} -> {status}: {said}"[:400])
            # while the head's child may still run the turn the page's send started
            arguments = {k: v for k, v in form.items() if k != "question"}
            if question is not None and what == "answer":
                arguments["question"] = question
            self._mcp((tool, {"name": name, **arguments}, False))
            self._start("heinzel", path, name, words, *args, "--request-id", rid)
            self.settle()

    def _resent_by_page(self, name: str, verb: str, arguments: dict[str, str]) -> None:
        """The page's Wake or Retry form sent with the killed command's request id (its
        ``request_id`` field, as `hz system serve` renders it): the head's child resumes
        the turn left open; while it may still run, MCP and the command send the id again."""
        form = {"verb": verb, **{k: v for k, v in arguments.items() if k != "name"}}
        with served(self._env()[1], self.root) as head:
            status, said = head.post(f"/h/{name}/do", form)
            if status >= 400:  # a resend is told where it went, never refused
                self._breach("page-ok", f"the page's {verb} resent answered {status}: {said}")
            code = 0 if status < 400 else 1
            stderr = f"{said.get('code')}: {said.get('message')}" if code else ""
            self.ledger.ended.append(
                Ended(("page", verb, name), code, False, json.dumps(said), stderr, None)
            )
            if TRACE:
                print(f"page {verb} {name} -> {status}: {said}"[:400])
            self._mcp((f"heinzel_{verb}", arguments, False))
            hint = (arguments["hint"],) if "hint" in arguments else ()
            self._run("heinzel", verb, name, *hint, "--request-id", arguments["request_id"])

    @rule(how=st.sampled_from(sorted(SPELLED)))
    def read_spelled(self, how: str) -> None:
        """A reader of report-0's document whose input names it another way (`SPELLED`):
        by ``files.read``, by a path with ``./`` or ``..`` in it, by its absolute path, by a
        second name (a hard or a symbolic link). Woken while the document holds a pending
        draft, it must see the approved text only, as `READER` does (reader-approved)."""
        name = f"reader-{how}"
        if name not in self.extra_ids:
            (self.root / "links").mkdir(exist_ok=True)
            document = self.root / f"{NAMES[0]}.md"
            if how == "hard-link" and not (self.root / "links" / "hard.md").exists():
                os.link(document, self.root / "links" / "hard.md")
                self.links.append((document, self.root / "links" / "hard.md"))
            if how == "symlink" and not (self.root / "links" / "soft.md").exists():
                (self.root / "links" / "soft.md").symlink_to(document)
            source = SPELLED[how].replace("ROOT", str(self.root))
            contract = READER_CONTRACT.replace(f"name: {READER}", f"name: {name}")
            contract = contract.replace(
                "requires: [documents:read, documents:write]",
                "requires: [documents:read, files:read, documents:write]",
            )
            contract = contract.replace(
                "upstream: {from: documents.read, args: {doc: 'file:report-0.md'}}",
                f"upstream: {source}",
            ).replace("file:reader.md", f"file:{name}.md")
            assert source in contract and f"file:{name}.md" in contract
            (self.root / f"{name}.prose.md").write_text(contract, encoding="utf-8")
            (self.root / f"{name}.md").write_text("# What report-0 said\n", encoding="utf-8")
            self._approve_extra(name)
        self._new_day()
        if not DRAFT_LINE.search((self.root / f"{NAMES[0]}.md").read_text(encoding="utf-8")):
            self._run("heinzel", "wake", NAMES[0])  # a pending draft in report-0's document
        self._run("heinzel", "wake", name)

    @rule(victim=st.sampled_from([STYLED, READER]), how=st.sampled_from(["json", "prev"]))
    def flip(self, victim: str, how: str) -> None:
        """A byte flipped in the middle of ``victim``'s spine (not its tail): its first
        byte (no JSON then), or a hex digit of its ``prev``. Its commands refuse with a
        code at most once (the break is then recorded as contained) and go on; the others
        work; `hz heinzel verify` names it."""
        self._calm()
        heinzel = self.extra_ids[victim]
        if len(self._spine(heinzel).read_bytes().splitlines()) < 5:
            self._run("heinzel", "wake", victim)
        spine = self._spine(heinzel)
        lines = spine.read_bytes().splitlines(keepends=True)
        at = len(lines) // 2
        line = lines[at]
        if not line.startswith(b"{") or b'"prev":"' not in line:
            return  # flipped before: one break in the middle is enough
        if how == "json":
            lines[at] = b"z" + line[1:]
        else:
            start = line.index(b'"prev":"') + len(b'"prev":"')
            digit = b"0" if line[start : start + 1] != b"0" else b"1"
            lines[at] = line[:start] + digit + line[start + 1 :]
        spine.write_bytes(b"".join(lines))
        self.flipped.add(heinzel)
        tries = [self._run("heinzel", "wake", victim) for _ in range(3)]
        codes = [t.code for t in tries]
        if codes.count(1) > 1 or codes[-1] != 0:
            said = [t.stderr.splitlines()[0] if t.stderr else "" for t in tries]
            self._breach("break-contained", f"{victim}'s wakes after the flip: {codes} {said}")
        for name in NAMES:
            other = self._run("heinzel", "show", name, "--json")
            if other.code != 0:
                self._breach("break-contained", f"hz heinzel show {name}: {other.stderr[:300]}")
        self._verified()

    def _id(self, name: str) -> str:
        return self.ids.get(name) or self.extra_ids[name]

    def _spine(self, heinzel: str) -> Path:
        return self.root / "home" / "heinzel" / heinzel / "session.jsonl"

    def _verified(self) -> None:
        """`hz heinzel verify --json`: the spines `flip` broke and no other, each break
        named and contained."""
        done = forkhz.run(
            [HZ, "heinzel", "verify", "--json"],
            cwd=self.root,
            env=self._env()[1],
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
        )
        code = done.returncode
        reports = json.loads(done.stdout) if done.stdout.startswith("[") else []
        broken = {str(r.get("file", "")).split("/")[-2] for r in reports if not r["ok"]}
        uncontained = [
            (r["file"], b) for r in reports for b in r["breaks"] if not b.get("contained")
        ]
        if broken != self.flipped or uncontained or code != (1 if self.flipped else 0):
            self._breach(
                "break-contained" if self.flipped else "chain",
                f"hz heinzel verify exit {code}, breaks in {sorted(broken)} (flipped "
                f"{sorted(self.flipped)}), not contained: {uncontained}",
            )

    @rule(name=st.sampled_from(NAMES), block=st.booleans())
    def hard_link(self, name: str, block: bool) -> None:
        """``name``'s document gets a second name (a hard link in links/): every write of
        hz keeps the link (`link-kept`, checked after each step). ``block``: the place of
        its in-place journal is taken (a folder), so the next write fails HZH420 with the
        document untouched, and the other Heinzelmännchen's turn goes on."""
        self._calm()
        document = self.root / f"{name}.md"
        second = self.root / "links" / f"{name}.md"
        if not second.exists():
            second.parent.mkdir(exist_ok=True)
            os.link(document, second)
            self.links.append((document, second))
        if block:
            journal = self.root / f".{name}.md.hz-inplace"
            journal.mkdir()
            try:
                before = document.read_bytes()
                woken = self._run("heinzel", "wake", name)
                # a turn that reached the write fails HZH420 (one a cap skipped never does)
                wrote = "drafted" in woken.stdout or "placed" in woken.stdout
                if wrote or (woken.code == 1 and not woken.stderr.startswith("HZ")):
                    self._breach("link-kept", f"a wake with its journal blocked: {woken}")
                if document.read_bytes() != before:
                    self._breach("link-kept", "a refused in-place write changed the document")
                other = NAMES[name == NAMES[0]]
                went = self._run("heinzel", "wake", other)
                if went.code != 0:
                    self._breach("link-kept", f"{other} stopped beside it: {went.stderr[:300]}")
            finally:
                journal.rmdir()
        self._run("heinzel", "wake", name)
        self._links_kept()

    def _links_kept(self) -> None:
        for document, second in self.links:
            with contextlib.suppress(FileNotFoundError):
                if document.stat().st_ino != second.stat().st_ino:
                    self._breach("link-kept", f"{document.name} lost its link to {second}")

    @rule(
        name=st.sampled_from(NAMES),
        verb=st.sampled_from(["pause", "retire"]),
        how=st.sampled_from(["cli", "page"]),
    )
    def lifecycle_together(self, name: str, verb: str, how: str = "cli") -> None:
        """Two `hz heinzel pause` (or `retire`) at once, then two of its undoing at once,
        both by the command or one by it and one by the served page's button: each pair
        writes one line and one of them succeeds; the other is refused with its code
        (HZH050), at once or after waiting for the lock (lifecycle-once). Whatever else
        is running may hold the lock meanwhile."""
        undo = {"pause": "unpause", "retire": "unretire"}[verb]
        for word in (verb, undo):
            first = len(self.ledger.ended)
            if how == "page":
                with served(self._env()[1], self.root) as head:
                    self._start("heinzel", word, name)
                    status, said = head.post(f"/h/{name}/do", {"verb": word})
                if status >= 500:
                    self._breach("page-ok", f"the page's {word} answered {status}: {said}")
                said = said if isinstance(said, dict) else {}
                code = 0 if status < 400 else 1
                stderr = f"{said.get('code')}: {said.get('message')}" if code else ""
                self.ledger.ended.append(
                    Ended(("heinzel", word, name), code, False, json.dumps(said), stderr)
                )
            else:
                self._start("heinzel", word, name)
                self._start("heinzel", word, name)
            for run in [r for r in self.running if r.args == ("heinzel", word, name)]:
                self._wait(run)
            pair = [e for e in self.ledger.ended[first:] if e.args == ("heinzel", word, name)]
            if sum(e.code == 0 for e in pair) > 1:
                self._breach("lifecycle-once", f"{word} {name} ({how}) succeeded twice at once")

    @rule(bad=st.sampled_from(sorted(BAD_SKILLS)), name=st.sampled_from(NAMES))
    def bad_skill(self, bad: str, name: str) -> None:
        """skills/house-style/SKILL.md goes bad (``malformed`` YAML, or it ``grants`` a
        tool): `STYLED`, which uses it, is refused with HZC05x and sends nothing; ``name``
        (which does not use it) wakes as before. Then the skill is mended."""
        self._calm()
        skill = self.root / "skills" / "house-style" / "SKILL.md"
        skill.write_text(BAD_SKILLS[bad], encoding="utf-8")
        try:
            refused = self._run("heinzel", "wake", STYLED)
            if refused.code != 1 or not refused.stderr.startswith(f"{SKILL_CODES[bad]}: "):
                self._breach(
                    "skill-contained",
                    f"{STYLED} with a {bad} skill: exit {refused.code}, {refused.stderr[:300]!r}",
                )
            other = self._run("heinzel", "wake", name)
            # stopped by the skill, not by what a turn may meet (a cap, the model's reply)
            if re.search(r"HZC0\d\d|SKILL\.md", other.stdout + other.stderr):
                self._breach(
                    "skill-contained",
                    f"{name}, which does not use the {bad} skill, exit {other.code}: "
                    f"{(other.stderr or other.stdout)[:300]!r}",
                )
        finally:
            skill.write_text(SKILL, encoding="utf-8")

    @rule()
    def settle(self) -> None:
        while self.running:
            self._wait(self.running[0])

    # -- invariants ----------------------------------------------------------------

    def _check(self, *, quiet: bool) -> None:
        facts = Spines.read(self.root / "home")
        charged: dict[str, Decimal] = {}
        with self.provider.lock:
            paid = {tag: list(costs) for tag, costs in self.provider.paid.items()}
        for run_tag, costs in paid.items():
            day = self.days[run_tag]
            charged[day] = charged.get(day, Decimal(0)) + sum(costs, Decimal(0))
        broken = violations(
            facts,
            self.ledger.ended,
            cap=CAP,
            charged=charged,
            unrecorded=self.ledger.unrecorded,
            owed=self.ledger.owed,
            quiet=quiet,
            flipped=frozenset(self.flipped),
        )
        self._links_kept()
        if self.provider.problems:
            broken["provider"] = list(self.provider.problems)
        if self.provider.leaked:
            broken["reader-approved"] = list(self.provider.leaked)
        if self.provider.resurfaced:
            broken["lesson-gone"] = list(self.provider.resurfaced)
        for name, what in broken.items():
            if name not in DISABLED and name not in self.breaches:
                self.breaches[name] = f"after step {self.steps}: " + "\n    ".join(what)

    @invariant()
    def promises_hold(self) -> None:
        """Checked after every step; a breach is reported at the end of the example, so
        that Hypothesis's replay of it draws the same steps whatever the processes did."""
        self.steps += 1
        self._reap()
        self._check(quiet=False)

    def teardown(self) -> None:
        try:
            if not self.breaches and not self.quieted:
                self._quiet()
        finally:
            self.provider.gate.set()
            for run in self.running:
                with contextlib.suppress(ProcessLookupError):  # it ended in between
                    run.process.kill()
                run.process.wait()
            self.provider.close()
            if TRACE:
                print(f"kept the home in {self.tmp}")
            else:
                shutil.rmtree(self.tmp, ignore_errors=True)
        assert not self.breaches, "\n".join(
            f"{name} ({INVARIANTS.get(name, 'the provider')}), {what}"
            for name, what in self.breaches.items()
        )

    def _quiet(self) -> None:
        """Every process waited for, the provider fair, ticks until one wakes nothing; then
        every invariant, the 'exactly once' ones too."""
        self.quieted = True
        self.fault = None
        self.provider.weather, self.provider.asks = "fair", 0
        self.settle()
        self._check(quiet=False)
        woken: list[Any] = []
        for _ in range(QUIET_TICKS):
            self._start("system", "daemon", "tick", "--json")
            self.settle()
            self._check(quiet=False)
            woken = json.loads(self.ledger.ended[-1].stdout)["woken"]
            if not woken:
                break
        if woken and "quiet" not in DISABLED:
            self.breaches["quiet"] = f"the last of {QUIET_TICKS} quiet ticks woke {woken}"
            return
        for heinzel in self.ids.values():
            self.ledger.owed.add(f"{heinzel}@{_ts(_slot(self.now))}")
        self._check(quiet=True)
        if self.flipped:
            self._verified()  # the broken ones named, contained, and no other
        elif "chain" not in DISABLED and "chain" not in self.breaches:
            verified = forkhz.run(
                [HZ, "heinzel", "verify"],
                cwd=self.root,
                env={**os.environ, "HZ_HOME": str(self.root / "home"), "HZ_NOW": _ts(self.now)},
                capture_output=True,
                text=True,
                timeout=TIMEOUT,
            )
            if verified.returncode != 0:
                self.breaches["chain"] = f"hz heinzel verify: {verified.stdout}{verified.stderr}"


def _settings(examples: int, steps: int) -> settings:
    return settings(
        max_examples=examples,
        stateful_step_count=steps,
        derandomize=not SOAK,  # the soak explores new sequences each time
        database=None,
        deadline=None,
        phases=[Phase.explicit, Phase.generate],
        suppress_health_check=list(HealthCheck),
        print_blob=False,
    )


Chaos.TestCase.settings = _settings(
    SOAK or int(os.environ.get("HZ_CHAOS_EXAMPLES", "2")),
    int(os.environ.get("HZ_SOAK_STEPS", "40" if SOAK else "20")),
)
TestChaos = Chaos.TestCase


def _tour(machine: Chaos) -> None:
    """Every surface and fault once, in order, each on a day of its own; of `across` and
    `read_spelled`, one variant each (their `PATHS` run every variant)."""
    for how in ("resend", "delivered-then-asked", "locked", "by-question"):
        machine.question(NAMES[0], how)
        machine.promises_hold()
    machine._new_day()
    machine._run("heinzel", "wake", NAMES[1])
    machine.retry_with_id(NAMES[1], None)
    machine.retry_again(-1, wait=True)
    if WITH_ID["wake"]:
        machine._new_day()
        machine.wake_twice(NAMES[1], wait=True)
    machine.promises_hold()
    machine.identical_drafts(NAMES[1])
    machine.promises_hold()
    machine.forget_while_running(NAMES[0], 3)
    machine.promises_hold()
    machine.dismiss(NAMES[1])
    machine.promises_hold()
    machine.lifecycle_together(NAMES[0], "pause")
    machine.promises_hold()
    machine._new_day()
    machine._run("heinzel", "wake", NAMES[0])  # a pending draft in report-0's document
    machine.read(None)
    machine.promises_hold()
    machine.read_spelled("symlink")  # the same document by a second name (PATHS: all)
    machine.promises_hold()
    machine._new_day()
    machine.provider.asks = 1
    machine._run("heinzel", "wake", NAMES[1])
    machine.mcp(NAMES[1], "chat", 0)  # answers the question, then is sent again
    machine.mcp(NAMES[1], "retry", 0)
    machine.promises_hold()
    machine._new_day()
    machine._run("heinzel", "wake", NAMES[0])
    for action in ("approve", "chat", "retry", "stop", "wake"):
        machine.page(NAMES[0], action)
    machine._new_day()
    machine.provider.asks = 1
    machine._run("heinzel", "wake", NAMES[0])
    machine.page(NAMES[0], "answer")  # the question it asked, answered on the page
    machine.promises_hold()
    machine.across(NAMES[1], "wake-page")  # killed, then the page, MCP, the command
    machine.promises_hold()
    for fault in FAULTS:
        machine._new_day()
        machine.weather(fault)
        machine._run("heinzel", "wake", NAMES[fault == "stall"])
        machine.weather("fair")
        machine.promises_hold()


def test_a_tour_of_every_surface_keeps_every_promise() -> None:
    """The machine's rules each once, in one fixed order (the random examples may draw a
    rule late or not at all): every invariant must hold, the end's "exactly once" too.
    It fails with every invariant that broke, each with what broke it."""
    machine = Chaos()
    try:
        _tour(machine)
        machine._quiet()
    finally:
        machine.teardown()


PATHS = {
    "source-moves": lambda m: (m.source_moves(twice=True), m._run("heinzel", "wake", NAMES[0])),
    "mcp-frames": lambda m: (
        m.mcp_frames(NAMES[0], "cli", '{"n":1}'),
        m.mcp_frames(NAMES[1], "mcp", "[1]"),
        m.mcp_frames(NAMES[0], "mcp", "[1]", asked=True),
        m.mcp_frames(NAMES[1], "cli", '{"n":1}', asked=True),
    ),
    "page-together": lambda m: [
        (m._new_day(), m.weather("ask"), m._run("heinzel", "wake", name), m.page_together(name))
        for name in (*NAMES, NAMES[0])  # a fresh head each time: each its own race
    ],
    "flip": lambda m: (m.flip(STYLED, "json"), m.flip(READER, "prev")),
    "hard-link": lambda m: (
        m.hard_link(NAMES[0], block=False),
        m.approve(NAMES[0], "document"),
        m.tick("none", None),
        m.hard_link(NAMES[0], block=True),
    ),
    "lifecycle-together": lambda m: (
        m._start("heinzel", "wake", NAMES[0]),  # a turn may hold the lock meanwhile
        m.lifecycle_together(NAMES[0], "pause"),
        m.lifecycle_together(NAMES[1], "retire"),
        m._start("heinzel", "wake", NAMES[1]),
        m.lifecycle_together(NAMES[1], "pause", "page"),
        m.lifecycle_together(NAMES[0], "retire", "page"),
    ),
    "across": lambda m: [m.across(NAMES[n % 2], what) for n, what in enumerate(ACROSS)],
    "read-spelled": lambda m: [m.read_spelled(how) for how in sorted(SPELLED)],
    "bad-skill": lambda m: (m.bad_skill("malformed", NAMES[0]), m.bad_skill("grants", NAMES[1])),
}
"""Each path to the promises that a one-off test guarded before (issue 38's chaos part):
its rules run in a fixed order on a home of their own, then quiet."""


@pytest.mark.parametrize("path", sorted(PATHS))
def test_each_path_to_the_promises_keeps_them(path: str) -> None:
    """One path's rules (`PATHS`), each step's invariants, then quiet and every invariant:
    a breach fails with its name and what broke it."""
    machine = Chaos()
    try:
        PATHS[path](machine)
        machine.promises_hold()
        machine._quiet()
    finally:
        machine.teardown()
