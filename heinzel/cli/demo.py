"""``hz demo``: the worked example of ADR 0049 (Priya's weekly report), played for real.

A fresh home, a copy of ``fixtures/priya`` beside it, and a week of ``hz`` commands, each a
separate process with ``HZ_NOW`` set to its moment, so the clock, the locks and the crashes
are real: created and approved on Monday; Friday 15:00's scheduled draft, killed once right
after ``effect.started`` and once right after the draft is placed (``body:1``: its text
written to the body, before the spine records it) and finished by the next
ticks with one section and no second model call; Monday's approval with Priya's edits and
two lessons; Tuesday's chat, whose turn proposes the amendment she asked for (hers, citing
her message), approved as v2; the next Friday's draft under v2 with both lessons;
Wednesday's discovered document, proposed once and declined; Theo's Friday, whose late
row the report falls back on (the flow); then the Tuesday after, an amendment she tries on
her last three Fridays before approving it (`hz heinzel try`). The model is the built-in
``offline`` one (not AI, and it says so). `Week` is also what ``tests/e2e/test_priya.py``
drives.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from heinzel.errors import HeinzelError
from heinzel.strings.usd import usd_text
from ledger.event import make_event
from ledger.files import ensure_private_dir
from machines.stores.journal import expand_carried

__all__ = ["FIXTURES", "Week", "priya_edits", "run_demo"]

FIXTURES = Path(__file__).resolve().parent / "demo_fixtures"
"""Priya's files, carried by the package (in the repository a link to ``fixtures/priya``,
copied into the wheel), so an installed hz plays the demo from any folder."""
NAME = "weekly-report"
V3 = "weekly-report.v3.prose.md"
V5 = "weekly-report.v5.prose.md"
SHORT = "the section has at most 12 lines"
"""The done-when item of the amendment Priya tries before approving it (docs/try.md)."""
TRIED = (
    "Tue 17 Nov 10:00",
    "an amendment tried on the last three Fridays",
    "Priya wants the section short enough to read on her phone: she files an amendment "
    f'adding "{SHORT}" to Done when and, before approving it, tries it on her last three '
    "Fridays. hz thinks each of them again from the inputs it read then, under the "
    "amendment, and shows the placed and the tried draft side by side with the new "
    "checks on both. Nothing is placed and no turn starts: the spine gains only the "
    "trial's usage lines (kind trial). The offline model keeps to eight bullets but "
    "cannot shorten them, so one Friday would have placed nothing: she leaves the "
    "amendment pending.",
)
MARK = "<!-- hz:draft key="


def priya_edits(text: str) -> str:
    """What Priya does to the first pending draft on Monday: deletes the tag line (that is
    the approval), moves the board (where the risks are) above the merged PRs, and
    deletes a meeting line she does not want in the report."""
    lines = text.split("\n")
    tag = next(i for i, line in enumerate(lines) if line.startswith("🧝 DRAFT"))
    del lines[tag]
    end = next(i for i in range(tag, len(lines)) if lines[i].startswith("<!-- hz:end"))
    section = lines[tag:end]
    prs, board, calendar = (section.index(f"### {h}") for h in ("merged_prs", "board", "calendar"))
    reordered = section[:prs] + section[board:calendar] + section[prs:board] + section[calendar:]
    kept = [line for line in reordered if "Payments partner sync" not in line]
    return "\n".join(lines[:tag] + kept + lines[end:])


@dataclass
class Step:
    """One moment of the week: what ran, what the spine gained, what it cost."""

    when: str
    title: str
    story: str
    commands: list[str] = field(default_factory=list)
    lines: list[dict[str, Any]] = field(default_factory=list)
    usd: float = 0.0
    exits: list[int] = field(default_factory=list)
    others: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    """What other sessions gained (Theo's on his Friday), by name."""
    said: str = ""
    """What a command printed that the moment shows (the trial's side by side)."""


class Week:
    """Priya's week in ``home``, one ``hz`` process per command."""

    def __init__(
        self,
        home: Path,
        *,
        crashes: bool = True,
        python: str = sys.executable,
        run: Callable[..., subprocess.CompletedProcess[str]] = subprocess.run,
    ) -> None:
        self.home = home
        self.crashes = crashes
        self.work = home / "priya"
        self.python = python
        self.run = run
        """How each command's process starts (`subprocess.run`'s arguments and result)."""
        self.steps: list[Step] = []

    # -- plumbing ------------------------------------------------------------------

    def setup(self) -> None:
        """A fresh home and the fixtures copied beside it (HZH240, HZH241 otherwise)."""
        if not FIXTURES.is_dir():
            raise HeinzelError(
                "HZH240",
                f"the demo's fixtures are missing ({FIXTURES})",
                "reinstall hz (the package carries them), or run make demo in a clone",
            )
        if self.home.exists() and any(self.home.iterdir()):
            raise HeinzelError(
                "HZH241",
                f"{self.home} is not empty; the demo plays in a fresh home",
                "give --home a new folder, or leave it out for a temporary one",
            )
        ensure_private_dir(self.home)
        shutil.copytree(FIXTURES, self.work)

    def env(self, now: str, crash: str | None) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("HZ_")}
        env.update(
            HZ_HOME=str(self.home),
            HZ_NOW=now,
            HZ_FIXTURE_SOURCES=str(self.work),
            HZ_MODEL="offline",
            HZ_MODEL_FAST="offline",
            HZ_MODEL_BEST="offline",
            HZ_APPROVER="priya",
            HZ_USER="priya",
            HZ_LOG_LEVEL="error",
            XDG_CONFIG_HOME=str(self.home / "config"),
        )
        if crash:
            env["HZ_CRASH_AT"] = crash
        return env

    def hz(self, step: Step, now: str, *args: str, crash: str | None = None) -> str:
        """Run ``hz ARGS`` at ``now`` (killed at ``crash``); its output."""
        done = self.run(
            [self.python, "-m", "heinzel", *args],
            env=self.env(now, crash),
            cwd=self.work,
            capture_output=True,
            text=True,
            check=False,
        )
        shown = " ".join(a if " " not in a else repr(a) for a in args)
        step.commands.append(f"HZ_NOW={now}{f' HZ_CRASH_AT={crash}' if crash else ''} hz {shown}")
        step.exits.append(done.returncode)
        if done.returncode not in (0, 137) or (done.returncode == 137 and not crash):
            raise HeinzelError(
                "HZH242",
                f"the demo's `hz {shown}` failed: {done.stderr.strip()[-300:]}",
                f"the home is kept at {self.home} to look into",
            )
        return done.stdout

    def spine(self, name: str = NAME) -> list[dict[str, Any]]:
        """Every line of one session (Priya's report by default), parsed."""
        for path in sorted((self.home / "heinzel").glob("hz-*/session.jsonl")):
            lines = [json.loads(line) for line in path.read_text("utf-8").splitlines()]
            if lines and lines[0]["kind"] == "heinzel.created" and lines[0]["data"]["name"] == name:
                return lines
        return []

    def report(self) -> str:
        return (self.work / "weekly-report.md").read_text(encoding="utf-8")

    def spent(self) -> float:
        return sum(
            float(e["data"].get("usd") or 0)
            for e in self.spine()
            if e["kind"] in ("model.request", "usage")
        )

    def moment(self, when: str, title: str, story: str, play: Callable[[Step], None]) -> Step:
        """Play one moment and keep what it added."""
        step = Step(when, title, story)
        before, usd = len(self.spine()), self.spent()
        play(step)
        step.lines = self.spine()[before:]
        step.usd = self.spent() - usd
        self.steps.append(step)
        return step

    # -- the week ------------------------------------------------------------------

    def _created(self, s: Step) -> None:
        self.hz(s, "2026-10-26T09:00:00Z", "heinzel", "new", "--from", "weekly-report.prose.md")
        self.hz(s, "2026-10-26T09:01:00Z", "approve", NAME)

    def _friday(self, s: Step) -> None:
        tick = ("system", "daemon", "tick")
        if self.crashes:
            self.hz(s, "2026-10-30T14:05:00Z", *tick, crash="after:effect.started")
            self.hz(s, "2026-10-30T14:07:00Z", *tick, crash="body:1")
        self.hz(s, "2026-10-30T14:09:00Z", *tick)

    def _monday(self, s: Step) -> None:
        (self.work / "weekly-report.md").write_text(priya_edits(self.report()), encoding="utf-8")
        self.hz(s, "2026-11-02T08:00:00Z", "system", "daemon", "tick")

    def _tuesday(self, s: Step) -> None:
        message = (self.work / "amendment-v2.message.txt").read_text("utf-8").strip()
        self.hz(s, "2026-11-03T09:00:00Z", "heinzel", "chat", NAME, message)
        self.hz(s, "2026-11-03T09:05:00Z", "approve", NAME)

    def _next_friday(self, s: Step) -> None:
        self.hz(s, "2026-11-06T14:05:00Z", "system", "daemon", "tick")

    def _wednesday(self, s: Step) -> None:
        incidents = "# Checkout incidents\n\n- 2026-11-10 card declines spiked; fixed by a retry\n"
        (self.work / "checkout-incidents.md").write_text(incidents, encoding="utf-8")
        self.hz(s, "2026-11-11T08:00:00Z", "system", "daemon", "tick")
        self.hz(s, "2026-11-11T09:00:00Z", "heinzel", "decline", NAME)
        self.hz(s, "2026-11-12T08:00:00Z", "system", "daemon", "tick")

    def _theos_friday(self, s: Step) -> None:
        tick = ("system", "daemon", "tick")
        self.hz(s, "2026-11-12T09:00:00Z", "heinzel", "new", "--from", "my-row.prose.md")
        self.hz(s, "2026-11-12T09:01:00Z", "approve", "my-row")
        self.hz(s, "2026-11-12T09:02:00Z", "heinzel", "amend", NAME, "--from", V3)
        self.hz(s, "2026-11-12T09:03:00Z", "approve", NAME)
        self.hz(s, "2026-11-12T09:05:00Z", "heinzel", "wake", "my-row")
        self.hz(s, "2026-11-12T09:30:00Z", "approve", "my-row")  # Theo approves his row
        self.hz(s, "2026-11-12T10:00:00Z", *tick)
        self.hz(s, "2026-11-12T16:05:00Z", *tick)  # Thu 17:05: his next row, never approved
        self.hz(s, "2026-11-13T09:05:00Z", *tick)  # Fri 10:05: nudged again
        self.hz(s, "2026-11-13T14:05:00Z", *tick)  # Fri 15:05: the report falls back
        s.others["my-row"] = self.spine("my-row")

    def tried(self, s: Step) -> None:
        """The Tuesday after: Priya files an amendment asking for a short section and,
        before approving it, tries it on her last three Fridays (`hz heinzel try`)."""
        from heinzel.store.home import Home

        now = "2026-11-17T09:00:00Z"
        shown = json.loads(self.hz(s, now, "heinzel", "show", NAME, "--json"))
        path = Home(self.home).contract_text_path(shown["id"], int(shown["contract_version"]))
        lines = path.read_text(encoding="utf-8").split("\n")
        last = max(i for i, line in enumerate(lines) if line.startswith("- [ ] "))
        lines.insert(last + 1, f"- [ ] {SHORT}")
        (self.work / V5).write_text("\n".join(lines), encoding="utf-8")
        self.hz(s, now, "heinzel", "amend", NAME, "--from", V5)
        s.said = self.hz(s, "2026-11-17T09:05:00Z", "heinzel", "try", NAME, "--turns", "3")

    def play(
        self, out: Callable[[Step], None] = lambda step: None, *, start: int = 0, until: int = 7
    ) -> None:
        """The week (its moments from ``start`` to before ``until``), each handed to ``out``
        as it ends."""
        moments: list[tuple[str, str, str, Callable[[Step], None]]] = [
            (
                "Mon 26 Oct 10:00",
                "created",
                "Priya creates weekly-report from her contract file and approves v1: it is "
                "asleep and will wake every Friday at 15:00 Berlin time.",
                self._created,
            ),
            (
                "Fri 30 Oct 15:05",
                "the scheduled draft, and two crashes",
                "The tick wakes it for the 15:00 slot: inputs fetched once and staged, one "
                "think, a draft placed under its tag. The first tick is killed right after "
                "effect.started (the draft not yet written), the second right after the draft is "
                "in the file and its text in the body, before the spine records it "
                "(effect.done, draft.placed). Each next tick resumes the same turn "
                "by its key: the ledger places the section once, nothing is thought twice.",
                self._friday,
            ),
            (
                "Mon 2 Nov 09:00",
                "approval and two lessons",
                "Priya edits the draft in her document: she deletes the tag line (that is "
                "the approval), moves the board above the merged PRs and drops a meeting. "
                "The tick reads the document, and the learning turn records what it learned.",
                self._monday,
            ),
            (
                "Tue 3 Nov 10:00",
                "chat, and the amendment to v2",
                'Priya writes in its chat: "also mention incidents from the #checkout-oncall '
                'channel" (the message goes to the inbox first). The turn proposes an '
                "amendment adding the channel as an input, marked as her request and citing "
                "her message (the offline model does this by a simple rule). It widens the "
                "contract, which the Heinzelmännchen may never do on its own; as her request "
                "it waits for her approval, and she approves it: v2.",
                self._tuesday,
            ),
            (
                "Fri 6 Nov 15:05",
                "the next draft, under v2 with both lessons",
                "The tick wakes it for the next slot; the turn is pinned to v2 and to the "
                "lessons so far, it reads the on-call channel too, and the tag says v2.",
                self._next_friday,
            ),
            (
                "Wed 11 Nov 09:00",
                "discovered, proposed, declined",
                "A colleague starts checkout-incidents.md beside the report. The first tick of "
                "the day runs the daily discovery: v2's discover hint (*incident*) matches it, "
                "and the Heinzelmännchen wakes with cause discovered, once for that source. The "
                "offline model proposes by rule an amendment reading it instead of the "
                "on-call channel; Priya declines it. The next day's discovery finds the same "
                "document and wakes nothing: a source is proposed once.",
                self._wednesday,
            ),
            (
                "Fri 13 Nov 15:05",
                "Theo's row is late: nudged, then the report proceeds stale",
                "Theo's my-row drafts his row of the team's rows document every Thursday; "
                "Priya amends her report to read that document, needed by Friday noon, "
                "with nudges a day and two hours before. Theo's first row is approved on "
                "Thursday morning; his next one, drafted Thursday 17:00, is not. The ticks "
                "nudge Theo twice (one notice per key, one shown), and at 15:00 Priya's "
                "report goes on with his row as last approved: it records input.fell_back "
                "(which input, which approved version, how stale) and its draft says so. "
                "Nobody is told but Theo and Priya.",
                self._theos_friday,
            ),
        ]
        for when, title, story, play in moments[start:until]:
            out(self.moment(when, title, story, play))


