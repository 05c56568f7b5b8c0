"""A turn against a loopback provider under hz against the same Agent run bare on it; and
`hz heinzel wake` as a whole process against ``python -c "import pydantic_ai"``.

The provider is the loopback OpenAI chat-completions server of ``tests/models``: each turn
is two requests (a ``report`` tool call, then the outcome), through pydantic-ai's real
client. Under hz the turn is a whole wake (`Turns.run_wakes`: the spine and its lock, the
index, the checkpoints, the retrying model, the effect ledger, a draft placed in a file);
bare, the same pydantic-ai Agent runs on the same context against the same server. The
second figure is the start-up and whole work of one ``hz heinzel wake`` on the offline
model, against the import of pydantic-ai alone (median of several, interleaved).
"""

from __future__ import annotations

import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "models"))

from bench_turns import AT, CONTRACT, DONE, SPEC
from fake_providers import Call, Outcome, Provider
from pydantic_ai import Agent

from heinzel.config import HeinzelSettings, Settings
from heinzel.engine import Outcome as TurnOutcome
from heinzel.engine import SpineView, TurnServices, build_context, build_toolset, resolve_model
from heinzel.logs import configure_logging
from heinzel.service import Service
from heinzel.store.home import Home
from heinzel.turns import Turns, default_adapters
from machines import Wake, keys

HZ = str(Path(sys.executable).with_name("hz"))
MODEL = "openai-chat:gpt-4o-mini"
ROUNDS = 10
PROCESS_ROUNDS = 7
DRAFT = {
    "report": "drafted the week",
    "draft": {
        "text": "## Week\n\n- Fix checkout\n- Add PayPal\n",
        "output": "section",
        "contract_version": 1,
        "done_when": [{"item": DONE, "met": True, "note": "both PRs"}],
    },
}


def script(body: dict[str, Any], n: int) -> Any:
    """A ``report`` call first, then the outcome once the tool's result came back."""
    if body["messages"][-1].get("role") == "tool":
        return Outcome(DRAFT)
    return Call("report", {"verb": "read", "target": "merged_prs", "description": "read"})


def setup(root: Path, model: str, base_url: str | None) -> tuple[Service, str]:
    folder = root / "work"
    folder.mkdir(parents=True)
    (folder / "prs.json").write_text('[{"title": "Fix checkout"}, {"title": "Add PayPal"}]')
    (folder / "issues.txt").write_text("- CHK-1 done\n- CHK-2 open\n")
    (folder / "events.txt").write_text("- Mon: planning\n")
    (folder / "report.md").write_text("# Report\n")
    (folder / "c.prose.md").write_text(CONTRACT.format(render="always", done=DONE))
    settings = Settings(heinzel=HeinzelSettings(home=root / "home", model=model, base_url=base_url))
    env = {"OPENAI_API_KEY": "sk-bench", "HZ_NOW": AT.isoformat()}
    service = Service(Home(root / "home"), lambda: AT, settings, owner="me", env=env)
    heinzel_id = service.create_from_files([str(folder / "c.prose.md")])[0]["id"]
    service.approve(heinzel_id)
    return service, heinzel_id


def hz_rounds(root: Path, base_url: str) -> float:
    service, heinzel_id = setup(root, MODEL, base_url)
    adapters = default_adapters(service.settings)
    start = time.perf_counter()
    for n in range(ROUNDS):
        wake = Wake("schedule", keys.schedule(heinzel_id, f"slot{n}"))
        (state,) = Turns(service).run_wakes(heinzel_id, [wake], adapters=adapters)
        assert state.disposition == "drafted", state
    return (time.perf_counter() - start) / ROUNDS


def bare_rounds(base_url: str) -> float:
    async def rounds() -> float:
        start = time.perf_counter()
        for _ in range(ROUNDS):
            context = build_context(SPEC, SpineView())
            agent = Agent(
                resolve_model(MODEL, base_url=base_url, api_key="sk-bench"),
                instructions=context.instructions,
                output_type=TurnOutcome,
                toolsets=[build_toolset(SPEC, TurnServices())],
            )
            result = await agent.run(message_history=context.messages)
            assert result.output.draft is not None
        return (time.perf_counter() - start) / ROUNDS

    return asyncio.run(rounds())


def whole_process(root: Path) -> tuple[float, float]:
    """Median ms of ``hz heinzel wake`` (offline) and of ``python -c "import pydantic_ai"``."""
    service, _ = setup(root, "offline", None)
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(root)}
    wake = [HZ, "heinzel", "wake", "weekly-report", "--home", str(service.home.root)]
    bare = [sys.executable, "-c", "import pydantic_ai"]
    ours: list[float] = []
    base: list[float] = []
    for _ in range(PROCESS_ROUNDS):
        for args, into in ((bare, base), (wake, ours)):
            start = time.perf_counter()
            done = subprocess.run(args, env=env, cwd=root, capture_output=True, check=False)
            into.append((time.perf_counter() - start) * 1000)
            assert done.returncode == 0, done.stderr[-400:]
    return statistics.median(ours), statistics.median(base)


def main() -> None:
    configure_logging("cli", stream=sys.stderr, clock=lambda: AT, level="warning")
    provider = Provider("openai", script)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            ours = hz_rounds(Path(tmp) / "a", provider.base_url)
            bare = bare_rounds(provider.base_url)
        print(f"loopback-provider turn under hz: {ours * 1000:7.2f} ms (2 requests)")
        print(f"same agent run bare:             {bare * 1000:7.2f} ms (2 requests)")
        print(f"ratio:                           {ours / bare:7.2f}x")
    finally:
        provider.close()
    with tempfile.TemporaryDirectory() as tmp:
        wake_ms, import_ms = whole_process(Path(tmp))
    print(f"hz heinzel wake (offline), whole process: {wake_ms:7.1f} ms")
    print(f'python -c "import pydantic_ai" (baseline): {import_ms:7.1f} ms')
    print(f"ratio:                                    {wake_ms / import_ms:7.2f}x")


if __name__ == "__main__":
    main()
