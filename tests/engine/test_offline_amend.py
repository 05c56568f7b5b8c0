"""The offline model's amendment rule: which chat messages ask for an input, and the
contract text it writes for them (the rest of the text unchanged)."""

from __future__ import annotations

from pathlib import Path

import pytest

from heinzel.contract import check_amendment, compile_contract, widenings
from heinzel.engine.offline_amend import addition, amended
from ledger.errors import HzError

V1 = (
    Path(__file__).resolve().parents[2] / "fixtures" / "priya" / "weekly-report.prose.md"
).read_text(encoding="utf-8")


def test_messages_that_ask_for_a_source_and_those_that_do_not() -> None:
    """A channel by tag or by name, or a file, is an addition; anything else is none."""
    tagged = addition("also mention incidents from the #checkout-oncall channel")
    assert tagged is not None and tagged.name == "incidents" and tagged.requires == "chat:read"
    assert '"#checkout-oncall"' in tagged.line
    named = addition("Please also include the alerts from the on-call channel.")
    assert named is not None and named.name == "alerts" and '"#on-call"' in named.line
    filed = addition("also add the todo list from todo.txt")
    assert filed is not None and filed.name == "todo" and filed.requires == "files:read"
    assert filed.line == "{from: files.read, args: {path: todo.txt}}"
    for message in ("keep it under ten lines", "also mention incidents", "mention x from y z"):
        assert addition(message) is None


def test_the_amended_text_compiles_widens_and_is_accepted_only_from_the_user() -> None:
    """Priya's message turns v1 into a text with the new input, `chat:read` granted and a
    Requires bullet quoting her; everything else stays; it widens (HZC050 from the
    Heinzelmännchen on its own, accepted as the user's)."""
    add = addition("also mention incidents from the #checkout-oncall channel")
    assert add is not None
    text = amended(V1, add)
    assert text is not None
    old, new = compile_contract(V1, source="v1"), compile_contract(text, source="v2")
    assert "incidents" in new.hz.inputs and "chat:read" in new.hz.requires
    assert set(widenings(old, new))
    check_amendment(old, new, proposed_by="user", source="v2")
    with pytest.raises(HzError) as refused:
        check_amendment(old, new, proposed_by="heinzel", source="v2")
    assert refused.value.code == "HZC050"
    removed = [line for line in V1.splitlines() if line not in text.splitlines()]
    assert len(removed) == 1 and removed[0].lstrip().startswith("requires:")
    assert amended(text, add) is None  # the name is taken: nothing to add
    assert amended("no frontmatter here", add) is None
