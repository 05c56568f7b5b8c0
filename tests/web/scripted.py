"""A scripted model that real ``hz`` processes reach: the loopback OpenAI server of
``tests/models/fake_providers.py``, proposing the ``pause`` write in a chat turn.

The first request of a turn waits until ``gate`` is set (so a test sees the turn running),
then calls ``pause``; a request answering a tool gets the outcome, a report and no draft.
"""

from __future__ import annotations

import importlib.util
import sys
import threading
from pathlib import Path
from typing import Any

from tests.waits import HANG

_path = Path(__file__).resolve().parents[1] / "models" / "fake_providers.py"
_spec = importlib.util.spec_from_file_location("hz_fake_providers", _path)
assert _spec is not None and _spec.loader is not None
fake = importlib.util.module_from_spec(_spec)
sys.modules["hz_fake_providers"] = fake
_spec.loader.exec_module(fake)

REASON = "the notes moved to another repository"
MODEL = "openai-chat:gpt-4o-mini"


class PausingModel:
    """The provider and the two events a test steers it with."""

    def __init__(self) -> None:
        self.gate = threading.Event()
        """Set by the test: the turn's first model request may answer."""
        self.reached = threading.Event()
        """Set here: a turn's first model request arrived."""
        self.provider = fake.Provider("openai", self.script)

    def script(self, body: dict[str, Any], n: int) -> Any:
        last = body["messages"][-1]
        if last.get("role") == "tool":
            said = str(last.get("content", ""))[:120]
            return fake.Outcome({"report": f"pause answered: {said}"})
        self.reached.set()
        self.gate.wait(timeout=HANG)
        return fake.Call("pause", {"reason": REASON})

    def env(self, base: dict[str, str]) -> dict[str, str]:
        """``base`` with every model role pointed at this server."""
        return {
            **base,
            "HZ_MODEL": MODEL,
            "HZ_MODEL_FAST": MODEL,
            "HZ_MODEL_BEST": MODEL,
            "HZ_BASE_URL": self.provider.base_url,
            "OPENAI_API_KEY": "sk-test",
        }

    def close(self) -> None:
        self.gate.set()
        self.provider.close()
