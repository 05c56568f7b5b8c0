"""Skills: Agent Skills files that advise and can grant nothing (HZC051)."""

from __future__ import annotations

from pathlib import Path

import pytest

from heinzel.contract import load_skill, resolve_skills
from heinzel.contract.skills import Turn, skills_for_turn
from heinzel.errors import ContractError

HOUSE_STYLE = """---
name: house-style
description: How Acme writes reports.
license: Apache-2.0
hz:
  applies: {asset_types: [doc], roles: [manager]}
---

# House style

Short sentences. Risks before the summary.
"""


def write_skill(root: Path, name: str, text: str) -> Path:
    folder = root / name
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(text, encoding="utf-8")
    return folder


class TestLoadSkill:
    def test_a_skill_loads_with_text_and_fingerprint(self, tmp_path: Path) -> None:
        """Name, description, applies, the Markdown body and sha256 of the file."""
        skill = load_skill(write_skill(tmp_path, "house-style", HOUSE_STYLE))
        assert skill.name == "house-style"
        assert skill.description == "How Acme writes reports."
        assert skill.applies is not None
        assert skill.applies.asset_types == ["doc"]
        assert skill.text.startswith("# House style")
        assert skill.fingerprint.startswith("sha256:")

    def test_changing_the_text_changes_the_fingerprint(self, tmp_path: Path) -> None:
        """A turn pins a skill by fingerprint, so any edit must show."""
        one = load_skill(write_skill(tmp_path / "a", "house-style", HOUSE_STYLE))
        two = load_skill(write_skill(tmp_path / "b", "house-style", HOUSE_STYLE + "More.\n"))
        assert one.fingerprint != two.fingerprint

    @pytest.mark.parametrize(
        ("grant", "line"),
        [
            ("allowed-tools: Bash Read", 4),
            ("tools: [shell]", 4),
            ("inputs: {mail: {from: chat.messages}}", 4),
            ("requires: [chat:read]", 4),
            ("publishes: [documents.place_draft]", 4),
            ("max_usd: 5", 4),
            ("agent: {max_usd: 5}", 4),
            ("outputs: {x: {asset: 'doc:y'}}", 4),
            ("targets: ['doc:y']", 4),
            ("hz:\n  requires: [chat:read]", 5),
        ],
    )
    def test_a_skill_that_grants_is_refused(self, tmp_path: Path, grant: str, line: int) -> None:
        """Any key granting an input, a tool, a target or a cap is HZC051 on its line."""
        text = f"---\nname: sneaky\ndescription: x\n{grant}\n---\nbody\n"
        with pytest.raises(ContractError) as refused:
            load_skill(write_skill(tmp_path, "sneaky", text))
        assert (refused.value.code, refused.value.line) == ("HZC051", line)

    def test_the_name_must_be_the_directory(self, tmp_path: Path) -> None:
        """Agent Skills names the directory after the skill: HZC054 otherwise."""
        with pytest.raises(ContractError) as refused:
            load_skill(write_skill(tmp_path, "other-name", HOUSE_STYLE))
        assert refused.value.code == "HZC054"

    @pytest.mark.parametrize(
        "text",
        [
            "no frontmatter\n",
            "---\nname: broken\n",
            "---\n- a list\n---\n",
            "---\nname: broken\n---\n",
            "---\nname: broken\ndescription: x\nhz: {applies: {places: [x]}}\n---\n",
            "---\nname: broken\ndescription: x\nhz: {weight: 3}\n---\n",
        ],
    )
    def test_malformed_skills_are_coded(self, tmp_path: Path, text: str) -> None:
        """Missing frontmatter or description, bad hz keys: a HZC0xx error, no traceback."""
        with pytest.raises(ContractError) as refused:
            load_skill(write_skill(tmp_path, "broken", text))
        assert refused.value.code in {"HZC001", "HZC053"}

    def test_unreadable_skill_is_coded(self, tmp_path: Path) -> None:
        """A path with no SKILL.md is HZC053."""
        with pytest.raises(ContractError) as refused:
            load_skill(tmp_path / "absent" / "SKILL.md")
        assert refused.value.code == "HZC053"


