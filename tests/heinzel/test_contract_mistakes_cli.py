"""A contract written with a newcomer's mistakes, through `hz heinzel new --from`: every
error names its code and line and carries a hint, and the hint's fix compiles."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from tests import forkhz

ROOT = Path(__file__).resolve().parents[2]
BAD = ROOT / "fixtures" / "contracts" / "bad"
ERROR = re.compile(r"^(HZ[A-Z]\d{3}): (.+?):(\d+): (.+)$")

CONTRACT = """---
name: notes
kind: responsibility
hz:
  requires: [code-host:read, documents:write]
  inputs:
    prs: {{from: code-host.merged_pull_requests, args: {{repo: {repo}}}, window: 7d}}
  outputs:
    notes: {{asset: "file:notes.md", place: {place}}}
  publishes: [documents.place_draft]
  approvers: {approvers}
  timeout: {timeout}
---

### Goal

A note of the week's merged pull requests.

### Done when

- [ ] every merged pull request is listed
"""
GOOD = {"repo": "acme/checkout", "place": "top", "approvers": "[owner]", "timeout": "10m"}


def _new(tmp_path: Path, contract: Path) -> tuple[int, list[tuple[str, int, str, str]]]:
    """Exit status and the errors `hz heinzel new --from` printed: (code, line, message, hint)."""
    env = {**os.environ, "HZ_HOME": str(tmp_path / "home"), "HZ_NOW": "2026-10-30T14:05:00Z"}
    done = forkhz.hz(["heinzel", "new", "--from", str(contract)], env, tmp_path)
    lines = done.stderr.splitlines()
    errors = []
    for index, text in enumerate(lines):
        match = ERROR.match(text)
        if match:
            hint = lines[index + 1] if index + 1 < len(lines) else ""
            assert hint.startswith("hint: ") and hint.removeprefix("hint: ").strip(), text
            errors.append((match[1], int(match[3]), match[4], hint.removeprefix("hint: ")))
    return done.returncode, errors


def _write(tmp_path: Path, **values: str) -> Path:
    path = tmp_path / "notes.prose.md"
    path.write_text(CONTRACT.format(**{**GOOD, **values}), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("mistake", "code", "line", "fix"),
    [
        ({"place": "middle"}, "HZC073", 9, {"place": "top"}),
        ({"repo": ""}, "HZC006", 7, {"repo": "acme/checkout"}),
        ({"approvers": "owner"}, "HZC006", 11, {"approvers": "[owner]"}),
        ({"timeout": "0m"}, "HZC022", 12, {"timeout": "1m"}),
    ],
)
def test_one_mistake_is_one_error_with_a_line_and_a_hint_that_fixes_it(
    tmp_path: Path, mistake: dict[str, str], code: str, line: int, fix: dict[str, str]
) -> None:
    """The mistake is refused once (exit 1), on its line, with a hint; written as the hint
    says, the same file is created."""
    status, errors = _new(tmp_path, _write(tmp_path, **mistake))
    assert status == 1
    assert [(error[0], error[1]) for error in errors] == [(code, line)]
    assert _new(tmp_path, _write(tmp_path, **fix)) == (0, [])


def test_the_hints_say_what_to_write(tmp_path: Path) -> None:
    """The hint names the values that fix it: the places, a list, a duration above 0."""
    hints = {}
    for mistake in ({"place": "middle"}, {"approvers": "owner"}, {"timeout": "0m"}):
        _status, [(code, _line, message, hint)] = _new(tmp_path, _write(tmp_path, **mistake))
        hints[code] = (message, hint)
    assert "place: top" in hints["HZC073"][1]
    assert hints["HZC006"][0] == "hz.approvers: expected a list, not 'owner'"
    assert "[a, b]" in hints["HZC006"][1]
    assert "above 0" in hints["HZC022"][1]


def test_an_empty_argument_is_one_error_not_one_per_type(tmp_path: Path) -> None:
    """`args: {repo: }` is one HZC006 naming the argument, not pydantic's five union members."""
    _status, errors = _new(tmp_path, _write(tmp_path, repo=""))
    assert [(code, message) for code, _line, message, _hint in errors] == [
        (
            "HZC006",
            "hz.inputs.prs.args.repo: an argument is text, a number, true or false, "
            "or a list of them, not nothing (the value is empty)",
        )
    ]


@pytest.mark.parametrize("name", sorted(path.name for path in BAD.glob("*.prose.md")))
def test_every_malformed_fixture_prints_code_line_and_hint(tmp_path: Path, name: str) -> None:
    """Each file of fixtures/contracts/bad/ through `hz`: exit 1, every error a hint."""
    status, errors = _new(tmp_path, BAD / name)
    assert status == 1 and errors
    assert errors[0][0] == name.split("-", maxsplit=1)[0]
