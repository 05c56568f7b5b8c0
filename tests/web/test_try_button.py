"""The amendment card's "Try it on the last turns": the page runs `hz heinzel try` on the
amendment the user filed with the real `hz heinzel amend`, and shows each placed draft
beside the tried one, placing nothing and starting no turn."""

from __future__ import annotations

import sys
from pathlib import Path

from starlette.testclient import TestClient

from ledger.spine import read_events
from tests import forkhz

from .conftest import ORIGIN, demo_env, heinzel_id


def test_the_amendment_card_tries_it_on_the_last_turns(client: TestClient, home: Path) -> None:
    hid = heinzel_id(home)
    contract = home / "heinzel" / hid / "contract"
    latest = max(contract.glob("v*.prose.md"), key=lambda p: int(p.name[1:].split(".")[0]))
    amended = home / "v-next.prose.md"
    amended.write_text(
        latest.read_text(encoding="utf-8") + "- [ ] the section has at most 12 lines\n"
    )
    filed = forkhz.run(
        [sys.executable, "-m", "heinzel", "heinzel", "amend", hid, "--from", str(amended)],
        env=demo_env(home),
        capture_output=True,
        text=True,
        check=False,
    )
    assert filed.returncode == 0, filed.stderr
    assert "Try it on the last turns" in client.get(f"/h/{hid}").text
    spine = home / "heinzel" / hid / "session.jsonl"
    before = spine.read_bytes()
    report = home / "priya" / "weekly-report.md"
    document = report.read_bytes()
    csrf = client.get("/").text.split('name="csrf" content="')[1].split('"')[0]
    headers = {"Origin": ORIGIN, "X-CSRF-Token": csrf}
    page = client.post(f"/h/{hid}/try", data={"turns": "2"}, headers=headers)
    assert page.status_code == 200, page.text
    assert "2 turns tried under v" in page.text and "the section has at most 12 lines" in page.text
    assert page.text.count("<th>placed</th><th>tried</th>") == 2
    assert report.read_bytes() == document and spine.read_bytes().startswith(before)
    added = [e for e in read_events(spine) if e.seq > before.count(b"\n")]
    assert added and all(e.kind == "usage" and e.data["kind"] == "trial" for e in added)
