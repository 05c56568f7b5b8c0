"""Replay safety of tool calls: each call's result is journalled, an unsafe call's start too.

A call that is not replay-safe records ``tool.called{call_id, tool, args,
replay_safe}`` before it runs; every call records ``tool.result{call_id, hash,
status}`` after (a replay-safe call's line also names its ``tool`` and
``replay_safe: true``, and is its only line: one durable line per step). The
arguments and result themselves go to the turn body; the spine holds their hashes.
On a resume, a call with a result is answered from the body (a replay-safe one whose
result the body lost runs again); a call interrupted by a crash is run again only
when both the record and the current declaration say ``replay_safe``; otherwise it
gets an `INTERRUPTED` result (``status: interrupted``), never a silent second run.
Arguments or a result that are not JSON are refused (HZM071, `machines.core.values`): the
turn fails with the code.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Final

from ledger.records import frozen_record
from machines.core.fold import ToolRecord
from machines.core.values import plain_json
from machines.errors import MachineError
from machines.stores.journal import Body, Journal, content_hash


@frozen_record
class ToolDecl:
    """A tool as the machine sees it: its name and whether a rerun is harmless."""

    name: str
    replay_safe: bool


INTERRUPTED: Final = {
    "status": "interrupted",
    "message": "this call was interrupted by a crash and is not replay-safe, so it was not "
    "run again; check its effect before calling it again",
}
"""The result a non-replay-safe call interrupted by a crash gets."""


def _unexpected(call_id: str, recorded: str, called: str) -> MachineError:
    return MachineError(
        "HZM011",
        f"tool call {call_id} was recorded as {recorded!r} but the code now calls {called!r}",
        "the turn was written by other code: resume it with the version that started it, "
        "or fork a new turn (hz heinzel retry)",
    )


class ToolFailed(MachineError):
    """HZM022: a call that is not replay-safe failed before; replaying it fails again."""

    def __init__(self, call_id: str, error: str | None) -> None:
        super().__init__(
            "HZM022",
            f"tool call {call_id} failed earlier in this turn ({error}) and is not replay-safe",
            "the failure is replayed, not the call; fork a new turn (hz heinzel retry)",
        )


def _result(journal: Journal, turn: str, call_id: str, **data: Any) -> None:
    journal.append("tool.result", {"call_id": call_id, **data}, turn=turn)


async def run_tool(
    decl: ToolDecl,
    call_id: str,
    args: Any,
    call: Callable[[], Awaitable[Any]],
    *,
    journal: Journal,
    body: Body,
    turn: str,
    record: ToolRecord | None,
) -> Any:
    """Run one tool call under the replay rules and return its result."""
    safe = decl.replay_safe
    named: dict[str, Any] = {}
    if record is None and safe:
        named = {"tool": decl.name, "replay_safe": True}  # no line before a harmless rerun
    elif record is None:
        args_hash = content_hash(plain_json(args, f"the arguments of tool call {call_id}"))
        body.put(turn, args_hash, args)
        journal.append(
            "tool.called",
            {"call_id": call_id, "tool": decl.name, "args": args_hash, "replay_safe": safe},
            turn=turn,
        )
    else:
        if record.tool != decl.name:
            raise _unexpected(call_id, record.tool, decl.name)
        safe = safe and record.replay_safe
        if record.status == "ok" and record.hash is not None:
            try:
                return body.get(turn, record.hash)
            except KeyError:
                if not safe:
                    return INTERRUPTED
        elif record.status == "interrupted":
            return INTERRUPTED
        elif record.status == "error" and not safe:
            raise ToolFailed(call_id, record.error)
        elif record.status is None and not safe:
            _result(journal, turn, call_id, hash=None, status="interrupted")
            return INTERRUPTED
    recorded = record.status if record is not None else None
    try:
        result = await call()
    except Exception as error:
        if recorded != "error":
            code = str(getattr(error, "code", "")) or type(error).__name__
            _result(journal, turn, call_id, hash=None, status="error", error=code, **named)
        raise
    digest = content_hash(plain_json(result, f"the result of tool call {call_id}"))
    body.put(turn, digest, result)
    if recorded != "ok":
        _result(journal, turn, call_id, hash=digest, status="ok", **named)
    return result
