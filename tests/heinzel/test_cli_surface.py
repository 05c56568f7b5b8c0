"""Every command of design.md exists, has help with an example, and a docs entry."""

from __future__ import annotations

import re
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from heinzel.cli import group

hz = group()


ROOT = Path(__file__).resolve().parents[2]
DESIGN_COMMANDS = [
    "heinzel new",
    "approve",
    "heinzel list",
    "heinzel show",
    "heinzel wake",
    "heinzel chat",
    "heinzel resume",
    "heinzel stop",
    "heinzel retry",
    "heinzel pause",
    "heinzel unpause",
    "heinzel retire",
    "heinzel unretire",
    "heinzel lessons",
    "heinzel dismiss",
    "heinzel verify",
    "heinzel reindex",
    "heinzel prune",
    "drafts",
    "system daemon tick",
    "system daemon run",
    "system doctor",
    "demo",
]
# Keys live in the user's configuration folder, not under a home (docs/configuration.md).
NO_HOME = ("system credential",)
LISTING = ["heinzel list", "heinzel show", "drafts", "system doctor", "heinzel lessons", "graph"]


def leaf_commands(group: click.Group, prefix: str = "") -> dict[str, click.Command]:
    found: dict[str, click.Command] = {}
    for name, command in group.commands.items():
        path = f"{prefix}{name}"
        if isinstance(command, click.Group):
            found.update(leaf_commands(command, path + " "))
        else:
            found[path] = command
    return found


LEAVES = leaf_commands(hz)


class TestSurface:
    def test_every_design_command_exists(self) -> None:
        """The names users and scripts rely on are all there."""
        assert sorted(set(DESIGN_COMMANDS) - set(LEAVES)) == []

    @pytest.mark.parametrize("path", sorted(LEAVES))
    def test_help_has_an_example_and_home(self, path: str) -> None:
        """`--help` works, shows an example and offers --home."""
        result = CliRunner().invoke(hz, [*path.split(), "--help"])
        assert result.exit_code == 0, result.output
        assert "Example:" in result.output
        if not path.startswith(NO_HOME):
            assert "--home" in result.output

    @pytest.mark.parametrize("path", LISTING)
    def test_listing_commands_take_json(self, path: str) -> None:
        """Every listing or showing command offers --json."""
        result = CliRunner().invoke(hz, [*path.split(), "--help"])
        assert "--json" in result.output

    def test_every_command_has_a_docs_entry(self) -> None:
        """docs/cli.md has a heading for each command."""
        headings = set(re.findall(r"^## hz (.+)$", (ROOT / "docs/cli.md").read_text(), re.M))
        documented = {part.strip() for h in headings for part in _expand(h)}
        assert sorted(set(LEAVES) - documented) == []


def _expand(heading: str) -> list[str]:
    """'heinzel pause / unpause' documents 'heinzel pause' and 'heinzel unpause'."""
    first, *rest = [p.strip() for p in heading.split("/")]
    prefix = first.rsplit(" ", 1)[0] + " " if " " in first else ""
    return [first] + [prefix + r for r in rest]


def test_index_only_commands_do_not_load_the_engine() -> None:
    """The CLI, the service and the tick import no pydantic-ai: it loads when a turn runs."""
    code = (
        "import sys, heinzel.cli.commands, heinzel.service, heinzel.tick, heinzel.tick.verbs; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('pydantic_ai', 'anthropic', 'openai') or m.startswith('heinzel.engine')))"
    )
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


_LOADED = (
    "import atexit, sys\n"
    "atexit.register(lambda: sys.stderr.write('LOADED ' + ' '.join(sorted(sys.modules)) + '\\n'))\n"
    "sys.argv = ['hz', *sys.argv[1:]]\n"
    "from heinzel.cli import main\n"
    "main()\n"
)


