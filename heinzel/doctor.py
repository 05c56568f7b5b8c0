"""``hz system doctor``: what is configured, what is missing, and the fix."""

from __future__ import annotations

import importlib.util
import os
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from heinzel.service import Service

__all__ = ["diagnose"]

EXTRAS = {"anthropic": "anthropic", "openai": "openai", "openai-chat": "openai"}


def diagnose(service: Service) -> dict[str, Any]:
    """Every check as ``{name, ok, detail, fix}``; nothing here changes a file."""
    checks: list[dict[str, Any]] = []
    home = service.home
    exists = home.root.exists()
    checks.append(
        {
            "name": "home",
            "ok": not exists or os.access(home.root, os.W_OK),
            "detail": f"{home.root}" + ("" if exists else " (created on first use)"),
            "fix": "give a writable --home or HZ_HOME",
        }
    )
    checks.append(
        {"name": "sessions", "ok": True, "detail": f"{sum(1 for _ in home.session_ids())} on disk"}
    )
    model = service.settings.heinzel.model
    provider = model.split(":", 1)[0] if ":" in model else ""
    extra = EXTRAS.get(provider)
    if model == "offline":
        checks.append(
            {
                "name": "model",
                "ok": True,
                "detail": "offline (built-in, rule-based, no AI, no network)",
            }
        )
    elif extra and importlib.util.find_spec(extra) is None:
        checks.append(
            {
                "name": "model",
                "ok": False,
                "detail": f"{model}: the {extra} client is not installed",
                "fix": f"pip install 'heinzel[{extra}]'",
            }
        )
    else:
        checks.append({"name": "model", "ok": True, "detail": model})
    return {"home": str(home.root), "checks": checks}
