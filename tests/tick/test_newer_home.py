"""An older hz never misreads a newer home (docs/spine.md, "An older hz and a newer home"):
a spine holding a turn pinned to a later vocabulary is read and marked, never written."""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from pathlib import Path

from ledger.event import canonical
from ledger.spine import Spine
from machines.vocabulary import VOCABULARY_VERSION

from .homes import hz, make_home


def later_turn(root: Path, heinzel: str) -> bytes:
    """What a newer hz leaves: a turn pinned to vocabulary 99 ending in a kind this hz has
    never heard of, chained to the spine as the ledger chains every line; the bytes after."""
    spine_dir = root / "home" / "heinzel" / heinzel
    at = datetime(2026, 11, 2, 9, 0, tzinfo=UTC)
    with Spine.open(spine_dir, clock=lambda: at) as spine:
        spine.append(
            "turn.started",
            {"cause": "asked", "pins": {"contract_version": 1, "vocabulary": 99}},
            turn="t-future",
            key=f"{heinzel}@rq-future",
        )
        spine.append("turn.handed_over", {"to": "somewhere"}, turn="t-future")
    return (spine_dir / "session.jsonl").read_bytes()


def test_a_later_vocabulary_is_read_and_never_written(tmp_path: Path) -> None:
    """show and list read it marked as a newer hz's; wake, pause, answer, retry and chat
    refuse with HZH460 naming both versions and the fix, exit 1, the spine's bytes
    untouched; the tick skips it with one notice and wakes the other."""
    root, (future, other) = make_home(tmp_path, 2)
    written = later_turn(root, future)
    spine = root / "home" / "heinzel" / future / "session.jsonl"

    shown = hz(root, "heinzel", "show", "report-0")
    assert shown.returncode == 0, shown.stderr
    assert f"written by a newer hz (vocabulary 99; this hz knows {VOCABULARY_VERSION})" in (
        shown.stdout
    )
    as_json = json.loads(hz(root, "heinzel", "show", "report-0", "--json").stdout)
    assert as_json["newer"] == {"vocabulary": 99, "known": VOCABULARY_VERSION}
    listed = hz(root, "heinzel", "list", "--json")
    rows = {r["name"]: r for r in json.loads(listed.stdout)}
    assert [n["reason"] for n in rows["report-0"]["notices"]] == ["newer"]
    assert rows["report-1"]["notices"] == []
    assert "notice: report-0: written by a newer hz (vocabulary 99" in (
        hz(root, "heinzel", "list").stdout
    )
    assert hz(root, "heinzel", "verify", "report-0").returncode == 0
    assert hz(root, "heinzel", "report", "report-0").returncode == 0

    for args in (
        ("heinzel", "wake", "report-0"),
        ("heinzel", "pause", "report-0"),
        ("heinzel", "retry", "report-0", "shorter"),
        ("heinzel", "chat", "report-0", "shorter please"),
        ("heinzel", "answer", "report-0", "yes"),
        ("heinzel", "stop", "report-0"),
        ("heinzel", "forget", "report-0", "t-future"),
        ("approve", "report-0"),
    ):
        refused = hz(root, *args)
        assert refused.returncode == 1, (args, refused.stdout, refused.stderr)
        assert refused.stderr.startswith("HZH460: report-0 was written by a newer hz "), (
            args,
            refused.stderr,
        )
        assert f"vocabulary 99; this hz knows {VOCABULARY_VERSION}" in refused.stderr
        assert "upgrade hz" in refused.stderr
        assert spine.read_bytes() == written, args

    ticked = hz(root, "system", "daemon", "tick", "--json")
    assert ticked.returncode == 0, ticked.stderr
    report = json.loads(ticked.stdout)
    assert [w["id"] for w in report["woken"]] == [other]
    assert [n for n in report["notices"] if "report-0" in n] == [
        f"report-0: skipped, written by a newer hz (vocabulary 99; this hz knows "
        f"{VOCABULARY_VERSION}): upgrade hz"
    ]
    assert spine.read_bytes() == written

    doctor = hz(root, "system", "doctor", "--json")
    assert doctor.returncode == 1
    (versions,) = [c for c in json.loads(doctor.stdout)["checks"] if c["name"] == "versions"]
    assert (versions["ok"], versions["code"]) == (False, "HZH460")
    assert "a newer hz wrote report-0 (vocabulary 99)" in versions["detail"]
    assert spine.read_bytes() == written


def test_version_prints_the_spine_versions(tmp_path: Path) -> None:
    """hz --version names the vocabulary and the envelope beside the package version; the
    doctor of a home of this hz's own says so."""
    root, _ = make_home(tmp_path, 1)
    done = hz(root, "--version")
    assert done.returncode == 0
    assert done.stdout.endswith(f"(spine vocabulary {VOCABULARY_VERSION}, envelope v1)\n")
    doctor = json.loads(hz(root, "system", "doctor", "--json").stdout)
    (versions,) = [c for c in doctor["checks"] if c["name"] == "versions"]
    assert versions["ok"]
    assert versions["detail"].startswith(f"vocabulary {VOCABULARY_VERSION}, envelope v1;")


def test_a_later_envelope_is_never_written_after(tmp_path: Path) -> None:
    """A line of envelope v2 at a spine's end: list and show answer from the index, wake
    and pause exit 1 with HZL070 naming both versions, the tick goes on with the others
    (coded, no containment line appended), verify names the line as a newer hz's; the
    spine's bytes stay as they were."""
    root, (future, other) = make_home(tmp_path, 2)
    spine = root / "home" / "heinzel" / future / "session.jsonl"
    last = spine.read_bytes().splitlines()[-1]
    line = {
        "v": 2,
        "seq": json.loads(last)["seq"] + 1,
        "ts": "2026-11-02T09:05:00.000Z",
        "prev": hashlib.sha256(last).hexdigest(),
        "turn": None,
        "kind": "heinzel.paused",
        "key": None,
        "data": {},
    }
    with spine.open("ab") as file:
        file.write(canonical(line).encode() + b"\n")
    written = spine.read_bytes()

    assert "report-0" in hz(root, "heinzel", "list").stdout
    assert hz(root, "heinzel", "show", "report-0").returncode == 0
    for args in (("heinzel", "wake", "report-0"), ("heinzel", "pause", "report-0")):
        refused = hz(root, *args)
        assert refused.returncode == 1, args
        assert refused.stderr.startswith("HZL070: the line at byte "), refused.stderr
        assert "(envelope v2; this hz reads v1)" in refused.stderr
    ticked = json.loads(hz(root, "system", "daemon", "tick", "--json").stdout)
    assert [w["id"] for w in ticked["woken"]] == [other]
    assert [(e["id"], e["code"]) for e in ticked["errors"]] == [(future, "HZL070")]
    verified = hz(root, "heinzel", "verify", "report-0")
    assert verified.returncode == 1
    assert "written by a newer hz" in verified.stdout
    assert spine.read_bytes() == written
