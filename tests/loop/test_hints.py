"""Every hint in the code names commands a user can type, never an internal transition."""

from __future__ import annotations

import ast
import json
import os
import re
from pathlib import Path

import click

from heinzel.cli import group
from heinzel.store.lifecycle import STATES, TRANSITIONS, _hint
from tests.loop.conftest import Hz

hz = group()

ROOT = Path(__file__).resolve().parents[2]
COMMAND = re.compile(r"`(hz [^`]+)`")
BARE = re.compile(r"\bhz ((?:heinzel|system|daemon) [a-z][a-z-]*)")
"""An unquoted command in a hint (``hz heinzel resume``); prose such as "hz runs" is not."""
INTERNAL = {t for t, _, _ in TRANSITIONS} - {"approve", "pause", "unpause", "retire", "unretire"}


def hints() -> list[tuple[str, str]]:
    """(where, text) of every hint: the third argument of a coded error in heinzel/ and
    machines/, its constant parts joined."""
    found = []
    for package in ("heinzel", "machines", "ledger"):
        for path in sorted((ROOT / package).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for node in ast.walk(tree):
                if not isinstance(node, ast.Call) or not node.args:
                    continue
                hint = node.args[2] if len(node.args) >= 3 else None
                hint = next((k.value for k in node.keywords if k.arg == "hint"), hint)
                if hint is None:
                    continue
                first = node.args[0]
                if not (isinstance(first, ast.Constant) and isinstance(first.value, str)):
                    continue
                if not re.fullmatch(r"HZ[A-Z]\d{3}", first.value):
                    continue
                text = "".join(
                    part.value
                    for part in ast.walk(hint)
                    if isinstance(part, ast.Constant) and isinstance(part.value, str)
                )
                found.append((f"{path.relative_to(ROOT)}:{node.lineno}", text))
    return found


def known(words: list[str], *, prefix: bool = False) -> bool:
    """Whether ``hz WORDS...`` is a real command followed by its arguments (with
    ``prefix``, a real group or command: the start of an unquoted one). A group that runs
    on its own (``hz team roster`` shows the roster) is a command too."""
    command: click.Command = hz
    for word in words:
        if not isinstance(command, click.Group):
            return True
        if word not in command.commands:
            return False
        command = command.commands[word]
    runs = not isinstance(command, click.Group) or command.invoke_without_command
    return prefix or runs


def test_every_hinted_command_exists() -> None:
    """Each `hz ...` a hint names is a command of the command line (not a group that only
    lists its commands, not made up)."""
    hinted = [(where, cmd) for where, text in hints() for cmd in COMMAND.findall(text)]
    bare = [(where, "hz " + cmd) for where, text in hints() for cmd in BARE.findall(text)]
    assert len(hinted) + len(bare) > 20
    wrong = [(where, cmd) for where, cmd in hinted if not known(cmd.split()[1:])]
    wrong += [(where, cmd) for where, cmd in bare if not known(cmd.split()[1:], prefix=True)]
    assert wrong == []


def test_lifecycle_hints_name_user_verbs_only() -> None:
    """A refused verb's hint, from every state, names no internal transition (wait, settle)."""
    for state in STATES:
        words = set(re.findall(r"[a-z]+", _hint(state)))
        assert not words & INTERNAL, (state, _hint(state))
        assert COMMAND.search(_hint(state)), state


def test_wake_and_resume_hints_do_not_point_at_each_other() -> None:
    """Wake refused while a turn runs points at stop, not resume; resume with nothing waiting
    points at wake, which from asleep runs."""
    assert "hz heinzel resume" not in _hint("awake")
    assert "hz heinzel stop" in _hint("awake")
    nothing_waits = [t for w, t in hints() if "tick/verbs.py" in w and "`hz heinzel wake " in t]
    assert nothing_waits


class TestHintsLeadOut:
    """A hint the user follows fixes what was refused, not another refusal or a trap."""

    def test_an_asset_without_a_scheme_is_sent_to_file_not_doc(self, hz: Hz, folder: Path) -> None:
        """HZC040 for `asset: report.md`: the example is file:, the one kind an adapter
        writes; a doc: asset would be created and then fail every draft (HZH252, HZH130)."""
        contract = folder / "digest.prose.md"
        text = contract.read_text(encoding="utf-8").replace('"file:report.md"', '"report.md"')
        contract.write_text(text, encoding="utf-8")
        done = hz("heinzel", "new", "--from", "digest.prose.md")
        assert done.code == 1
        assert "HZC040" in done.err and "file:report.md" in done.err
        assert "doc:" not in done.err

    def test_a_draft_whose_markers_are_gone_is_not_approved_by_hand(
        self, approved: Hz, folder: Path
    ) -> None:
        """HZH239 with the markers deleted: put them back; deleting the tag line is no
        approval then (the tick reads the draft as rejected)."""
        assert approved("heinzel", "wake", "notes-digest").code == 0
        report = folder / "report.md"
        kept = report.read_text(encoding="utf-8").split("\n")
        report.write_text(
            "\n".join(line for line in kept if not line.startswith("<!-- hz:")),
            encoding="utf-8",
        )
        done = approved("approve", "notes-digest")
        assert done.code == 1 and done.err.startswith("HZH239: ")
        assert "marker line is gone" in done.err
        assert "by hand" not in done.err and "rejected" in done.err
        report.unlink()
        gone = approved("approve", "notes-digest")
        assert gone.code == 1 and gone.err.startswith("HZH239: cannot read")
        assert "tag line" not in gone.err and "restore it" in gone.err

    def test_a_credentials_file_others_can_read_is_not_fixed_by_forget(
        self, hz: Hz, hz_env: dict[str, str]
    ) -> None:
        """HZH261: `forget` refuses the same file, so the hint says chmod and replacing
        the keys, not "forget and set them again"."""
        path = Path(hz_env["XDG_CONFIG_HOME"]) / "hz" / "credentials.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"github": "t"}), encoding="utf-8")
        os.chmod(path, 0o644)
        no_keyring = {"PYTHON_KEYRING_BACKEND": "keyring.backends.null.Keyring"}
        done = hz("system", "credential", "forget", "github", env=no_keyring)
        assert done.code == 1 and done.err.startswith("HZH261: ")
        assert "forget" not in done.err.splitlines()[-1]
        assert f"chmod 600 {path}" in done.err

    def test_a_team_ones_next_commands_work_beside_a_namesake(self, hz: Hz) -> None:
        """One of yours and a team one named alike: the `next:` commands `new` prints for
        the team one run (a bare name would be HZH081, one in each namespace)."""
        assert hz("heinzel", "new", "--from", "digest.prose.md").code == 0
        done = hz("heinzel", "new", "--from", "digest.prose.md", "--namespace", "team")
        assert done.code == 0, done.err
        [line] = [line for line in done.out.splitlines() if line.startswith("next: ")]
        commands = COMMAND.findall(line)
        assert commands == ["hz heinzel show team/notes-digest", "hz approve team/notes-digest"]
        for command in commands:
            ran = hz(*command.split()[1:])
            assert ran.code == 0, ran.err

    def test_no_such_lesson_names_the_lessons_command_for_this_one(self, approved: Hz) -> None:
        """HZH078 for a lesson number that is not there: the hint lists this one's lessons,
        ready to type, not `hz heinzel lessons NAME`; the command it names runs."""
        done = approved("heinzel", "dismiss", "notes-digest", "7")
        assert (done.code, done.err.split(":")[0]) == (1, "HZH078"), done.err
        assert done.err.startswith("HZH078: notes-digest has no lesson '7'"), done.err
        [command] = COMMAND.findall(done.err.splitlines()[-1])
        assert command == "hz heinzel lessons notes-digest"
        assert approved(*command.split()[1:]).code == 0
