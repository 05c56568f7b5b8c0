"""The contract compiler on good contracts: the typed result, the body, the fingerprint."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from heinzel.capabilities import DEFAULT_REGISTRY, Capability, Method
from heinzel.contract import CompiledContract, compile_contract, load_contract
from heinzel.errors import ContractError

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "contracts"
GOOD = FIXTURES / "good"
WEEKLY = (GOOD / "weekly-report.prose.md").read_text(encoding="utf-8")


class TestWeeklyReport:
    def test_frontmatter_is_typed(self) -> None:
        """Priya's weekly report compiles to the values of ADR 0049's worked example."""
        contract = compile_contract(WEEKLY)
        hz = contract.hz
        assert contract.name == "weekly-report"
        assert hz.schedule == "0 15 * * FRI"
        assert hz.timezone == "Europe/Berlin"
        assert hz.requires == ["calendar:read", "code-host:read", "documents:write", "tracker:read"]
        assert sorted(hz.inputs) == ["board", "calendar", "merged_prs"]
        assert hz.inputs["merged_prs"].from_ == "code-host.merged_pull_requests"
        assert hz.inputs["merged_prs"].args == {"repo": "acme/checkout"}
        assert hz.inputs["merged_prs"].window == timedelta(days=7)
        assert hz.inputs["merged_prs"].recheck == timedelta(hours=1)
        assert hz.outputs["section"].asset == "doc:checkout/weekly-report"
        assert hz.publishes == ["documents.place_draft"]
        assert hz.approvers == ["owner"]
        assert hz.agent.max_usd == 0.5
        assert hz.timeout == timedelta(minutes=10)
        assert hz.uses == ["house-style"]

    def test_body_sections_are_parsed(self) -> None:
        """Goal, items, facets and the Done when checklist come out of the Markdown."""
        body = compile_contract(WEEKLY).body
        assert body.goal.text.startswith("Every Friday afternoon")
        assert body.requires is not None
        assert [i.name for i in body.requires.items] == ["merged_prs", "board", "calendar"]
        assert [f.title for f in body.facets] == ["summary", "risks"]
        assert body.done_when == [
            "every merged pull request of the week is mentioned or deliberately left out",
            "risks name the epic, not ticket numbers",
            "the section fits on one screen",
        ]
        assert body.preamble == "# Weekly report: Checkout"

    def test_compiled_form_round_trips(self) -> None:
        """The stored JSON reads back into an equal contract."""
        contract = compile_contract(WEEKLY)
        assert CompiledContract.from_json(contract.to_json()) == contract

    def test_defaults_are_filled_in(self) -> None:
        """A minimal contract gets namespace me, UTC, always, owner, a 10m timeout."""
        hz = load_contract(GOOD / "standup-notes.prose.md").hz
        assert (hz.namespace, hz.render_on_schedule, hz.approvers) == ("me", "always", ["owner"])
        assert hz.timeout == timedelta(minutes=10)
        assert hz.agent.max_usd is None


class TestGoodFixtures:
    @pytest.mark.parametrize("path", sorted(GOOD.glob("*.prose.md")), ids=lambda p: p.name)
    def test_every_good_fixture_compiles(self, path: Path) -> None:
        """Each file under fixtures/contracts/good compiles with a sha256 fingerprint."""
        contract = load_contract(path)
        assert contract.fingerprint.startswith("sha256:")
        assert len(contract.fingerprint) == len("sha256:") + 64

    def test_team_contract_keeps_its_facet_and_approvers(self) -> None:
        """The team fixture reads git with a facet and has two approvers, sorted."""
        hz = load_contract(GOOD / "team-release-notes.prose.md").hz
        assert hz.namespace == "team"
        assert hz.inputs["commits"].facet == "subjects"
        assert hz.approvers == ["owner", "release-captain"]


class TestFingerprint:
    def test_whitespace_and_layout_do_not_change_it(self) -> None:
        """Block YAML instead of flow, blank lines, trailing spaces, re-wrapped prose."""
        relaid = WEEKLY.replace(
            "  agent: {max_usd: 0.5, model_class: standard}",
            "  agent:\n    model_class: standard\n    max_usd: 0.50",
        ).replace(
            "  requires: [code-host:read, tracker:read, calendar:read, documents:write]",
            "  requires:\n    - documents:write\n    - tracker:read\n"
            "    - calendar:read\n    - code-host:read",
        )
        relaid = relaid.replace("\n\n### Goal\n\n", "\n\n\n### Goal\n\n   ")
        relaid = relaid.replace(
            "drafted in the report document,", "drafted in the report\n  document, "
        )
        relaid = relaid.replace("- [ ] risks name", "- [ ]   risks   name") + "\n\n"
        assert compile_contract(relaid).fingerprint == compile_contract(WEEKLY).fingerprint

    def test_a_written_out_default_does_not_change_it(self) -> None:
        """namespace: me written explicitly means what leaving it out means."""
        plain = (GOOD / "standup-notes.prose.md").read_text()
        explicit = plain.replace("hz:\n", "hz:\n  namespace: me\n  approvers: [owner]\n")
        assert compile_contract(explicit).fingerprint == compile_contract(plain).fingerprint

    def test_a_changed_word_or_value_changes_it(self) -> None:
        """The body and the frontmatter are both part of the intent."""
        base = compile_contract(WEEKLY).fingerprint
        worded = WEEKLY.replace("fits on one screen", "fits on half a screen")
        valued = WEEKLY.replace("max_usd: 0.5", "max_usd: 0.4")
        assert compile_contract(worded).fingerprint != base
        assert compile_contract(valued).fingerprint != base

    def test_equivalent_durations_agree(self) -> None:
        """168h and 7d are the same window, so the same fingerprint."""
        hours = WEEKLY.replace("window: 7d, recheck: 1h}", "window: 168h, recheck: 60m}", 1)
        assert compile_contract(hours).fingerprint == compile_contract(WEEKLY).fingerprint


class TestRegistry:
    def test_an_extended_registry_admits_a_new_capability(self) -> None:
        """A capability added as data is accepted in requires and inputs."""
        wiki = Capability("wiki", {"pages": Method("pages", "read", True, frozenset({"space"}))})
        text = (
            (GOOD / "standup-notes.prose.md")
            .read_text()
            .replace("[tracker:read]", "[tracker:read, wiki:read]")
            .replace("    board:", "    pages: {from: wiki.pages, window: 7d}\n    board:")
        )
        with pytest.raises(ContractError) as refused:
            compile_contract(text)
        assert refused.value.code == "HZC030"
        contract = compile_contract(text, registry=DEFAULT_REGISTRY.extended(wiki))
        assert contract.hz.inputs["pages"].from_ == "wiki.pages"


class TestErrorRendering:
    def test_render_names_file_and_line(self) -> None:
        """A compiler error prints CODE: file:line: message and a hint line."""
        bad = WEEKLY.replace("Europe/Berlin", "Mars/Olympus")
        with pytest.raises(ContractError) as refused:
            compile_contract(bad, source="weekly-report.prose.md")
        assert refused.value.render() == (
            "HZC021: weekly-report.prose.md:7: hz.timezone: not a time zone: 'Mars/Olympus'\n"
            "hint: use an IANA time zone name such as Europe/Berlin or UTC"
        )

    def test_unreadable_and_non_utf8_files_are_coded(self, tmp_path: Path) -> None:
        """A missing file is HZC070, bytes that are not UTF-8 HZC071 with their line."""
        with pytest.raises(ContractError) as missing:
            load_contract(tmp_path / "absent.prose.md")
        latin = tmp_path / "latin.prose.md"
        latin.write_bytes(b"---\nname: caf\xe9\n---\n")
        with pytest.raises(ContractError) as undecodable:
            load_contract(latin)
        assert (missing.value.code, undecodable.value.code) == ("HZC070", "HZC071")
        assert undecodable.value.line == 2

    def test_oversized_file_is_refused(self, tmp_path: Path) -> None:
        """A file over a megabyte is HZC072, not read into the compiler."""
        big = tmp_path / "big.prose.md"
        big.write_text(WEEKLY + "x" * (1 << 20))
        with pytest.raises(ContractError) as refused:
            load_contract(big)
        assert refused.value.code == "HZC072"


MINIMAL = (GOOD / "standup-notes.prose.md").read_text(encoding="utf-8")


class TestBody:
    def test_crlf_files_compile_alike(self) -> None:
        """Windows line endings give the same contract, fingerprint and error lines."""
        crlf = WEEKLY.replace("\n", "\r\n")
        assert compile_contract(crlf).fingerprint == compile_contract(WEEKLY).fingerprint
        with pytest.raises(ContractError) as refused:
            compile_contract(crlf.replace("Europe/Berlin", "Mars/Olympus"))
        assert refused.value.line == 7

    def test_headings_inside_code_fences_are_text(self) -> None:
        """A ### line in a fenced block does not open a section."""
        text = MINIMAL.replace("### Done when", "```markdown\n### Done when\n```\n\n### Done when")
        body = compile_contract(text).body
        assert body.goal.text.endswith("```")
        assert body.done_when == ["every issue that changed state since yesterday is listed"]

    def test_other_sections_and_stray_facets_are_kept(self) -> None:
        """An unknown section and a #### outside Maintains stay as text, in order."""
        text = MINIMAL.replace(
            "### Done when",
            "### Notes\n\nAsk Theo.\n\n#### Later\n\nMaybe.\n\n### Done when",
        )
        [notes] = compile_contract(text).body.other
        assert notes.title == "Notes"
        assert notes.text == "Ask Theo.\n#### Later\nMaybe."

    def test_checklist_continuation_lines_join_their_item(self) -> None:
        """An indented line after a checklist item continues it."""
        text = MINIMAL.replace("is listed", "is listed,\n  with its new state")
        done = compile_contract(text).body.done_when
        assert done == [
            "every issue that changed state since yesterday is listed, with its new state"
        ]