class TestResolveSkills:
    def test_the_most_specific_layer_wins(self, tmp_path: Path) -> None:
        """With site then user directories, the user's copy of a skill is used."""
        site, user = tmp_path / "site", tmp_path / "user"
        write_skill(site, "house-style", HOUSE_STYLE)
        write_skill(user, "house-style", HOUSE_STYLE.replace("Short sentences.", "Be brief."))
        [skill] = resolve_skills(["house-style"], [site, user])
        assert skill.path == str(user / "house-style" / "SKILL.md")

    def test_a_missing_skill_is_hzc052(self, tmp_path: Path) -> None:
        """A name in uses found in no directory is refused with the directories searched."""
        with pytest.raises(ContractError) as refused:
            resolve_skills(["house-style"], [tmp_path])
        assert refused.value.code == "HZC052"
        assert str(tmp_path) in refused.value.hint

    def test_order_of_uses_is_kept(self, tmp_path: Path) -> None:
        """Skills come back in the contract's order."""
        write_skill(tmp_path, "house-style", HOUSE_STYLE)
        write_skill(tmp_path, "terse", "---\nname: terse\ndescription: Be terse.\n---\nShort.\n")
        names = [s.name for s in resolve_skills(["terse", "house-style"], [tmp_path])]
        assert names == ["terse", "house-style"]


def applying(name: str, applies: str, body: str = "Advice.") -> str:
    return f"---\nname: {name}\ndescription: x\nhz:\n  applies: {applies}\n---\n{body}\n"


class TestSkillsForTurn:
    def test_project_overrides_user_overrides_site(self, tmp_path: Path) -> None:
        """The same skill in three layers: the project's copy is the turn's, once."""
        site, user, project = (tmp_path / x for x in ("site", "user", "project"))
        for folder in (site, user, project):
            write_skill(folder, "house-style", HOUSE_STYLE.replace("Short", folder.name))
        [skill] = skills_for_turn(["house-style"], [site, user, project], Turn())
        assert skill.text.startswith("# House style\n\nproject sentences.")
        [skill] = skills_for_turn(["house-style"], [site, user], Turn())
        assert "user sentences." in skill.text

    def test_applies_by_asset_type_or_capability(self, tmp_path: Path) -> None:
        """A skill not in uses comes in when one of its asset types or capabilities is the
        turn's; one matching neither, or only by role, stays out."""
        write_skill(tmp_path, "docs", applying("docs", "{asset_types: [doc]}"))
        write_skill(tmp_path, "chat", applying("chat", "{capabilities: [chat]}"))
        write_skill(tmp_path, "mail", applying("mail", "{capabilities: [mail]}"))
        write_skill(tmp_path, "boss", applying("boss", "{roles: [manager]}"))
        write_skill(tmp_path, "plain", "---\nname: plain\ndescription: x\n---\nPlain.\n")
        turn = Turn(asset_types=frozenset({"doc"}), capabilities=frozenset({"chat"}))
        assert [s.name for s in skills_for_turn([], [tmp_path], turn)] == ["chat", "docs"]
        assert skills_for_turn([], [tmp_path], Turn()) == []

    def test_uses_come_first_and_an_applying_skill_only_once(self, tmp_path: Path) -> None:
        """The contract's uses keep their order; a used skill that also applies is not
        repeated; an applying skill's most specific copy is the one loaded."""
        site, project = tmp_path / "site", tmp_path / "project"
        write_skill(site, "docs", applying("docs", "{asset_types: [doc]}", "Site docs."))
        write_skill(project, "docs", applying("docs", "{asset_types: [doc]}", "Project docs."))
        write_skill(site, "terse", applying("terse", "{asset_types: [doc]}"))
        turn = Turn(asset_types=frozenset({"doc"}))
        found = skills_for_turn(["terse"], [site, project], turn)
        assert [(s.name, s.text) for s in found] == [
            ("terse", "Advice.\n"),
            ("docs", "Project docs.\n"),
        ]

    def test_an_applying_skill_that_grants_is_refused(self, tmp_path: Path) -> None:
        """HZC051 holds for skills found by applies, not only for those in uses."""
        text = applying("sneaky", "{asset_types: [doc]}").replace("hz:", "tools: [shell]\nhz:")
        write_skill(tmp_path, "sneaky", text)
        with pytest.raises(ContractError) as refused:
            skills_for_turn([], [tmp_path], Turn(asset_types=frozenset({"doc"})))
        assert refused.value.code == "HZC051"
