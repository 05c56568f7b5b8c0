"""Chat turns: writes proposed by the model pause the run until the user answers.

In a turn of cause asked the host may hand write tools; they run only with the
user's approval (ADR 0050 statement 12). The run ends with pydantic-ai's
``DeferredToolRequests``; the spine gets ``question.asked`` with each proposal's id
and arguments' hash only; the Conversation with its deferred requests is in the
body, so a crash between proposal and answer loses nothing; the answer resumes
the same Conversation through ``deferred_tool_results``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

from pydantic_ai import DeferredToolRequests, DeferredToolResults, ToolApproved, ToolDenied
from pydantic_ai.conversation import Conversation

from heinzel.engine.errors import BAD_ANSWERS, EngineError
from ledger.records import frozen_record

__all__ = ["Answer", "Proposal", "deferred_results", "proposals"]


@frozen_record
class Answer:
    """The user's answer to one proposed write: approved (with the host's result) or denied."""

    approved: bool
    result: Any = None
    message: str = "the user declined"


@frozen_record
class Proposal:
    """A write the model proposed in a chat turn: its id, tool and arguments' hash only."""

    call_id: str
    tool: str
    hash: str


def deferred_results(
    conversation: Conversation, answers: Mapping[str, Answer]
) -> DeferredToolResults:
    """The results for the pending proposals from the answers (HZE007 when they differ)."""
    requests = conversation.deferred_tool_requests
    pending = {call.tool_call_id for call in requests.approvals} if requests else set()
    if not pending or set(answers) != pending:
        raise EngineError(
            BAD_ANSWERS,
            f"answers {sorted(answers)} don't match the proposals {sorted(pending)}",
            "answer every pending proposal, and only those",
        )
    approvals: dict[str, bool | ToolApproved | ToolDenied] = {}
    calls: dict[str, Any] = {}
    for call_id, answer in answers.items():
        if not answer.approved:
            approvals[call_id] = ToolDenied(answer.message)
        elif answer.result is not None:
            calls[call_id] = answer.result
        else:
            approvals[call_id] = True
    return DeferredToolResults(approvals=approvals, calls=calls)


def proposals(requests: DeferredToolRequests) -> tuple[Proposal, ...]:
    """Each proposed write as its id, tool and the SHA-256 of its arguments."""
    return tuple(
        Proposal(
            c.tool_call_id,
            c.tool_name,
            "sha256:" + hashlib.sha256(c.args_as_json_str().encode()).hexdigest(),
        )
        for c in requests.approvals
    )