def _loaded(args: list[str], home: str) -> set[str]:
    """The modules an ``hz`` process had loaded when it exited, running ``args``."""
    import subprocess
    import sys

    env = {"PATH": "/usr/bin:/bin", "HOME": home, "HZ_HOME": home}
    done = subprocess.run(
        [sys.executable, "-c", _LOADED, *args], capture_output=True, text=True, env=env
    )
    line = next(x for x in done.stderr.splitlines() if x.startswith("LOADED "))
    return set(line.split()[1:])


@pytest.fixture(scope="module")
def one_approved(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A home holding one approved Heinzelmännchen, ``report-1``, made by the ``hz`` a
    person runs."""
    import subprocess
    import sys

    home = tmp_path_factory.mktemp("read-path") / "home"
    hz_bin = str(Path(sys.executable).with_name("hz"))
    contract = str(ROOT / "fixtures/contracts/good/weekly-report.prose.md")
    for args in (
        ["heinzel", "new", "--from", contract, "--name", "report-1"],
        ["approve", "report-1"],
    ):
        subprocess.run([hz_bin, *args, "--home", str(home)], check=True, capture_output=True)
    return home


READ_PATH_ABSENT = (
    "pydantic_ai",
    "pydantic",
    "yaml",
    "heinzel.contract.compiler",
    "heinzel.engine",
    "heinzel.config",
    "transitions",
    "sqlite_utils",
    "structlog",
    "machines",
    "ulid",
)
"""What reading the index and refusing never loads (start-up by need, issue 15 item 5)."""


@pytest.mark.parametrize(
    ("args", "absent"),
    [
        (["--help"], ("sqlite_utils", "pydantic", "yaml", "machines", "structlog")),
        (["heinzel", "list", "--json"], READ_PATH_ABSENT),
        (["heinzel", "stop", "nobody"], READ_PATH_ABSENT),
        (["heinzel", "stop", "report-1"], READ_PATH_ABSENT),
        (["heinzel", "list"], READ_PATH_ABSENT),
    ],
)
def test_commands_load_only_what_they_use(
    tmp_path: Path, one_approved: Path, args: list[str], absent: tuple[str, ...]
) -> None:
    """`hz --help`, a listing and a refusal that needs no work (an unknown name, a
    Heinzelmännchen with no running turn) load none of the modules they do not use: the
    compiler, YAML, pydantic-ai, the engine, and on the read path also the index writer
    (sqlite-utils), the settings' pydantic models, structlog and `machines`."""
    loaded = _loaded([*args, "--home", str(one_approved)], str(tmp_path))
    assert sorted(m for m in absent if m in loaded) == []


RECOVERY_ABSENT = ("pydantic_ai", "genai_prices", "heinzel.runners", "yaml", "ulid")
"""What a tick recovering a turn past think never loads: the model library, the price
table, the runners, PyYAML (the contract's stored form is read) and ULIDs (no new turn)."""


def test_a_recovering_tick_loads_no_model(tmp_path: Path) -> None:
    """A tick that finishes a turn killed in act (its model already called) recovers it
    without loading pydantic-ai, the price table, the runners, PyYAML or the ULID minter:
    each loads only where a model step runs, a runner is bound or a turn starts."""
    import json
    import subprocess
    import sys

    from tests.tick.homes import env, hz, make_home

    root, _ids = make_home(tmp_path, 1)
    killed = hz(root, "system", "daemon", "tick", HZ_CRASH_AT="after:effect.started")
    assert killed.returncode == 137, killed.stderr
    done = subprocess.run(
        [sys.executable, "-c", _LOADED, "system", "daemon", "tick", "--json"],
        cwd=root,
        env=env(root),
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    woken = json.loads(done.stdout)["woken"]
    assert [(w["woken_by"], [e["state"] for e in w["ended"]]) for w in woken] == [
        ("recovery", ["finished"])
    ]
    line = next(x for x in done.stderr.splitlines() if x.startswith("LOADED "))
    loaded = set(line.split()[1:])
    assert sorted(m for m in RECOVERY_ABSENT if m in loaded) == []
    assert sorted(m for m in loaded if m.startswith("pydantic_ai.")) == []
