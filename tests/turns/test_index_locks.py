"""The index's SQLite locks outlive the opening of its writer: a process that read the index
(a plain reader connection) and then opened the writer, as `hz heinzel chat` does before it
waits for the spine's lock, still holds the lock by which another process knows the index's
WAL is in use (`ledger.files.private_file`)."""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import pytest

from heinzel.store.inbox import Inbox
from ledger.spine import read_events
from tests import forkhz

from .conftest import hz_env
from .test_delivery import _waiting_for_lock


@pytest.mark.kill
def test_another_process_closing_the_index_leaves_a_waiting_chats_wal_alone(
    make_service: Callable[..., Any],
) -> None:
    """While `hz heinzel chat` waits for the spine's lock with the index open, another process
    reads the index and closes it: the WAL stays (the chat's process is not taken for gone,
    which would checkpoint and delete the WAL under it), and the chat's turn runs once."""
    service, heinzel_id, _ = make_service()
    service.index.close()
    lock = service.home.session_dir(heinzel_id) / "lock"
    held = os.open(lock, os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(held, fcntl.LOCK_EX)  # a writer of the spine, as a turn's process would be
    env, hz = hz_env(service), forkhz.HZ
    chat = subprocess.Popen(
        [hz, "heinzel", "chat", "notes-digest", "keep it short"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        _waiting_for_lock(chat, lock)  # it read the index and opened its writer first
        wal = service.home.index_path.with_name("index.sqlite-wal")
        assert wal.exists()
        read = (
            f"import sqlite3; db = sqlite3.connect({str(service.home.index_path)!r}); "
            "db.execute('SELECT count(*) FROM turns').fetchall(); db.close()"
        )
        subprocess.run([sys.executable, "-c", read], check=True)
        assert wal.exists()  # the chat's process still holds the index
    finally:
        os.close(held)
    _, err = chat.communicate(timeout=120)
    assert chat.returncode == 0, err
    events = list(read_events(service.home.spine_path(heinzel_id)))
    assert [e.data.get("disposition") for e in events if e.kind == "turn.finished"] == ["drafted"]
    assert Inbox(service.home, heinzel_id).pending() == []
