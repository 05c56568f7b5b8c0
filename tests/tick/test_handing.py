"""The busy tick's hand-over never doubles a chat: a chat already in the inbox is not
handed again, and a handed wake whose chat a turn was steered with is settled."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from heinzel.config import load_settings
from heinzel.service import Service
from heinzel.store.home import Home
from heinzel.store.inbox import Inbox
from heinzel.tick.handing import hand, inbox_wakes
from heinzel.tick.plan import Planner
from machines import keys
from machines.keys import Wake

from .homes import CREATED, make_home, tick


def _service(root: Path) -> Service:
    loaded = load_settings(env={}, cwd=root, site=None, user=None, data_dir=root / "home")
    return Service(Home(root / "home"), lambda: CREATED, loaded.settings, owner="priya")


def test_a_chat_in_the_inbox_is_not_handed_to_the_running_turn_again(tmp_path: Path) -> None:
    """Of a chat's asked wake and a schedule wake, only the schedule one is handed: the
    running turn's host delivers the chat from the inbox itself (steered or after)."""
    root, (heinzel,) = make_home(tmp_path, 1)
    service = _service(root)
    inbox = Inbox(service.home, heinzel)
    inbox.write("rq-chat1", "chat", "also this", at=CREATED)
    errors: list[dict[str, Any]] = []
    wakes = [Wake("asked", f"{heinzel}@rq-chat1"), Wake("schedule", f"{heinzel}@slot")]
    handed = hand(service, heinzel, wakes, errors)
    assert errors == []
    assert handed is not None
    assert handed["keys"] == [f"{heinzel}@slot"]
    kinds = [inbox.read(p.stem).kind for p in inbox.directory.glob("rq-*.json")]  # type: ignore[union-attr]
    assert sorted(kinds) == ["chat", "requested"]


def test_a_handed_wake_of_a_steered_chat_is_taken_not_woken_again(tmp_path: Path) -> None:
    """A handed asked wake whose chat a turn was steered with (the race between the
    tick's inbox read and a turn starting) is settled by the next tick, never woken."""
    root, (heinzel,) = make_home(tmp_path, 1)
    service = _service(root)
    inbox = Inbox(service.home, heinzel)
    inbox.write("rq-chat1", "chat", "also this", at=CREATED)
    inbox.take("rq-chat1", at=CREATED)
    handed = inbox.hand("asked", f"{heinzel}@rq-chat1", at=CREATED)
    steer = {"request_id": "rq-chat1", "hash": "sha256:x"}
    service.append(heinzel, "turn.steered", steer, key=f"{heinzel}@rq-chat1")
    errors: list[dict[str, Any]] = []
    taken = Planner(service.index.db).taken  # the steer claims the chat's key
    assert inbox_wakes(service, set(), taken, errors) == []
    assert errors == []
    again = inbox.read(handed.request_id)
    assert again is not None
    assert again.taken is not None


def test_a_handed_approval_wake_of_an_observed_rejection_is_taken_by_the_tick(
    tmp_path: Path,
) -> None:
    """A handed approval wake whose rejection was already recorded (no turn runs for it)
    and whose text no pending draft has is taken by the next `hz system daemon tick`, which
    then wakes nothing; it used to be woken again by every tick, never quiet."""
    root, (heinzel,) = make_home(tmp_path, 1)
    service = _service(root)
    key = keys.approval(heinzel, "section", "sha256:" + "ab" * 32)
    handed = Inbox(service.home, heinzel).hand("approval", key, at=CREATED)
    service.append(
        heinzel, "approval.observed", {"rejected": True, "draft_key": f"{heinzel}@v1@x"}, key=key
    )
    first = tick(root)["woken"]  # the home's schedule slot is due too
    assert [w for r in first for w in r["wakes"] if w["cause"] == "approval"] == []
    assert tick(root)["woken"] == []
    again = Inbox(service.home, heinzel).read(handed.request_id)
    assert again is not None and again.taken is not None
