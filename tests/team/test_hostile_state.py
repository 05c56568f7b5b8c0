"""A hostile or broken ``hz/state`` or lease ref degrades to a notice, never a block
(docs/team.md, "A hostile or broken hz/state")."""

from __future__ import annotations

import json
import os
import subprocess
from datetime import timedelta
from pathlib import Path

from heinzel.team.receipts import team_id

from .test_claims import _leases, _set_lease
from .test_two_machines import START, Two, finished_slots, receipts, ts

TEAM = team_id("daily-digest")
MONDAY = ts(START + timedelta(hours=9)).replace("Z", ".000Z")
TUESDAY = ts(START + timedelta(days=1, hours=9)).replace("Z", ".000Z")
WEDNESDAY = ts(START + timedelta(days=2, hours=9)).replace("Z", ".000Z")
_GIT = {
    "GIT_AUTHOR_NAME": "x",
    "GIT_AUTHOR_EMAIL": "",
    "GIT_COMMITTER_NAME": "x",
    "GIT_COMMITTER_EMAIL": "",
    "PATH": os.environ["PATH"],
}


def _git(remote: Path, *args: str, stdin: str | None = None, **env: str) -> str:
    return subprocess.run(
        ["git", "-C", str(remote), *args],
        input=stdin,
        capture_output=True,
        text=True,
        check=True,
        env={**_GIT, **env},
    ).stdout.strip()


def _append(remote: Path, path: str, records: list[dict[str, object]]) -> None:
    """Push ``records`` onto ``path`` of the remote's hz/state, as a hostile member would."""
    tip = _git(remote, "rev-parse", "refs/heads/hz/state")
    index = {"GIT_INDEX_FILE": str(remote / "hostile.index")}
    _git(remote, "read-tree", tip, **index)
    try:
        old = _git(remote, "show", f"{tip}:{path}") + "\n"
    except subprocess.CalledProcessError:
        old = ""
    text = old + "".join(json.dumps(r, sort_keys=True) + "\n" for r in records)
    blob = _git(remote, "hash-object", "-w", "--stdin", stdin=text)
    _git(remote, "update-index", "--add", "--cacheinfo", f"100644,{blob},{path}", **index)
    tree = _git(remote, "write-tree", **index)
    commit = _git(remote, "commit-tree", tree, "-p", tip, "-m", "hostile")
    _git(remote, "update-ref", "refs/heads/hz/state", commit)


def _forged(by: str, token: int, key: str, at: str, n: int) -> dict[str, object]:
    return {
        "id": f"rc-{n:024d}",
        "kind": "turn.finished",
        "team": TEAM,
        "at": at,
        "by": by,
        "token": token,
        "key": key,
        "cause": "schedule",
        "disposition": "skipped",
        "cost_usd": 0.0,
        "contract_fp": None,
        "input_fps": [],
        "draft_hash": None,
    }


def test_forged_receipts_are_quarantined_and_never_block_a_push(tmp_path: Path, two: Two) -> None:
    """After Monday's slot, a receipt by a handle off the roster and a forged Tuesday
    receipt with a token no lease ever had land on hz/state. On Tuesday Ana's daemon still
    runs Tuesday's slot (the forged receipt does not count) and pushes its receipt (no
    HZH302), and `hz team lint` and `hz team status` name each quarantined line with who
    and what."""
    remote, ana, _ben = two
    ana.hz(START + timedelta(hours=12), "system", "daemon", "tick")
    day = TUESDAY[:10]
    _append(
        remote,
        f"{TEAM}/{day}.jsonl",
        [
            _forged("mallory", 1, f"{TEAM}@{MONDAY}", TUESDAY, 1),
            _forged("ben", 99, f"{TEAM}@{TUESDAY}", TUESDAY, 2),
        ],
    )
    tuesday = START + timedelta(days=1, hours=12)
    report = json.loads(ana.hz(tuesday, "system", "daemon", "tick", "--json").stdout)
    assert report["errors"] == []
    assert sorted(ana.started()) == [MONDAY, TUESDAY]
    mine = [r for r in receipts(remote) if r["kind"] == "turn.finished" and r["by"] == "ana"]
    assert sorted(str(r["key"]) for r in mine) == [f"{TEAM}@{MONDAY}", f"{TEAM}@{TUESDAY}"]
    lint = ana.hz(tuesday, "team", "lint", "--json", check=False)
    assert lint.returncode == 1
    problems = json.loads(lint.stdout)["problems"]
    assert len(problems) == 2
    assert any("mallory" in p and "roster" in p for p in problems)
    assert any("ben" in p and "token 99" in p for p in problems)
    status = json.loads(ana.hz(tuesday, "team", "status", "--json").stdout)
    assert [q["by"] for q in status["quarantined"]] == ["mallory", "ben"]
    assert "2 line(s) quarantined" in ana.hz(tuesday, "team", "status").stdout


