"""The handoff's pure parts: its working directory, its share of the turn, and what it keeps.

A turn's ``handoff(task, files, budget_share)`` tool runs the bound runner once
in a private directory holding ``files`` (never credentials), with a share of
the turn's remaining cap and timeout; the engine records ``step.handoff`` on
the spine (`HandoffRecord`: runner, model, status, tool-call counts, cost,
duration, the hashes of task and report) and keeps task, report and transcript
in the turn body (`HandoffBody`). A handoff is not replay-safe: one a crash
interrupted is recorded with status ``interrupted`` and never run again.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Literal

from pydantic import BaseModel, ConfigDict

from heinzel.runners.base import AgentResult, AgentRunner, Usage
from heinzel.runners.errors import RunnerError
from heinzel.runners.files import private_dir, write_private_file
from ledger.event import sha256_hex

__all__ = [
    "INTERRUPTED_RESULT",
    "HandoffBody",
    "HandoffOutcome",
    "HandoffRecord",
    "HandoffShare",
    "check_files",
    "handoff_instruction",
    "handoff_share",
    "handoff_workdir",
    "interrupted_record",
    "run_handoff",
    "tool_result_text",
]

HandoffStatus = Literal["completed", "timeout", "budget", "failed", "interrupted"]

INTERRUPTED_RESULT = (
    "The handoff was interrupted by a crash and was not run again; "
    "its result is unknown. Decide without it or say what is missing."
)
"""The tool result the model gets for a handoff a crash interrupted."""


def handoff_instruction(runner: str | None) -> str:
    """The sentence the turn's instructions carry about handoffs, with or without a runner."""
    if runner is None:
        return (
            "No coding agent is bound, so there is no handoff tool: do the work with your own "
            "tools, or say in your outcome what would need one."
        )
    return (
        f"handoff(task, files, budget_share) runs the coding agent {runner!r} once, read-only, "
        "in a private directory holding only the files you pass (never credentials), with that "
        "share of this turn's remaining cap and time; it returns the agent's report. "
        "A handoff is never run twice: after a crash you get an interrupted result instead."
    )


_SECRET_NAMES = re.compile(
    r"^(\.env(\..*)?|\.netrc|_netrc|\.npmrc|\.pypirc|\.git-credentials|\.htpasswd|"
    r"credentials(\.json|\.toml|\.ya?ml)?|id_(rsa|dsa|ecdsa|ed25519)|"
    r".*\.(pem|key|p12|pfx|jks|keystore|kdbx))$",
    re.IGNORECASE,
)
_SECRET_DIRS = frozenset({".ssh", ".aws", ".gnupg", ".kube", ".docker"})
_SECRET_CONTENT = re.compile(
    r"-----BEGIN [A-Z ]*PRIVATE KEY-----"
    r"|\bAKIA[0-9A-Z]{16}\b"
    r"|\bsk-ant-[A-Za-z0-9_-]{16,}"
    r"|\bsk-(proj-)?[A-Za-z0-9]{32,}"
    r"|\bgh[pousr]_[A-Za-z0-9]{36,}"
    r"|\bgithub_pat_[A-Za-z0-9_]{22,}"
    r"|\bxox[abprs]-[A-Za-z0-9-]{10,}"
    r"|\bglpat-[A-Za-z0-9_-]{20,}"
    r"|\bHZ_CREDENTIAL_\w+\s*="
)


def _relative(name: str) -> PurePosixPath:
    path = PurePosixPath(name)
    parts = path.parts
    if (
        not name
        or "\x00" in name
        or "\\" in name
        or path.is_absolute()
        or not parts
        or any(part in ("", ".", "..") for part in parts)
        or name != str(path)
    ):
        raise RunnerError(
            "HZR040",
            f"handoff file name {name!r} is not a plain relative path",
            "name files like notes/release.md: relative, no '..', no leading '/'",
        )
    return path


def check_files(files: Mapping[str, str]) -> list[PurePosixPath]:
    """The relative paths of ``files``; HZR040 for a bad name, HZR041 for a credential."""
    paths = []
    for name, content in files.items():
        path = _relative(name)
        looks_secret = (
            _SECRET_NAMES.match(path.name) is not None
            or any(part.lower() in _SECRET_DIRS for part in path.parts[:-1])
            or _SECRET_CONTENT.search(content) is not None
        )
        if looks_secret:
            raise RunnerError(
                "HZR041",
                f"handoff file {name!r} looks like a credential; it is never given to an agent",
                "hand over the document itself, without keys, tokens or credential files",
            )
        paths.append(path)
    return paths


