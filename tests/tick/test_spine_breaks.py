"""A break in the middle of a spine is contained, as docs/spine.md says, by real ``hz``
(issue 38, smaller items): a flipped byte in an old line stops no Heinzelmännchen for good
(it failed HZL030 on every wake and nothing recorded it), and a ``prev`` edited in the
middle is recorded as contained once ``hz heinzel verify`` finds it (it never was)."""

from __future__ import annotations

import json
from pathlib import Path

from ledger.reading import read_events
from ledger.verify import verify
from tests.tick.homes import hz, make_home, tick, turns


def _spine(root: Path, heinzel_id: str) -> Path:
    return root / "home" / "heinzel" / heinzel_id / "session.jsonl"


def _edit_line(spine: Path, kind: str, edit: bytes) -> tuple[int, int]:
    """Replace the first line of ``kind`` by ``edit`` applied to it (its seq and byte
    offset returned); the file's other lines stay as they are."""
    lines = spine.read_bytes().splitlines(keepends=True)
    at = next(n for n, line in enumerate(lines) if json.loads(line)["kind"] == kind)
    offset = sum(len(line) for line in lines[:at])
    seq = json.loads(lines[at])["seq"]
    lines[at] = edit + lines[at][len(edit) :]
    spine.write_bytes(b"".join(lines))
    return seq, offset


def _verify(root: Path) -> tuple[int, list[dict[str, object]]]:
    done = hz(root, "heinzel", "verify", "report-0", "--json")
    return done.returncode, json.loads(done.stdout)[0]["breaks"]


def test_a_flipped_byte_in_an_old_line_is_contained_and_later_wakes_go_on(
    tmp_path: Path,
) -> None:
    """The first byte of an ended turn's line flipped (``{`` to ``z``: no JSON): the wake
    that meets it records the break (``spine.break_contained``) and says so with HZL030;
    every later wake drafts, the tick reports no error; verify still reports the break,
    contained."""
    root, ids = make_home(tmp_path, 1)
    assert hz(root, "heinzel", "wake", "report-0").returncode == 0
    spine = _spine(root, ids[0])
    seq, offset = _edit_line(spine, "model.request", b"z")
    first = hz(root, "heinzel", "wake", "report-0")
    assert (first.returncode, first.stderr.split(":")[0]) == (1, "HZL030"), first.stderr
    assert "now recorded" in first.stderr and "run the command again" in first.stderr
    recorded = [e.data for e in read_events(spine) if e.kind == "spine.break_contained"]
    assert recorded == [
        {"seq": seq, "offset": offset, "reason": "invalid-json", "detail": recorded[0]["detail"]}
    ]
    for _ in range(2):
        again = hz(root, "heinzel", "wake", "report-0")
        assert again.returncode == 0, again.stderr
    assert [t["disposition"] for t in turns(root, "report-0")].count("drafted") >= 2
    assert tick(root)["errors"] == []
    status, breaks = _verify(root)
    assert status == 1
    assert [(b["seq"], b["reason"], b["contained"]) for b in breaks] == [
        (seq, "invalid-json", True)
    ]
    assert len([e for e in read_events(spine) if e.kind == "spine.break_contained"]) == 1


def test_a_prev_edited_in_the_middle_is_recorded_as_contained_by_verify(tmp_path: Path) -> None:
    """A ``prev`` field edited in an old line: verify reports the prev-mismatch and
    records it (``spine.break_contained``, once, however often verify runs); a wake goes
    on; the chain stays not ok."""
    root, ids = make_home(tmp_path, 1)
    assert hz(root, "heinzel", "wake", "report-0").returncode == 0
    spine = _spine(root, ids[0])
    line = next(json.loads(x) for x in spine.read_bytes().splitlines() if b"model.request" in x)
    prev = str(line["prev"])
    edited = ("0" if prev[0] != "0" else "1") + prev[1:]
    spine.write_bytes(spine.read_bytes().replace(prev.encode(), edited.encode(), 1))
    assert verify(spine).uncontained()[0].reason == "prev-mismatch"
    for _ in range(2):
        status, breaks = _verify(root)
        assert status == 1
        assert [(b["seq"], b["reason"], b["contained"]) for b in breaks] == [
            (line["seq"], "prev-mismatch", True)
        ]
    recorded = [e.data for e in read_events(spine) if e.kind == "spine.break_contained"]
    assert [(r["seq"], r["reason"]) for r in recorded] == [(line["seq"], "prev-mismatch")]
    assert hz(root, "heinzel", "wake", "report-0").returncode == 0
    assert verify(spine).uncontained() == []
    said = hz(root, "heinzel", "verify", "report-0")
    assert said.returncode == 1
    assert f"seq {line['seq']}: prev-mismatch" in said.stdout and "(contained)" in said.stdout