def test_a_deleted_lease_never_lowers_the_token(tmp_path: Path, two: Two) -> None:
    """Ana runs Monday (token 1), Ben runs Tuesday while she is away (token 2), then the
    lease ref is deleted: Ana's Wednesday take starts from the highest token on hz/state
    (3, not 1), so her receipts are not stale and the branch lints clean."""
    remote, ana, ben = two
    ana.hz(START + timedelta(hours=12), "system", "daemon", "tick")
    ben.hz(START + timedelta(days=1, hours=12), "system", "daemon", "tick")
    assert ben.started() == [TUESDAY]
    _git(remote, "update-ref", "-d", f"refs/hz/lease/{TEAM}")
    wednesday = START + timedelta(days=2, hours=12)
    report = json.loads(ana.hz(wednesday, "system", "daemon", "tick", "--json").stdout)
    assert report["errors"] == []
    assert [lease["token"] for lease in _leases(remote)] == [3]
    assert finished_slots(remote) == [MONDAY, TUESDAY, WEDNESDAY]
    lint = ana.hz(wednesday, "team", "lint", "--json")
    assert json.loads(lint.stdout) == {"ok": True, "problems": []}


def test_a_lease_expiring_in_2099_is_treated_as_expired(tmp_path: Path, two: Two) -> None:
    """A hand-set lease held by Ben until 2099 does not freeze the Heinzelmännchen: its
    expiry is past `now + 2 x interval + max_skew`, so Ana takes it with the next token,
    runs Monday's slot, and the tick says why in its notices."""
    remote, ana, _ben = two
    lease = {"holder": "ben", "expiry": "2099-01-01T00:00:00.000Z", "token": 4}
    _set_lease(remote, TEAM, {**lease, "owner_seen": None, "open": []})
    monday = START + timedelta(hours=12)
    report = json.loads(ana.hz(monday, "system", "daemon", "tick", "--json").stdout)
    assert ana.started() == [MONDAY]
    assert any("2099" in n and "expired" in n for n in report["notices"])
    assert [(lease["holder"], lease["token"]) for lease in _leases(remote)] == [("ana", 5)]


def test_a_rewritten_state_is_reported_and_my_receipts_go_again(tmp_path: Path, two: Two) -> None:
    """A force-push replaces hz/state with a commit that does not descend from the one
    Ana's daemon fetched last: her next tick reports the rewrite and pushes her own
    dropped receipt (Monday's) again."""
    remote, ana, _ben = two
    ana.hz(START + timedelta(hours=12), "system", "daemon", "tick")
    assert finished_slots(remote) == [MONDAY]
    tree = _git(remote, "hash-object", "-t", "tree", "-w", "--stdin", stdin="")
    _git(remote, "update-ref", "refs/heads/hz/state", _git(remote, "commit-tree", tree, "-m", "x"))
    assert finished_slots(remote) == []
    evening = START + timedelta(hours=15)
    report = json.loads(ana.hz(evening, "system", "daemon", "tick", "--json").stdout)
    assert any("rewritten" in n for n in report["notices"])
    assert finished_slots(remote) == [MONDAY]
    assert ana.started() == [MONDAY]


def test_a_newer_members_receipts_are_kept_not_counted_with_one_notice(
    tmp_path: Path,
    two: Two,
) -> None:
    """Ben's newer hz writes receipts of a later version (``v: 2``) onto hz/state, one of
    them for Tuesday's slot: Ana's tick keeps them (the branch is not rewritten), counts
    none (she still runs Tuesday's slot), and says once which member runs a newer hz;
    `hz team status` names each line as written by a newer hz."""
    remote, ana, _ben = two
    ana.hz(START + timedelta(hours=12), "system", "daemon", "tick")
    day = TUESDAY[:10]
    newer = [
        {**_forged("ben", 1, f"{TEAM}@{TUESDAY}", TUESDAY, n), "v": 2, "lane": "x"} for n in (3, 4)
    ]
    _append(remote, f"{TEAM}/{day}.jsonl", newer)
    tip = _git(remote, "rev-parse", "refs/heads/hz/state")
    tuesday = START + timedelta(days=1, hours=12)
    report = json.loads(ana.hz(tuesday, "system", "daemon", "tick", "--json").stdout)
    assert report["errors"] == []
    assert sorted(ana.started()) == [MONDAY, TUESDAY]
    said = [n for n in report["notices"] if "newer hz" in n]
    assert said == [
        "team: ben runs a newer hz (receipt v2; this hz reads v1): its receipts are kept "
        "on hz/state and not counted here; upgrade hz"
    ]
    kept = _git(remote, "show", f"refs/heads/hz/state:{TEAM}/{day}.jsonl")
    assert kept.count('"v": 2') == 2
    assert _git(remote, "merge-base", "--is-ancestor", tip, "refs/heads/hz/state") == ""
    status = json.loads(ana.hz(tuesday, "team", "status", "--json").stdout)
    assert [q["problem"] for q in status["quarantined"]] == [
        "written by a newer hz (receipt v2; this hz reads v1)"
    ] * 2
