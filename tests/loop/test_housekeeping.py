"""Housekeeping in the tick (issue 13, item 12): expired files pruned a little at a time,
and the daily cap counting what open turns already spent, through `hz`."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from heinzel.session.sessions import Sessions
from heinzel.session.spend import spent_today
from heinzel.store.home import Home
from tests.loop.conftest import Hz

LATER = "2027-03-01T09:00:00Z"  # more than 90 days (retention_days) after the walk


def test_the_tick_prunes_expired_bodies_and_source_cache_entries(
    approved: Hz, hz_env: dict[str, str]
) -> None:
    """A tick 120 days after a drafted turn deletes its body and a stale cache entry,
    says so, and keeps the turn in `show`; a second tick the same day prunes nothing."""
    assert "-> drafted" in approved("system", "daemon", "tick").out
    home = Home(Path(hz_env["HZ_HOME"]))
    shown = json.loads(approved("heinzel", "show", "notes-digest", "--json").out)
    bodies = list((home.session_dir(shown["id"]) / "turns").glob("*.jsonl"))
    assert len(bodies) == 1
    entry = next(home.sources_dir.glob("*.json"))
    stale = home.sources_dir / ("f" * 64 + ".json")
    shutil.copy(entry, stale)  # an entry no watcher fetches any more
    later = approved("system", "daemon", "tick", env={"HZ_NOW": LATER})
    assert later.code == 0, later.out + later.err
    assert "pruned 2 expired files" in later.out, later.out
    assert not bodies[0].exists() and not stale.exists()
    again = approved("system", "daemon", "tick", "--json", env={"HZ_NOW": LATER})
    assert json.loads(again.out)["pruned"] == 0
    shown = json.loads(approved("heinzel", "show", "notes-digest", "--json").out)
    assert shown["turns"][0]["cause"] == "source-changed"


def test_the_daily_cap_counts_what_an_open_turn_already_spent(
    approved: Hz, hz_env: dict[str, str]
) -> None:
    """A waiting turn that spent 4.75 USD today (of the 5 a day) leaves no room for a new
    turn capped at 0.5 USD: the tick skips the wake with reason cap instead of running it,
    and `list` carries the cap notice (a turn host resuming it counts its own spend)."""
    sessions = Sessions.from_environment(None, {**hz_env, "HZ_NOW": "2026-10-30T14:02:30Z"})
    heinzel = str(sessions.resolve("notes-digest")["id"])
    with sessions.open_spine(heinzel) as spine:
        key = f"{heinzel}@rq-open"
        spine.append("turn.started", {"cause": "asked", "keys": [key]}, turn="tn-open", key=key)
        spine.append(
            "model.request",
            {"n": 1, "hash": "sha256:" + "0" * 64, "usd": 4.75, "tokens": 10},
            turn="tn-open",
        )
        spine.append(
            "turn.waiting", {"step": "think", "until": "2026-11-30T00:00:00.000Z"}, turn="tn-open"
        )
    now = sessions.clock()
    assert spent_today(sessions.index, sessions.home, now) == 4.75
    assert spent_today(sessions.index, sessions.home, now, mine={heinzel}) == 0.0
    done = approved("system", "daemon", "tick")
    assert done.code == 0, done.out + done.err
    assert "notes-digest: skipped (cap)" in done.out, done.out
    assert "the daily cap of 5 USD is reached" in done.out
    listed = approved("heinzel", "list")
    assert "notice: notes-digest: the daily cap is reached: 1 wake(s) skipped today" in listed.out
    assert "next: wait for tomorrow, or raise [heinzel] max_usd_per_day" in listed.out
