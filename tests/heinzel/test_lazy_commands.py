"""``hz`` loads only the module of the command its command line names
(`heinzel.cli.OWNERS`); anything else loads every command module, so help is whole."""

from __future__ import annotations

import json
import subprocess
import sys

from heinzel.cli import MODULES, OWNERS

_TREE = """
import json, sys, click
from heinzel.cli import group
args = json.loads(sys.argv[1])
hz = group(args)
def walk(cmd, path):
    if isinstance(cmd, click.Group):
        for name, sub in cmd.commands.items():
            yield from walk(sub, [*path, name])
    else:
        yield path, cmd.callback.__module__
leaves = list(walk(hz, []))
loaded = sorted(m for m in sys.modules if m.startswith("heinzel.cli.") and m.count(".") == 2)
print(json.dumps({"leaves": leaves, "loaded": loaded}))
"""


def _tree(args: list[str] | None) -> dict[str, list[object]]:
    done = subprocess.run(
        [sys.executable, "-c", _TREE, json.dumps(args)],
        capture_output=True,
        text=True,
        check=True,
    )
    found: dict[str, list[object]] = json.loads(done.stdout)
    return found


def _owner(path: list[str]) -> str | None:
    return OWNERS.get(tuple(path[:2])) or OWNERS.get(tuple(path[:1]))


def test_the_owners_name_the_module_of_every_command() -> None:
    """Every command of the whole tree is owned, by the module that registers it, and
    every owned path is a command or a group of the tree."""
    leaves = _tree(None)["leaves"]
    assert len(leaves) > 40
    for path, module in leaves:
        assert isinstance(path, list)
        assert module == f"heinzel.cli.{_owner(path)}", path
    paths = {tuple(path[: len(key)]) for path, _ in leaves for key in OWNERS}  # type: ignore[index]
    assert set(OWNERS) <= paths


def test_a_known_command_loads_only_its_module() -> None:
    """``hz heinzel wake ...`` loads `commands` alone, ``hz system daemon tick`` `verbs`
    (and `commands`, whose groups it sits in); the command is the same as in the whole tree."""
    whole = {tuple(path): module for path, module in _tree(None)["leaves"]}  # type: ignore[arg-type]
    for args, owner in (
        (["heinzel", "wake", "report-0"], "commands"),
        (["system", "daemon", "tick"], "verbs"),
        (["team", "status"], "team"),
    ):
        tree = _tree(args)
        assert tree["loaded"] == sorted({"heinzel.cli.base", f"heinzel.cli.{owner}"} | _helpers())
        assert whole[tuple(args[:3]) if owner == "verbs" else tuple(args[:2])] == (
            f"heinzel.cli.{owner}"
        )


def _helpers() -> set[str]:
    """What `commands` itself imports of ``heinzel.cli`` (the rendering, the forms)."""
    return {"heinzel.cli.commands", "heinzel.cli.render", "heinzel.cli.forms"}


def test_anything_else_loads_every_command_module() -> None:
    for args in (["heinzel", "--help"], ["--home", "x", "heinzel", "wake"], ["heinzel", "wak"]):
        loaded = set(_tree(args)["loaded"])
        assert {f"heinzel.cli.{name}" for name in MODULES} <= loaded, args
