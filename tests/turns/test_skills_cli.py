"""Skills through the `hz` executable on the offline model: applies by layer, and HZC051."""

from __future__ import annotations

from pathlib import Path

from ledger.spine import read_events
from tests.turns.conftest import CONTRACT
from tests.turns.test_skill_pins import _hz


def _project(tmp: Path, uses: str = "") -> Path:
    work = tmp / "work"
    work.mkdir()
    (work / "hz.toml").write_text("[heinzel]\n", encoding="utf-8")
    (work / "notes.txt").write_text("ship the rounding fix\n", encoding="utf-8")
    (work / "report.md").write_text("# Report\n", encoding="utf-8")
    text = CONTRACT.format(render="always", done_when="every item of `notes` is covered")
    if uses:
        text = text.replace("hz:\n", f"hz:\n  uses: [{uses}]\n", 1)
    (work / "d.prose.md").write_text(text, encoding="utf-8")
    assert _hz(work, "heinzel", "new", "--from", "d.prose.md").returncode == 0
    assert _hz(work, "approve", "notes-digest").returncode == 0
    return work


def _skill(folder: Path, name: str, head: str, body: str) -> None:
    (folder / name).mkdir(parents=True, exist_ok=True)
    text = f"---\nname: {name}\ndescription: x\n{head}---\n{body}\n"
    (folder / name / "SKILL.md").write_text(text, encoding="utf-8")


class TestSkillsThroughHz:
    def test_an_applying_skill_joins_the_turn_the_project_copy_winning(
        self, tmp_path: Path
    ) -> None:
        """A user skill that applies to file outputs, shadowed by the project's copy: the
        turn's body has the project text only, and turn.started pins that copy."""
        work = _project(tmp_path)
        applies = "hz: {applies: {asset_types: [file]}}\n"
        _skill(tmp_path / "xdg" / "hz" / "skills", "files-style", applies, "User advice.")
        _skill(work / "skills", "files-style", applies, "Project advice.")
        woke = _hz(work, "heinzel", "wake", "notes-digest", "--message", "now")
        assert woke.returncode == 0, woke.stderr[-2000:]
        (spine,) = (tmp_path / "home" / "heinzel").glob("*/session.jsonl")
        [started] = [e for e in read_events(spine) if e.kind == "turn.started"]
        assert list(started.data["pins"]["skills"]) == ["files-style"]
        body = next(spine.parent.glob(f"turns/{started.turn}.jsonl")).read_text("utf-8")
        assert "Project advice." in body and "User advice." not in body

    def test_a_used_skill_that_grants_stops_the_wake_with_hzc051(self, tmp_path: Path) -> None:
        """A project skill with allowed-tools: the wake exits 1 with HZC051 naming the file
        and line, and no turn starts."""
        work = _project(tmp_path, uses="house-style")
        _skill(work / "skills", "house-style", "allowed-tools: Bash\n", "Be brief.")
        woke = _hz(work, "heinzel", "wake", "notes-digest", "--message", "now")
        assert woke.returncode == 1
        assert "HZC051" in woke.stderr and "house-style/SKILL.md:4" in woke.stderr, woke.stderr
        (spine,) = (tmp_path / "home" / "heinzel").glob("*/session.jsonl")
        assert not [e for e in read_events(spine) if e.kind == "turn.started"]