def expanded(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``lines`` with what each carries written out before it, as lines of their own
    (`machines.stores.journal.expand_carried`): the stream an older spine holds."""
    out: list[dict[str, Any]] = []
    for line in lines:
        event = make_event(
            seq=line["seq"],
            ts=line["ts"],
            prev=line["prev"],
            kind=line["kind"],
            data=line["data"],
            turn=line["turn"],
            key=line["key"],
        )
        out.extend(
            {**line, "kind": e.kind, "key": e.key, "data": dict(e.data)}
            for e in expand_carried((event,))
        )
    return out


def _placed(lines: list[dict[str, Any]]) -> set[str]:
    """The keys of the drafts placed in ``lines``: a ``draft.placed`` line's, or one a
    line carries with its effect's end (docs/spine.md)."""
    return {str(e["key"]) for e in expanded(lines) if e["kind"] == "draft.placed"}


def _cut(text: str, width: int) -> str:
    """``text`` whole when it fits in ``width``, else cut with an ellipsis that says so."""
    return text if len(text) <= width else text[: width - 1].rstrip() + "…"


def _line(event: dict[str, Any]) -> str:
    """One spine line, short: seq, kind, and the fields a newcomer cares about."""
    data = event["data"]
    keys = (
        "cause",
        "step",
        "woken_by",
        "disposition",
        "reason",
        "version",
        "by",
        "requested_in",
        "share_changed",
        "to",
        "stale_s",
    )
    shown = [f"{k}={data[k]}" for k in keys if k in data]
    if event["kind"] == "input.fell_back":
        shown.insert(0, f"input={data.get('input')} approved_at={data.get('approved_at')}")
    if event["kind"] == "notice.posted":
        shown.append(repr(_cut(str(data.get("message")), 90)))
    if event["kind"] == "usage":  # spend outside a turn: a trial's request names its turn
        shown.append(f"kind={data.get('kind')} usd={data.get('usd')} tokens={data.get('tokens')}")
        shown += [f"of={data['of']}"] if data.get("of") else []
    if "sentence" in data:
        shown.append(repr(_cut(str(data["sentence"]), 60)))
    pins = data.get("pins") or {}
    if pins:
        shown.append(f"pinned to v{pins.get('contract_version')}")
        seq = pins.get("lessons_seq")
        shown.append("and no lessons yet" if seq is None else f"and the lessons up to seq {seq}")
    carried = _placed([event]) - {event.get("key")}
    if carried:  # the draft's effect.done and draft.placed, carried by this line
        shown.append("with effect.done and draft.placed")
        parts = str(next(iter(carried))).split("@")
    else:
        parts = str(event.get("key") or "").split("@")
    if (event["kind"] in ("effect.started", "draft.placed") or carried) and (
        parts[1:2] and parts[1][:1] == "v"
    ):
        shown.append(f"draft key <id>@{parts[1]}@{parts[2]}@<file>")
    return f"    {event['seq']:>3} {event['kind']:<18} {' '.join(shown)}".rstrip()


def render_step(step: Step) -> str:
    """A moment as a newcomer reads it."""
    lines = [f"\n== {step.when}: {step.title} ==", step.story, ""]
    lines += [
        f"  $ {command}" + ("   -> killed (137)" if code == 137 else "")
        for command, code in zip(step.commands, step.exits, strict=True)
    ]
    lines.append(f"  the spine gained {len(step.lines)} lines:")
    lines += [_line(e) for e in step.lines]
    for name, others in step.others.items():
        lines.append(f"  {name}'s spine gained {len(others)} lines, its notices:")
        lines += [_line(e) for e in others if e["kind"] == "notice.posted"]
    lines.append(f"  cost: {usd_text(step.usd)} USD (the offline model is free)")
    if step.said:
        lines += ["  what it printed:", *(f"    {line}" for line in step.said.splitlines())]
    return "\n".join(lines)


def run_demo(home: Path, echo: Callable[[str], None]) -> Week:
    """Play the week in ``home`` and narrate it through ``echo``."""
    week = Week(home)
    week.setup()
    echo(f"hz demo: Priya's weekly report (ADR 0049), in {home}")
    week.play(lambda step: echo(render_step(step)))
    echo(render_step(week.moment(*TRIED, week.tried)))
    placed = _placed(week.spine())
    pending = week.report().count(MARK)
    tags = [line for line in week.report().splitlines() if line.startswith("🧝 DRAFT")]
    echo("\nThe tags waiting in the report now:")
    for tag in tags:
        echo(f"  {tag}")
    echo(
        f"\nThe report holds {len(placed)} hz sections, one per Friday (the crashed Friday's "
        f"placed once); {len(placed) - pending} approved, its hz markers removed, and "
        f"{pending} waiting for its tag to be deleted: {week.work / 'weekly-report.md'}"
    )
    echo(f"The home is {home}. Try:")
    hz = _hz_command()
    echo(f"  {hz} heinzel show {NAME} --home {home}")
    echo(f"  {hz} heinzel lessons {NAME} --home {home}")
    echo(f"  {hz} drafts --home {home}")
    echo(f"  HZ_NOW=2026-11-13T09:06:00Z {hz} heinzel list --home {home}   (Theo's nudge)")
    return week


def _hz_command() -> str:
    """How to run this `hz` from the shell the demo ran in: `hz` when that is the one on
    PATH, else its path (`make demo` runs `.venv/bin/hz`, which is not on PATH until the
    venv is activated)."""
    here = Path(sys.executable).parent / "hz"
    found = shutil.which("hz")
    if found is not None and Path(found).resolve() == here.resolve():
        return "hz"
    if here.exists():
        try:
            return os.path.relpath(here)
        except ValueError:
            return str(here)
    return "hz"
