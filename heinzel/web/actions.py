"""The page's buttons for a Heinzelmännchen's life: pause, unpause, retire, unretire and stop
act in the request (they only write a line); wake, retry and resume run a turn, so the
request checks what the command would refuse at once (a paused one, no waiting turn, no
ended turn) and the turn runs in a child process, ``python -m heinzel.web.actions HOME ID
VERB``, as a chat's new turn does (`heinzel.web.background`): the answer comes at once, the
turn takes the spine's lock as any ``hz`` process does, and a retry's hint reaches the child
on its standard input, never in its arguments. The child's errors go to ``HOME/web/turns.log``.
A Wake or Retry form's ``request_id`` (minted as the page renders it) goes to the child as
``--request-id`` does: a resend of the form is claimed once (`resent_verb` reads where the
first went; a turn a killed child left open is resumed by the resend's child).

A proposed write answered from the page is the same: the request records the answer (the
inbox file and ``question.answered``) and the turn it resumes goes on in a child, ``answer``
with the turn's id on its standard input; if that child dies, the tick resumes the turn,
its wait's condition met. A draft approved on the page (its tag line deleted, as ``hz
approve`` does) has its learning turn run at once in a child, ``learn`` with the draft's key
on its standard input: the approval wake the next tick would run, so the draft leaves
"Waiting on you" without waiting for the tick, which still runs it if that child dies.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from heinzel.errors import HeinzelError

__all__ = ["IN_CHILD", "IN_REQUEST", "check_turn_verb", "resent_verb", "spawn_verb"]

IN_REQUEST = ("pause", "unpause", "retire", "unretire", "stop")
"""Verbs that only write a line: done inside the request."""
IN_CHILD = ("wake", "retry", "resume")
"""Verbs that run a turn: checked in the request, run in a child process."""


def check_turn_verb(app: Any, ref: str, verb: str) -> dict[str, Any]:
    """Refuse now what the child's command would refuse (HZH050 for a state that does not
    wake, HZH236 with no waiting turn, HZH238 with no ended turn); the row otherwise."""
    from heinzel.store.lifecycle import Lifecycle

    service = app.service
    row = service.resolve(ref, write=True)
    if verb in ("wake", "retry"):
        Lifecycle(str(row["state"])).fire("wake", row["name"])
    team = app.team() if verb == "wake" else None
    if team is not None:
        team.check_asked(ref)  # HZH304: a team one runs only where its lease is
    db = service.read_db
    if verb == "resume":
        waiting = db.execute(
            "SELECT turn FROM waits WHERE heinzel = ? ORDER BY turn DESC LIMIT 1", [row["id"]]
        ).fetchone()
        if waiting is None:
            raise HeinzelError(
                "HZH236",
                f"{row['name']} has no waiting turn",
                f"`hz heinzel wake {row['name']}` starts a new one",
            )
        asked = asked_by(service, row, str(waiting[0]))
        if asked is not None:  # the command's HZH360, said here, not by a child nobody hears
            raise HeinzelError(
                "HZH360",
                f"{row['name']}'s turn {waiting[0]} waits on your answer to: {asked['text']}",
                'answer it in "Waiting on you" on its page',
            )
    if verb == "retry":
        found = db.execute(
            "SELECT 1 FROM turns WHERE heinzel = ? AND state IN ('finished', 'skipped') LIMIT 1",
            [row["id"]],
        )
        if found.fetchone() is None:
            raise HeinzelError(
                "HZH238",
                f"{row['name']} has no ended turn to retry",
                f"`hz heinzel wake {row['name']}` starts a new one",
            )
    return dict(row)


def asked_by(service: Any, row: Any, turn: str) -> dict[str, Any] | None:
    """The open question ``turn`` of ``row`` waits on (a resume can't end that wait)."""
    from heinzel.session.questions import waiting_questions

    for asked in waiting_questions(service, str(row["id"]), str(row["name"])):
        if asked["turn"] == turn:
            return dict(asked)
    return None


def resumable(service: Any, row: Any) -> bool:
    """Whether Resume can work: a turn waits, and not on an answer (what `check_turn_verb`
    refuses otherwise); the page offers the button only then."""
    waiting = service.read_db.execute(
        "SELECT turn FROM waits WHERE heinzel = ? ORDER BY turn DESC LIMIT 1", [row["id"]]
    ).fetchone()
    return waiting is not None and asked_by(service, row, str(waiting[0])) is None


def resent_verb(
    app: Any, ref: str, verb: str, request_id: str
) -> tuple[dict[str, Any] | None, bool]:
    """A Wake or Retry form sent again with its request id (a second click, a re-POST):
    where its first send went, as `hz heinzel wake|retry --request-id` reads it (None: not
    delivered, a new one), and whether its turn is one a killed process left open (the
    child's command resumes it, once)."""
    if verb == "wake":
        team = app.team()
        if team is not None:
            team.check_asked(ref)  # HZH304, as the command checks first
        return app.turns.resent_wake(ref, request_id)  # type: ignore[no-any-return]
    return app.verbs().resent_retry(ref, request_id)  # type: ignore[no-any-return]


def spawn_verb(
    home: Path,
    heinzel_id: str,
    verb: str,
    hint: str,
    env: Mapping[str, str],
    *,
    request_id: str | None = None,
) -> subprocess.Popen[bytes]:
    """Start the child that runs ``verb``'s turn; ``hint`` goes to its standard input, the
    form's ``request_id`` (a wake's or a retry's) to its arguments."""
    from heinzel.web.background import spawn_child

    args = ["heinzel.web.actions", heinzel_id, verb, *([request_id] if request_id else [])]
    return spawn_child(home, args, env, stdin=hint.encode("utf-8"))


def learn(app: Any, heinzel_id: str, draft_key: str) -> None:
    """Run the learning turn of an approved draft now, as the tick would: the approval wake
    keyed by the draft's output and key (the key rule keeps it to one turn, whoever runs
    it first); a draft the index no longer has pending is left to the tick."""
    from heinzel.turns.host import default_adapters
    from machines import keys
    from machines.keys import Wake

    found = app.service.index.db.execute(
        "SELECT output FROM drafts WHERE heinzel = ? AND key = ? AND state = 'pending'",
        [heinzel_id, draft_key],
    ).fetchone()
    if found is None:
        return
    key = keys.approval(heinzel_id, found[0] or "output", draft_key)
    adapters = default_adapters(app.service.settings)
    app.turns.run_wakes(heinzel_id, [Wake("approval", key)], adapters=adapters)


def main(home: str, heinzel_id: str, verb: str, request_id: str | None = None) -> int:
    """Run ``verb`` as its command does (`hz heinzel wake|retry|resume`, a wake's or a
    retry's ``request_id`` as ``--request-id``), or go on with the turn a proposed write's
    answer resumes (``answer``; the turn's id on stdin)."""
    from heinzel.app import App
    from ledger.errors import HzError

    hint = sys.stdin.read()
    app = App.from_environment(home, os.environ)
    try:
        if verb == "wake":
            app.turns.wake(heinzel_id, request_id=request_id)
        elif verb == "retry":
            app.verbs().retry(heinzel_id, hint, request_id=request_id)
        elif verb == "resume":
            app.verbs().resume(heinzel_id)
        elif verb == "learn":  # a draft approved on the page (its key on stdin)
            learn(app, heinzel_id, hint)
        elif verb == "answered":  # a question's words are recorded; its turn (on stdin)
            from heinzel.turns.answer_text import follow_up  # resumes, its follow-up runs
            from heinzel.turns.host import TurnHost, default_adapters

            adapters = default_adapters(app.service.settings)
            follow_up(TurnHost(app.service), heinzel_id, hint, adapters)
        elif verb == "try":  # the page's trial: its ticket and turns (on stdin)
            from heinzel.web.trials import run_child

            return run_child(app, heinzel_id, hint)
        elif verb == "answer":  # the answer is recorded; its turn (on stdin) goes on here
            from heinzel.turns.host import TurnHost, default_adapters

            adapters = default_adapters(app.service.settings)
            TurnHost(app.service).resume_turn(heinzel_id, hint, "answer", adapters=adapters)
        else:
            print(f"unknown verb {verb!r}", file=sys.stderr)
            return 2
    except HzError as error:
        print(error.render(), file=sys.stderr)
        return 1
    finally:  # as a command ends: the index closed keeping its WAL (no fsync)
        app.service.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:5]))
