"""`hz ARGS` run by `heinzel.cli.group` in the test's own process, for set-up that is not
what a test proves (a contract created and approved before the tick under test): the
same command with exactly the given environment and working folder, its exit status and
streams returned as `subprocess.run` returns them. The commands a test proves run as
processes (the real `hz`, or forked: tests/forkhz.py)."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping
from pathlib import Path

from click.testing import CliRunner


def hz(args: list[str], env: Mapping[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """``hz ARGS`` in ``cwd`` with ``env`` and nothing else of this process's environment
    (``None`` unsets a variable for `CliRunner`); an exception is raised, not caught."""
    from heinzel.cli import group

    unset: dict[str, str | None] = {k: None for k in os.environ if k not in env}
    here = Path.cwd()
    os.chdir(cwd)
    try:
        result = CliRunner().invoke(group(), args, env={**unset, **env}, catch_exceptions=False)
    finally:
        os.chdir(here)
    return subprocess.CompletedProcess(
        ["hz", *args], result.exit_code, result.stdout, result.stderr
    )
