"""One Heinzelmännchen's spend reads the same on every surface: `hz heinzel list` and
`show` (text and ``--json``), wake's line, MCP's ``heinzel_list`` and ``heinzel_show``, and
the page, while a turn is still open (its request held at the provider, its reservation
counted) and after it ended. One formatter (`heinzel.strings.usd.usd_text`) and one query
(`heinzel.session.spend.today_each`) make every figure."""

from __future__ import annotations

import json
import os
import re
import threading
from pathlib import Path
from typing import Any

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from starlette.testclient import TestClient

from heinzel.app import App
from heinzel.strings.usd import usd_text
from heinzel.web.server import create_app
from tests import forkhz

from . import test_caps
from .conftest import DRAFT, User
from .fake_providers import Outcome
from .test_caps import W, _create, _meter

TOKEN = "test-token-0123456789"
buyer = test_caps.buyer  # the fixture: a user of the OpenAI API at 1 USD per million
HZ = os.path.join(os.path.dirname(forkhz.HZ), "hz")


def _mcp(user: User) -> tuple[dict[str, Any], dict[str, Any]]:
    """``heinzel_list`` and ``heinzel_show`` from the real ``hz mcp`` over stdio."""

    async def run() -> tuple[dict[str, Any], dict[str, Any]]:
        params = StdioServerParameters(command=HZ, args=["mcp"], env=user.env, cwd=str(user.folder))
        async with stdio_client(params) as (read, write), ClientSession(read, write) as s:
            await s.initialize()
            listed = await s.call_tool("heinzel_list", {})
            shown = await s.call_tool("heinzel_show", {"name": "notes-digest"})
            assert not listed.is_error and not shown.is_error
            return dict(listed.structured_content or {}), dict(shown.structured_content or {})

    return anyio.run(run)


def _page(user: User) -> tuple[str, str]:
    """The list page and the Heinzelmännchen's page, logged in."""
    app = create_app(
        lambda: App.from_environment(str(user.home), user.env),
        TOKEN,
        hosts=["testserver"],
        idle_seconds=0,
    )
    with TestClient(app, follow_redirects=False) as client:
        assert client.get(f"/auth?token={TOKEN}").status_code == 303
        listed, shown = client.get("/"), client.get("/h/notes-digest")
        assert listed.status_code == 200 and shown.status_code == 200
        return listed.text, shown.text


def _words(html: str) -> str:
    return " ".join(re.sub(r"<[^>]+>", " ", html).split())


def _agree(user: User, usd: float) -> None:
    """Every surface gives ``usd`` as today's figure of notes-digest, in the same words."""
    said = f"{usd_text(usd)} USD"
    listed = user.hz("heinzel", "list", "--json")
    [row] = json.loads(listed.stdout)
    shown = json.loads(user.hz("heinzel", "show", "notes-digest", "--json").stdout)
    assert row["cost_today"] == shown["cost_today"] == usd, (row, shown["cost_today"])
    assert shown["spend_today"]["usd"] == usd
    assert shown["cost_month"]["total"] == usd, shown["cost_month"]
    assert sum(t["cost_usd"] for t in shown["turns"]) == usd, shown["turns"]
    text_list = user.hz("heinzel", "list").stdout
    text_show = user.hz("heinzel", "show", "notes-digest").stdout
    assert said in text_list, text_list
    assert f"today:    {said}" in text_show, text_show
    assert f"this month: {said}" in text_show, text_show
    mcp_list, mcp_show = _mcp(user)
    [mcp_row] = mcp_list["heinzelmaennchen"]
    assert mcp_row["cost_today"] == mcp_show["cost_today"] == usd, (mcp_row, mcp_show)
    assert mcp_show["cost_month"]["total"] == usd
    page_list, page_show = (_words(html) for html in _page(user))
    assert f"today {said}" in page_list, page_list
    assert f"today {said}" in page_show, page_show
    assert f"this month {said}" in page_show, page_show


def test_every_surface_shows_the_same_spend_with_a_turn_open_and_ended(buyer: User) -> None:
    """A turn ended (one request, W) and a second held at the provider (its reservation,
    W, counted as the cap counts it): 2 W on every surface; once it ended, still 2 W."""
    _create(buyer)
    gate, second = threading.Event(), threading.Event()
    meter = _meter(buyer, lambda body, n: Outcome(DRAFT), gate=gate)
    meter.arrived = [threading.Event(), second]
    gate.set()
    woke = buyer.hz("heinzel", "wake", "notes-digest")
    assert woke.returncode == 0, woke.stderr
    assert f", {usd_text(float(W))} USD" in woke.stdout, woke.stdout  # wake's line, same rule
    _agree(buyer, float(W))
    gate.clear()
    held = forkhz.Popen(
        [HZ, "heinzel", "wake", "notes-digest"],
        cwd=buyer.folder,
        env=buyer.env,
        stdout=forkhz.subprocess.PIPE,
        stderr=forkhz.subprocess.PIPE,
        text=True,
    )
    try:
        assert second.wait(120), "the second request never reached the provider"
        _agree(buyer, float(2 * W))
    finally:
        gate.set()
        held.communicate(timeout=120)
    assert held.returncode == 0
    _agree(buyer, float(2 * W))


def test_no_float_dust_reaches_json(buyer: User, tmp_path: Path) -> None:
    """Three requests' spend summed in floats (0.1 + 0.2 style dust) reads as its rounded
    figure in ``--json`` and MCP, as the text shows it."""
    config = Path(buyer.env["HZ_CONFIG"])
    config.write_text(
        '[heinzel.prices]\n"gpt-4o-mini" = {input = 0.0, output = 0.1}\n', encoding="utf-8"
    )
    _create(buyer)
    _meter(buyer, lambda body, n: Outcome(DRAFT))
    for _ in range(3):
        assert buyer.hz("heinzel", "wake", "notes-digest").returncode == 0
    [row] = json.loads(buyer.hz("heinzel", "list", "--json").stdout)
    assert row["cost_today"] == round(row["cost_today"], 9), row["cost_today"]
    assert len(repr(row["cost_today"])) <= 12, row["cost_today"]
