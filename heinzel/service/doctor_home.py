"""The doctor's checks of the home: every output's folder, every chain, the day's spend.

`heinzel.service.doctor.diagnose` adds these to the configuration checks, so "ok" means
the next wake of each Heinzelmännchen can place its draft (HZH251 and HZH342 before it
fails), every spine verifies (HZH254, read whole: the doctor is the one command that may),
no spine holds a turn of a newer hz's vocabulary (HZH460), and the daily cap leaves room
for a turn (HZH255).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from heinzel.session.sessions import Sessions
from ledger.event import format_ts

__all__ = ["home_checks"]


def home_checks(service: Sessions) -> list[dict[str, Any]]:
    """The checks of the home's Heinzelmännchen; none for a home not made yet."""
    if not service.home.heinzel_dir.exists():
        return []
    return [*_outputs(service), _chains(service), _versions(service), _cap(service)]


def _outputs(service: Sessions) -> list[dict[str, Any]]:
    """HZH251 for each ``file:`` output (not retired) whose folder is gone: its first
    draft would fail; a missing document itself is fine (the first draft creates it).
    HZH342 for one that now resolves into hz's own files (a link planted since approval):
    its next draft would be refused."""
    from heinzel.capabilities.documents import absolute_asset

    rows = service.index.db.execute(
        "SELECT h.name, a.asset, o.origin FROM heinzel_assets a JOIN heinzel h ON h.id = a.heinzel "
        "LEFT JOIN tick_origins o ON o.heinzel = a.heinzel "
        "WHERE h.state != 'retired' ORDER BY h.name, a.asset"
    ).fetchall()
    checks = []
    protected = service.protected
    for name, asset, origin in rows:
        if not str(asset).startswith("file:"):
            continue
        full = absolute_asset(str(asset), Path(origin)) if origin else str(asset)
        why = protected.refusal(full.removeprefix("file:"))
        if why is not None:
            checks.append(
                {
                    "name": f"{name} output {asset}",
                    "ok": False,
                    "code": "HZH342",
                    "detail": f"it resolves to {why}, so its next draft would be refused",
                    "fix": "remove the link, or amend the output to a document of your own",
                }
            )
            continue
        folder = Path(full.removeprefix("file:")).expanduser().parent
        if not folder.is_absolute() or folder.is_dir():
            continue
        checks.append(
            {
                "name": f"{name} output {asset}",
                "ok": False,
                "code": "HZH251",
                "detail": f"the folder {folder} does not exist, so its next draft would fail",
                "fix": f"mkdir -p {folder}",
            }
        )
    return checks or [{"name": "outputs", "ok": True, "detail": "every output's folder exists"}]


def _chains(service: Sessions) -> dict[str, Any]:
    """HZH254 when a spine's hash chain does not verify (each spine read whole)."""
    from ledger.spine import verify

    ids = list(service.home.session_ids())
    broken = {i: verify(service.home.spine_path(i)) for i in ids}
    broken = {i: report for i, report in broken.items() if not report.ok}
    if not broken:
        said = "1 spine verifies" if len(ids) == 1 else f"{len(ids)} spines verify"
        return {"name": "chains", "ok": True, "detail": said}
    rows = service.index.db.execute("SELECT id, name FROM heinzel").fetchall()
    names = {str(i): str(n) for i, n in rows}
    first = next(iter(broken.values())).breaks[:1]
    where = f" (first: seq {first[0].seq}, {first[0].reason})" if first else ""
    return {
        "name": "chains",
        "ok": False,
        "code": "HZH254",
        "detail": f"{len(broken)} of {len(ids)} spines do not verify: "
        + ", ".join(names.get(i, i) for i in broken)
        + where,
        "fix": "hz heinzel verify NAME shows each break; the lines before it stand "
        "(docs/spine.md, What verify reports)",
    }


def _versions(service: Sessions) -> dict[str, Any]:
    """HZH460 when a newer hz wrote a turn of a later vocabulary into a spine here: this hz
    reads it and writes nothing there (`heinzel.index.versions`). A line of a later
    envelope ``v`` is a break of ``chains`` ("written by a newer hz")."""
    from heinzel.index.versions import newer
    from ledger.event import ENVELOPE_VERSION
    from machines.vocabulary import VOCABULARY_VERSION

    mine = f"vocabulary {VOCABULARY_VERSION}, envelope v{ENVELOPE_VERSION}"
    later = newer(service.index.db.conn)
    if not later:
        return {"name": "versions", "ok": True, "detail": f"{mine}; no spine of a newer hz"}
    rows = service.index.db.execute("SELECT id, name FROM heinzel").fetchall()
    names = {str(i): str(n) for i, n in rows}
    return {
        "name": "versions",
        "ok": False,
        "code": "HZH460",
        "detail": f"this hz writes {mine}; a newer hz wrote "
        + ", ".join(f"{names.get(i, i)} (vocabulary {v})" for i, v in sorted(later.items()))
        + ": read here, never written",
        "fix": f"upgrade hz to one that knows vocabulary {max(later.values())}",
    }


def _cap(service: Sessions) -> dict[str, Any]:
    from heinzel.session.spend import spent_today
    from heinzel.strings.usd import usd_text

    settings = service.settings.heinzel
    now = service.clock()
    spent = spent_today(service.index, service.home, now)
    room = spent + settings.max_usd <= settings.max_usd_per_day
    check: dict[str, Any] = {
        "name": "daily cap",
        "ok": room,
        "detail": f"{usd_text(spent)} of {settings.max_usd_per_day:g} USD spent on "
        f"{format_ts(now)[:10]}"
        + (
            ""
            if room
            else f"; a turn may cost up to {settings.max_usd:g} USD, so wakes are skipped"
        ),
    }
    if not room:
        check |= {
            "code": "HZH255",
            "fix": "wait for tomorrow (UTC), or raise [heinzel] max_usd_per_day",
        }
    return check