@contextmanager
def handoff_workdir(files: Mapping[str, str], parent: Path | None = None) -> Iterator[Path]:
    """A private directory (0700, files 0600) holding ``files``, removed when the block ends."""
    paths = check_files(files)
    with private_dir("hz-handoff-", parent) as root:
        for path, content in zip(paths, files.values(), strict=True):
            target = root.joinpath(*path.parts)
            for directory in reversed(target.parents):
                if directory != root and root in directory.parents and not directory.exists():
                    os.mkdir(directory, 0o700)
            write_private_file(target, content)
        yield root


@dataclass(frozen=True)
class HandoffShare:
    """What one handoff may spend: USD (None: the turn has no cap) and seconds."""

    budget_usd: float | None
    timeout_s: float


def handoff_share(
    budget_share: float, *, remaining_usd: float | None, remaining_s: float
) -> HandoffShare:
    """``budget_share`` (0 < share <= 1) of the turn's remaining cap and time (HZR042)."""
    if not (math.isfinite(budget_share) and 0 < budget_share <= 1):
        raise RunnerError(
            "HZR042",
            f"budget_share {budget_share!r} must be greater than 0 and at most 1",
            "pass the fraction of the turn's remaining cap and time the handoff may use",
        )
    if remaining_s <= 0 or (remaining_usd is not None and remaining_usd <= 0):
        raise RunnerError(
            "HZR042",
            "the turn has no time or budget left for a handoff",
            "finish the turn with what you have, or raise the contract's cap or timeout",
        )
    return HandoffShare(
        budget_usd=None if remaining_usd is None else remaining_usd * budget_share,
        timeout_s=remaining_s * budget_share,
    )


class HandoffRecord(BaseModel):
    """The ``step.handoff`` payload on the spine: no text, only what a ledger may hold."""

    model_config = ConfigDict(frozen=True)

    runner: str
    model: str | None
    status: HandoffStatus
    tool_calls: dict[str, int]
    turns: int
    cost_usd: float | None
    duration_s: float
    task_sha256: str
    report_sha256: str | None
    """None when interrupted: there is no report."""


class HandoffBody(BaseModel):
    """What the turn body keeps of a handoff; it expires with the body."""

    model_config = ConfigDict(frozen=True)

    task: str
    files: tuple[str, ...]
    report: str
    reason: str | None
    usage: Usage
    unenforced_limits: tuple[str, ...]
    transcript: str


@dataclass(frozen=True)
class HandoffOutcome:
    """One finished handoff: the spine record, the body entry and the model's tool result."""

    record: HandoffRecord
    body: HandoffBody
    tool_result: str


def tool_result_text(result: AgentResult) -> str:
    """What the model reads: the report, or why there is none."""
    if result.status == "completed":
        return result.report
    lines = [
        f"The handoff to {result.runner} ended {result.status}: {result.reason or 'no reason'}."
    ]
    if result.unenforced_limits:
        lines.append("Not enforced: " + "; ".join(result.unenforced_limits) + ".")
    return "\n".join(lines)


def _record(task: str, result: AgentResult) -> HandoffRecord:
    return HandoffRecord(
        runner=result.runner,
        model=result.model,
        status=result.status,
        tool_calls=dict(result.tool_calls),
        turns=result.turns,
        cost_usd=result.cost_usd,
        duration_s=result.duration_s,
        task_sha256=sha256_hex(task.encode("utf-8")),
        report_sha256=sha256_hex(result.report.encode("utf-8")),
    )


def interrupted_record(runner: str, task: str) -> HandoffRecord:
    """The ``step.handoff`` for a handoff a crash interrupted: recorded, never rerun."""
    return HandoffRecord(
        runner=runner,
        model=None,
        status="interrupted",
        tool_calls={},
        turns=0,
        cost_usd=None,
        duration_s=0.0,
        task_sha256=sha256_hex(task.encode("utf-8")),
        report_sha256=None,
    )


def run_handoff(
    runner: AgentRunner,
    task: str,
    files: Mapping[str, str],
    *,
    contract: str,
    share: HandoffShare,
    tools: Sequence[str] = (),
    parent: Path | None = None,
) -> HandoffOutcome:
    """Run ``runner`` once on ``task`` in a private directory holding ``files``."""
    with handoff_workdir(files, parent) as workdir:
        result = runner.run(
            task,
            contract=contract,
            tools=tools,
            timeout=share.timeout_s,
            budget=share.budget_usd,
            working_dir=workdir,
        )
    body = HandoffBody(
        task=task,
        files=tuple(files),
        report=result.report,
        reason=result.reason,
        usage=result.usage,
        unenforced_limits=result.unenforced_limits,
        transcript=result.transcript,
    )
    return HandoffOutcome(
        record=_record(task, result), body=body, tool_result=tool_result_text(result)
    )
