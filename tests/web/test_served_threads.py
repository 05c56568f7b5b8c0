"""The served web head's worker threads log together (issue 38, item 7): logging is
configured once, before the threads start. It was configured by the first thread that
logged, and another thread asking whether a line would be written found structlog half
imported: a 500 with ``AttributeError: partially initialized module 'structlog'``."""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlsplit

from heinzel.web.auth import Keys
from ledger.spine import read_events
from tests import forkhz
from tests.waits import HANG

from .conftest import demo_env, heinzel_id
from .test_serve_cli import ask, free_port, opened
from .test_served_input import Served


class InfoServed(Served):
    """``hz system serve`` as a person starts it, with ``HZ_LOG_LEVEL=info`` (every spine
    line written is logged, so every write of every thread logs)."""

    def __init__(self, home: Path) -> None:
        self.home = home
        self.port = free_port()
        self.process = forkhz.Popen(
            [sys.executable, "-m", "heinzel", "system", "serve", "--port", str(self.port)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**demo_env(home), "HZ_LOG_LEVEL": "info"},
        )
        login = urlsplit(opened(self.process, self.port))
        self.cookie = ask(self.port, f"{login.path}?{login.query}")[1].split(";")[0]
        self.csrf = Keys((home / "web" / "token").read_text().strip()).csrf


def test_concurrent_requests_to_a_fresh_served_head_each_log_and_answer(home: Path) -> None:
    """Four Pause buttons and two page loads sent together to a head that has logged
    nothing yet: the pages answer 200, one pause pauses (its spine line logged) and the
    others are told it is paused (HZH050, never a second line), no traceback."""
    hid = heinzel_id(home)
    head = InfoServed(home)
    try:
        before = sum(1 for _ in read_events(home / "heinzel" / hid))
        sends: list[Callable[[], tuple[int, str]]] = [
            *[lambda: head.post_form(f"/h/{hid}/do", b"verb=pause")] * 4,
            lambda: head.request("GET", "/"),
            lambda: head.request("GET", f"/h/{hid}"),
        ]
        together = threading.Barrier(len(sends))
        answers: list[tuple[int, str]] = []

        def send(one: Callable[[], tuple[int, str]]) -> None:
            together.wait(timeout=HANG)
            answers.append(one())

        threads = [threading.Thread(target=send, args=(one,)) for one in sends]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=HANG)
        statuses = sorted(status for status, _ in answers)
        assert statuses == [200, 200, 200, 400, 400, 400], answers
        assert all('"HZH050"' in text for status, text in answers if status == 400), answers
        err = head.stop()
    finally:
        head.process.kill()
        head.process.communicate()  # its pipes closed too, when an assert above failed
    lines = list(read_events(home / "heinzel" / hid))[before:]
    paused = [e.seq for e in lines if e.kind == "heinzel.paused"]
    assert len(paused) == 1, [e.kind for e in lines]
    assert "Traceback" not in err, err
    assert all(f"seq={seq}" in err for seq in paused), err
