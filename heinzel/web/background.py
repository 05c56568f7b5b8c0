"""A chat's new turn, run outside the web request: the page's POST writes the message to the
inbox and returns; the turn runs in a child process, ``python -m heinzel.web.background
HOME ID REQUEST``, which is ``hz heinzel chat`` again with the same request id.

A process rather than a thread of the web head: the turn takes the spine's lock as any
``hz`` process does, so a second message from the page sees the lock held and is queued
for that turn's host, exactly as ``hz heinzel chat`` from a terminal would be (a thread
would hold the lock in the web head's own process, where `lock_held` cannot see it); a
turn outlives a restart of the web head, and a crash in it never takes the head down. The
message text never appears in the child's arguments. If the child dies before its turn
starts, the chat's pending mark stays and the tick delivers it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Mapping
from pathlib import Path

from ledger.files import ensure_private_dir, open_append

__all__ = ["spawn_chat_turn", "spawn_child"]


def spawn_chat_turn(
    home: Path, heinzel_id: str, request_id: str, env: Mapping[str, str]
) -> subprocess.Popen[bytes]:
    """Start the child that runs the chat's turn (`spawn_child`)."""
    return spawn_child(home, ["heinzel.web.background", heinzel_id, request_id], env)


def spawn_child(
    home: Path, module_args: list[str], env: Mapping[str, str], stdin: bytes | None = None
) -> subprocess.Popen[bytes]:
    """``python -m MODULE HOME ARGS...`` in a session of its own, reaped when it ends;
    ``stdin`` (never the arguments) carries any text the user wrote. Its errors go to
    ``HOME/web/turns.log`` (0600 whatever the umask, opened through
    `ledger.files.open_append`: a link planted at its path is refused, HZL001, and
    nothing is written through it)."""
    module, *args = module_args
    log_dir = home / "web"
    ensure_private_dir(log_dir)
    log = open_append(log_dir / "turns.log")
    try:
        child = subprocess.Popen(
            [sys.executable, "-m", module, str(home), *args],
            env=dict(env),
            stdin=subprocess.DEVNULL if stdin is None else subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=log,
            start_new_session=True,
        )
    finally:
        os.close(log)
    if child.stdin is not None:
        child.stdin.write(stdin or b"")
        child.stdin.close()
    threading.Thread(target=child.wait, daemon=True).start()  # reap it when it ends
    return child


def main(home: str, heinzel_id: str, request_id: str) -> int:
    """Deliver the request as ``hz heinzel chat --request-id`` does: steer or queue for a
    turn that started meanwhile, else run the asked turn here."""
    from heinzel.app import App
    from heinzel.store.inbox import Inbox
    from ledger.errors import HzError

    app = App.from_environment(home, os.environ)
    try:
        request = Inbox(app.service.home, heinzel_id).read(request_id)
        if request is None or request.taken is not None:
            return 0
        app.verbs().chat(heinzel_id, request.message, request_id=request_id)
    except HzError as error:
        print(error.render(), file=sys.stderr)
        return 1
    finally:  # as a command ends: the index closed keeping its WAL (no fsync)
        app.service.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:4]))
