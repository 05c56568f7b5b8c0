"""Malformed contracts and OpenProse files of other kinds: a code and a line, never a traceback."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from heinzel.contract import compile_contract, load_contract
from heinzel.errors import ContractError

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "contracts"
BAD = FIXTURES / "bad"
EXPECTED: dict[str, dict[str, object]] = tomllib.loads(
    (BAD / "expected.toml").read_text(encoding="utf-8")
)
GOOD_TEXTS = [p.read_text(encoding="utf-8") for p in sorted((FIXTURES / "good").glob("*.md"))]


class TestBadFixtures:
    def test_there_are_at_least_thirty_and_each_is_expected(self) -> None:
        """Every bad file has an expected code and line, and there are at least 30."""
        files = sorted(p.name for p in BAD.glob("*.prose.md"))
        assert len(files) >= 30
        assert files == sorted(EXPECTED)

    @pytest.mark.parametrize("name", sorted(EXPECTED))
    def test_each_yields_its_code_and_line(self, name: str) -> None:
        """The compiler answers the file's code (its name's prefix) on the expected line."""
        expected = EXPECTED[name]
        with pytest.raises(ContractError) as refused:
            load_contract(BAD / name)
        error = refused.value
        assert (error.code, error.line) == (expected["code"], expected["line"])
        assert name.startswith(error.code + "-")
        assert error.hint
        assert error.file == str(BAD / name)


class TestOpenProse:
    @pytest.mark.parametrize(
        ("name", "kind"),
        [
            ("summarize.prose.md", "function"),
            ("inbox-gateway.prose.md", "gateway"),
            ("summarize-test.prose.md", "test"),
        ],
    )
    def test_other_kinds_are_refused_with_a_code(self, name: str, kind: str) -> None:
        """A function, gateway or test file is read and refused with HZC010 on its kind line."""
        with pytest.raises(ContractError) as refused:
            load_contract(FIXTURES / "openprose" / name)
        assert (refused.value.code, refused.value.line) == ("HZC010", 3)
        assert kind in refused.value.message

    def test_a_responsibility_without_hz_asks_for_the_hz_section(self) -> None:
        """A plain OpenProse responsibility is refused with HZC005 and told to add hz:."""
        with pytest.raises(ContractError) as refused:
            load_contract(FIXTURES / "openprose" / "plain-responsibility.prose.md")
        assert refused.value.code == "HZC005"
        assert "hz:" in refused.value.hint


def _outcome(text: str) -> str:
    try:
        compile_contract(text)
    except ContractError as error:
        assert error.code.startswith("HZC")
        assert error.line is None or error.line >= 1
        return error.code
    return "ok"


@st.composite
def mutated(draw: st.DrawFn) -> str:
    """A good contract with a few random edits: lines dropped, doubled, swapped, spliced."""
    lines = draw(st.sampled_from(GOOD_TEXTS)).splitlines()
    for _ in range(draw(st.integers(1, 4))):
        if not lines:
            break
        at = draw(st.integers(0, len(lines) - 1))
        action = draw(st.sampled_from(["drop", "double", "swap", "splice", "cut"]))
        if action == "drop":
            del lines[at]
        elif action == "double":
            lines.insert(at, lines[at])
        elif action == "swap":
            other = draw(st.integers(0, len(lines) - 1))
            lines[at], lines[other] = lines[other], lines[at]
        elif action == "splice":
            column = draw(st.integers(0, len(lines[at])))
            noise = draw(st.text(st.characters(codec="utf-8"), max_size=8))
            lines[at] = lines[at][:column] + noise + lines[at][column:]
        else:
            lines[at] = lines[at][: draw(st.integers(0, len(lines[at])))]
    return "\n".join(lines)


FUZZ = settings(
    derandomize=True,
    deadline=None,
    max_examples=300,
    suppress_health_check=[HealthCheck.too_slow],
)


class TestFuzz:
    @FUZZ
    @given(st.text())
    def test_arbitrary_text_gives_a_contract_or_a_contract_error(self, text: str) -> None:
        """Any text at all: a ContractError with a code, never another exception."""
        _outcome(text)

    @FUZZ
    @given(st.text(st.characters(codec="utf-8")).map(lambda t: "---\n" + t + "\n---\n"))
    def test_arbitrary_frontmatter_gives_a_contract_or_a_contract_error(self, text: str) -> None:
        """Random YAML between fences: a ContractError with a code, never another exception."""
        _outcome(text)

    @FUZZ
    @given(mutated())
    def test_mutated_good_contracts_give_a_contract_or_a_contract_error(self, text: str) -> None:
        """Good contracts edited at random still never raise anything but a ContractError."""
        _outcome(text)


_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-5, 10**6),
    st.floats(allow_nan=False),
    st.sampled_from(["7d", "0 15 * * FRI", "code-host:read", "tracker.issues_updated", "me"]),
    st.text(max_size=12),
)
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            st.sampled_from(["from", "window", "asset", "max_usd", "x"]), inner, max_size=3
        )
    ),
    max_leaves=8,
)
_HZ_KEYS = st.sampled_from(
    [
        *("namespace", "schedule", "timezone", "render_on_schedule", "requires", "inputs"),
        *("outputs", "publishes", "approvers", "agent", "timeout", "uses", "unknown"),
    ]
)


class TestStructuredFuzz:
    @FUZZ
    @given(st.dictionaries(_HZ_KEYS, _VALUES, max_size=6))
    def test_random_hz_sections_give_a_contract_or_a_contract_error(
        self, hz: dict[str, object]
    ) -> None:
        """Well-formed YAML with values of every shape under hz: only ContractError."""
        front = yaml.safe_dump({"name": "fuzz", "kind": "responsibility", "hz": hz})
        _outcome(f"---\n{front}---\n\n### Goal\n\nx\n\n### Done when\n\n- [ ] y\n")
