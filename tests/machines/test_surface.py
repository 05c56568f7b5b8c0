"""The public surface stays at the door: every name `machines` exports imports from it,
whichever room its module lives in (docs/architecture.md, the rooms of machines)."""

from __future__ import annotations

import json
import subprocess
import sys

WHERE = """
import json, machines
missing = [name for name in machines.__all__ if not hasattr(machines, name)]
from machines import DiskBody, SpineJournal, StepId, Tracing, crash_hook, keys
print(json.dumps([missing, keys.__name__, DiskBody.__module__, SpineJournal.__module__,
                  StepId.__module__, Tracing.__module__, crash_hook.__module__]))
"""


class TestTheDoor:
    def test_every_exported_name_imports_from_machines(self) -> None:
        """`from machines import X` works for every X of `__all__`, in a fresh process, and
        each comes from its room."""
        done = subprocess.run(
            [sys.executable, "-c", WHERE], capture_output=True, text=True, check=True, timeout=60
        )
        assert json.loads(done.stdout) == [
            [],
            "machines.keys",
            "machines.stores.disk_body",
            "machines.stores.spine_journal",
            "machines.telemetry.observe",
            "machines.telemetry.otel",
            "machines.crashkit.crash",
        ]
