"""The lists ``hz mcp`` answers before the SDK loads (`heinzel/mcp/tools.json`), taken from
the SDK's own live answers: `sdk_listings` serves a real `build_server` through the same
stdio path `hz mcp` uses (`heinzel.mcp.frames.serve_claimed`), once per protocol version a
client may negotiate, and keeps each list it answered.

``.venv/bin/python -m tests.hz_mcp.listing`` writes the file again after a tool changes;
`tests/hz_mcp/test_mcp_hello.py` fails while the file and the SDK's answers differ.
"""

from __future__ import annotations

import json
import os
import threading
from typing import Any

from heinzel.mcp.frames import serve_claimed
from heinzel.mcp.hello import HANDSHAKE_VERSIONS, LISTINGS, LISTS
from heinzel.mcp.server import build_server


def sdk_listings() -> dict[str, Any]:
    """What tools.json holds: for each group of protocol versions the SDK answers alike,
    its result to each of `LISTS` (those it answers with a result at that version)."""
    server = build_server(None)
    groups: list[dict[str, Any]] = []
    for version in HANDSHAKE_VERSIONS:
        hello = {
            "protocolVersion": version,
            "capabilities": {},
            "clientInfo": {"name": "listing", "version": "0"},
        }
        frames: list[dict[str, Any]] = [
            {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": hello},
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            *({"jsonrpc": "2.0", "id": n + 1, "method": m} for n, m in enumerate(LISTS)),
        ]
        answers = _served(server, frames)
        results = {
            method: answers[n + 1]["result"]
            for n, method in enumerate(LISTS)
            if "result" in answers.get(n + 1, {})
        }
        same = next((g for g in groups if g["results"] == results), None)
        if same is None:
            groups.append({"versions": [version], "results": results})
        else:
            same["versions"].append(version)
    return {"listings": groups}


def _served(server: Any, frames: list[dict[str, Any]]) -> dict[int, dict[str, Any]]:
    """The SDK's answers to ``frames`` by id, the input kept open until each request is
    answered (closed earlier, the SDK may end with a request still unanswered)."""
    asked = sum(1 for f in frames if "id" in f)
    in_read, in_write = os.pipe()
    out_read, out_write = os.pipe()
    with (
        os.fdopen(in_read, "rb") as wire_in,
        os.fdopen(out_write, "wb") as wire_out,
        os.fdopen(out_read, "rb") as replies,
    ):
        serving = threading.Thread(target=serve_claimed, args=(server, wire_in, wire_out))
        serving.start()
        with os.fdopen(in_write, "wb") as sending:
            sending.write(b"".join(json.dumps(f).encode() + b"\n" for f in frames))
            sending.flush()
            answers = [json.loads(replies.readline()) for _ in range(asked)]
        serving.join()
    return {answer["id"]: answer for answer in answers}


def render(listings: dict[str, Any]) -> str:
    return json.dumps(listings, ensure_ascii=False, indent=1, sort_keys=True) + "\n"


if __name__ == "__main__":
    LISTINGS.write_text(render(sdk_listings()), encoding="utf-8")
    print(f"wrote {LISTINGS}")
