"""``hz system doctor``: what is configured, what is missing, and the fix."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from heinzel.contract import CompiledContract
    from heinzel.session.sessions import Sessions

__all__ = ["adapter_warnings", "diagnose", "skill_warnings", "unserved"]


def diagnose(service: Sessions, *, online: bool = False) -> dict[str, Any]:
    """Every check as ``{name, ok, detail, fix}`` (and ``code`` when not ok); nothing here
    changes a file. ``online`` makes one minimal request to each configured model and
    source adapter."""
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
    from heinzel.service.model_doctor import model_checks

    checks += _project_ignored()
    checks += model_checks(service, online=online)
    tables = sorted(service.settings.runners)
    runners = [_runner_check(name, service.settings.runners[name]) for name in tables]
    checks += runners or [
        {"name": "runners", "ok": True, "detail": "none bound (turns have no handoff tool)"}
    ]
    if len(tables) > 1:  # a turn binds the one table there is (heinzel.turns.handoff)
        checks.append(
            {
                "name": "runners",
                "ok": False,
                "detail": f"{len(tables)} tables ({', '.join(tables)}): none is bound, so "
                "turns have no handoff tool",
                "fix": "keep one [runners.<name>] table in your configuration",
            }
        )
    from heinzel.capabilities.configured import describe_adapters
    from heinzel.store.credentials import stored_secret

    settings = service.settings
    checks += describe_adapters(
        settings.adapters,
        fixtures=settings.heinzel.fixture_sources,
        environ=os.environ,
        stored=lambda provider: stored_secret(provider, os.environ),
    )
    checks.append(_sources(service))
    checks += _needed(
        service,
        {c["name"].removeprefix("adapter ") for c in checks if c.get("configured") is False},
    )
    from heinzel.service.doctor_home import home_checks

    checks += home_checks(service)
    if online:
        from heinzel.capabilities.configured import probe_adapters

        checks += probe_adapters(
            settings.adapters,
            environ=os.environ,
            stored=lambda provider: stored_secret(provider, os.environ),
        )
    return {"home": str(home.root), "checks": checks}


def _sources(service: Sessions) -> dict[str, Any]:
    """The sources whose last fetch by the tick failed (kept in the source cache with when
    they are asked again), each with its code; ok when none is failing."""
    from heinzel.store.sources import SourceCache

    failing = SourceCache.of(service.home).failures()
    if not failing:
        return {"name": "sources", "ok": True, "detail": "none failing at the last fetch"}
    first = failing[0]["failed"]
    named = [
        f"{f['source'].get('capability', '?')}.{f['source'].get('method', '?')}: "
        f"{f['failed'].get('code')} {f['failed'].get('message')} (asked again after "
        f"{f['failed'].get('retry_at')})"
        for f in failing
    ]
    return {
        "name": "sources",
        "ok": False,
        "code": str(first.get("code") or "HZH164"),
        "detail": f"{len(failing)} failing: " + "; ".join(named),
        "fix": str(first.get("hint") or "the tick asks again after the time named"),
    }


def unserved(service: Sessions) -> set[str]:
    """The capabilities no adapter serves in this configuration (none configured, no
    built-in one, no fixture): what `hz system doctor` lists as not configured."""
    from heinzel.capabilities.configured import describe_adapters

    rows = describe_adapters(
        service.settings.adapters,
        fixtures=service.settings.heinzel.fixture_sources,
        environ=os.environ,
    )
    return {r["name"].removeprefix("adapter ") for r in rows if r.get("configured") is False}


def stored_warnings(service: Sessions, heinzel_id: str, version: int) -> list[str]:
    """What a stored contract version needs that this machine lacks, as the warnings
    ``new`` and ``approve`` print: capabilities no adapter serves (HZH104) and skills no
    skill directory holds (HZC052)."""
    from heinzel.contract import compile_contract

    text = service.home.contract_text_path(heinzel_id, version).read_text(encoding="utf-8")
    contract = compile_contract(text, source=f"v{version}")
    found = adapter_warnings(contract, unserved(service))
    return found + skill_warnings(contract, service.settings.heinzel.skills)


def adapter_warnings(contract: CompiledContract, missing: set[str]) -> list[str]:
    """HZH104 as a warning at ``new`` and ``approve``: each capability the contract
    requires or reads that no adapter serves (its turns would fail on it), naming doctor."""
    wanted = {str(r).split(":", 1)[0] for r in contract.hz.requires}
    wanted |= {spec.from_.split(".", 1)[0] for spec in contract.hz.inputs.values()}
    return [
        f"HZH104: {contract.name} uses {capability}, which no adapter is configured for, so "
        f"its turns will fail on it; `hz system doctor` shows the fix (an [adapters.{capability}] "
        "table)"
        for capability in sorted(wanted & missing)
    ]


def _project_ignored() -> list[dict[str, Any]]:
    """What the project's ``hz.toml`` sets and may not (a model, a runner, an adapter...):
    ignored by every command, and said here (docs/configuration.md)."""
    from heinzel.config import default_site_path, default_user_path, load_settings

    loaded = load_settings(
        env=os.environ, cwd=Path.cwd(), site=default_site_path(), user=default_user_path()
    )
    if not loaded.ignored:
        return []
    return [
        {
            "name": "project configuration",
            "ok": False,
            "detail": f"{loaded.project} sets {', '.join(loaded.ignored)}, which a project's "
            "hz.toml may not set: ignored",
            "fix": f"set them in your own configuration ({default_user_path()}, or the file "
            "HZ_CONFIG names), or remove them from the project's hz.toml",
        }
    ]


def skill_warnings(contract: CompiledContract, dirs: Sequence[Path]) -> list[str]:
    """HZC052 as a warning at ``new`` and ``approve``: each skill of the contract's ``uses``
    that no skill directory holds (every turn would stop on it), saying where it goes."""
    from heinzel.contract.skills import copies

    missing = [name for name in contract.hz.uses if not copies(name, dirs)]
    searched = ", ".join(str(d) for d in dirs) or "no directories"
    return [
        f"HZC052: {contract.name} uses the skill {name!r}, which is in no skill directory, "
        f"so its turns will stop on it; put {name}/SKILL.md in one of: {searched}, or "
        f"remove {name} from hz.uses"
        for name in missing
    ]


def _needed(service: Sessions, missing: set[str]) -> list[dict[str, Any]]:
    """HZH104 before it happens: each Heinzelmännchen (not retired) whose contract requires
    or reads a capability in ``missing`` (no adapter configured), with the fix."""
    if not missing or not service.home_exists:
        return []
    rows = service.index.db.query(
        "SELECT name, frontmatter FROM heinzel WHERE state != 'retired' ORDER BY name", []
    )
    checks = []
    for row in rows:
        front = json.loads(row["frontmatter"] or "{}")
        wanted = {str(r).split(":", 1)[0] for r in front.get("hz.requires") or []}
        wanted |= {
            str(value).split(".", 1)[0]
            for key, value in front.items()
            if key.startswith("hz.inputs.") and key.endswith(".from")
        }
        checks += [
            {
                "name": f"{row['name']} needs {capability}",
                "ok": False,
                "code": "HZH104",
                "detail": f"its contract uses {capability}, which no adapter is configured for",
                "fix": f"add an [adapters.{capability}] table to your configuration "
                "(docs/adapters.md), or amend the contract",
            }
            for capability in sorted(wanted & missing)
        ]
    return checks


def _runner_check(name: str, table: Any) -> dict[str, Any]:
    """One bound runner: on PATH, version, isolation, limits it cannot enforce, refusal."""
    from heinzel.runners.doctor import check_runner
    from heinzel.runners.errors import RunnerError
    from heinzel.runners.settings import parse_runner_settings

    label = f"runner {name}"
    try:
        found = check_runner(name, parse_runner_settings(name, table))
    except RunnerError as exc:
        return {"name": label, "ok": False, "detail": f"{exc.code}: {exc.message}", "fix": exc.hint}
    parts = [
        f"{found.kind}",
        found.executable or "no executable",
        f"version {found.version}" if found.version else "version unknown",
    ]
    missing = sorted(flag for flag, present in found.isolation.items() if not present)
    if missing:
        parts.append("lacks " + ", ".join(missing))
    if found.unenforced_limits:
        parts.append("cannot enforce " + ", ".join(found.unenforced_limits))
    if found.refuses:
        parts.append(f"refuses to run: {found.refusal}")
    return {
        "name": label,
        "ok": found.ok,
        "detail": "; ".join(parts),
        "fix": "; ".join(found.fixes) or "see docs/runners.md",
    }
