"""The page's "Try it on the last turns", run outside the web request.

The button's POST checks what `hz heinzel try` would refuse at once (no such
Heinzelmännchen, a newer hz's spine, nothing to try: HZH080, HZH460, HZH501), writes the
trial's ticket ``HOME/web/trials/<ticket>.asked`` and starts a child process,
``python -m heinzel.web.actions HOME ID try`` (the ticket and the number of turns on its
standard input), then answers at once: a redirect to ``/h/<id>/try/<ticket>``, the trial's
own page. The child notes its process id (``<ticket>.pid``), runs `run_trial` as the
command does (its requests reserved, capped and recorded as any trial's), and writes the
answer, or the coded error that stopped it, to ``<ticket>.json`` (each file written whole,
0600). The page says "still trying" and reloads until that answer is there; a child that
ended without one (killed, crashed) is HZH504, and a ticket the web head never gave is
HZH503. A ticket holds drafts' text, like a turn's body: it stays in the home's private
``web`` folder.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from heinzel.errors import HeinzelError
from ledger.files import ensure_private_dir, read_bytes, write_atomic

__all__ = ["TICKET", "ask", "outcome", "run_child"]

TICKET = re.compile(r"^tr-[0-9A-HJKMNP-TV-Z]{26}$")
"""A trial's ticket: ``tr-`` and a ULID (`heinzel.ids.new_id`'s, minted by the page)."""
TURNS = 3
"""How many of the last turns the button tries unless the form says (at most 20)."""


def _dir(home: Path) -> Path:
    return home / "web" / "trials"


def _write(path: Path, data: Any) -> None:
    write_atomic(path, json.dumps(data, sort_keys=True).encode("utf-8"), sync=False)


def ask(app: Any, ref: str, turns: str | None) -> tuple[str, str, int]:
    """Check the trial as the command would at once and write its ticket: the
    Heinzelmännchen's id, the ticket and the number of turns (the caller starts the
    child)."""
    from heinzel.ids import ID_PREFIX, new_id
    from heinzel.turns.trial import proposed

    service = app.service
    row = service.resolve(ref, write=True)
    proposed(service, row, None)  # HZH501: nothing to try, said now, not by a child
    raw = str(turns or TURNS)
    count = int(raw) if raw.isdigit() and 0 < int(raw) <= 20 else TURNS
    ticket = "tr-" + new_id(service.clock)[len(ID_PREFIX) :]
    folder = ensure_private_dir(_dir(service.home.root))
    _write(folder / f"{ticket}.asked", {"heinzel": str(row["id"]), "turns": count})
    return str(row["id"]), ticket, count


def outcome(home: Path, heinzel_id: str, ticket: str) -> dict[str, Any] | None:
    """The trial's answer once its child wrote it (None while it runs); HZH503 for a
    ticket this home's web head never gave for ``heinzel_id``, HZH504 for a child that
    ended without an answer; the coded error that stopped the trial, raised."""
    folder = _dir(home)
    asked = folder / f"{ticket}.asked"
    if not TICKET.fullmatch(ticket) or not asked.is_file():
        raise HeinzelError(
            "HZH503",
            f"there is no trial {ticket!r} on this page",
            "press 'Try it on the last turns' on the amendment's card again",
        )
    if json.loads(read_bytes(asked)).get("heinzel") != heinzel_id:
        raise HeinzelError(
            "HZH503",
            f"trial {ticket} is not one of this Heinzelmännchen's",
            "open it from the page it was started on, or try again there",
        )
    answer = folder / f"{ticket}.json"
    if answer.is_file():
        found = json.loads(read_bytes(answer))
        if "error" in found:
            said = found["error"]
            hint = str(said.get("hint") or "")
            raise HeinzelError(str(said["code"]), str(said["message"]), hint)
        return dict(found["tried"])
    pid = folder / f"{ticket}.pid"
    if pid.is_file() and not _alive(int(read_bytes(pid) or b"0")):
        if answer.is_file():  # it wrote the answer as it ended
            return outcome(home, heinzel_id, ticket)
        raise HeinzelError(
            "HZH504",
            f"trial {ticket} ended before it finished (killed or crashed)",
            "what its requests spent is on the record (`hz heinzel show`); try again, and "
            "see HZ_HOME/web/turns.log for why it ended",
        )
    return None


def _alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def run_child(app: Any, heinzel_id: str, asked: str) -> int:
    """The child's part: run the trial the ticket names and write its answer (or the
    coded error that stopped it); 1 when it failed, as the command's exit status."""
    from heinzel.turns.host import TurnHost
    from heinzel.turns.trial import run_trial
    from ledger.errors import HzError

    said = json.loads(asked)
    ticket = str(said["ticket"])
    if not TICKET.fullmatch(ticket):
        return 2
    folder = _dir(app.service.home.root)
    _write(folder / f"{ticket}.pid", os.getpid())
    try:
        host = TurnHost(app.service)
        turns = int(said["turns"])
        tried = run_trial(app.service, host, heinzel_id, adapters=app.adapters, turns=turns)
    except HzError as error:
        answer = {"code": error.code, "message": error.message, "hint": error.hint}
        _write(folder / f"{ticket}.json", {"error": answer})
        raise
    _write(folder / f"{ticket}.json", {"tried": tried})
    return 0
