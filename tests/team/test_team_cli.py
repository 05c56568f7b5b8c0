"""``hz team`` as a person runs it when the repository is wrong: the coded error says git's
reason, not the advice git prints after it."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from tests import forkhz

from .test_two_machines import Two


def test_a_repository_that_is_not_one_names_gits_reason(tmp_path: Path) -> None:
    """`[team] repository` naming a folder that holds no repository: `hz team lint` exits 1
    with HZH301 and git's own reason ("does not appear to be a git repository")."""
    config = tmp_path / "config.toml"
    config.write_text(
        f'[team]\nrepository = "{tmp_path / "missing.git"}"\nhandle = "ana"\n', encoding="utf-8"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("HZ_")}
    env.update(HZ_HOME=str(tmp_path / "home"), HZ_CONFIG=str(config))
    done = forkhz.run(
        [sys.executable, "-m", "heinzel", "team", "lint"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1
    first, hint = done.stderr.splitlines()
    assert first.startswith("HZH301: the team repository: git fetch failed (fatal: ")
    assert "does not appear to be a git repository" in first
    assert hint.startswith("hint: ")


def test_an_asked_turn_runs_only_where_the_lease_is(tmp_path: Path, two: Two) -> None:
    """`hz heinzel wake` of a team Heinzelmännchen on Ben's machine while Ana's holds the
    lease is refused (HZH304, naming the holder) and starts no turn; on Ana's it runs."""
    from datetime import timedelta

    from .test_two_machines import START

    _, ana, ben = two
    now = START + timedelta(hours=12)
    ana.hz(now, "system", "daemon", "tick")
    ben.hz(now, "system", "daemon", "tick")
    refused = ben.hz(now, "heinzel", "wake", "daily-digest", check=False)
    assert refused.returncode == 1
    assert refused.stderr.startswith("HZH304: ") and "ana" in refused.stderr
    spines = list((ben.root / "home" / "heinzel").glob("*/session.jsonl"))
    assert not any('"turn.started"' in s.read_text(encoding="utf-8") for s in spines)
    asked = ana.hz(now, "heinzel", "wake", "daily-digest", check=False)
    assert "HZH304" not in asked.stderr


def test_a_refused_receipt_that_can_be_pushed_again_is_offered_and_goes(
    tmp_path: Path,
    two: Two,
) -> None:
    """A receipt refused because its handle was not on this machine's roster is listed by
    `hz team status` with its reason, not offered while the roster still refuses it, and
    once the handle is added, offered, put back by `hz team repush` and pushed by the
    next tick."""
    import json
    from datetime import timedelta

    from .test_two_machines import START, receipts

    remote, ana, _ben = two
    now = START + timedelta(hours=12)
    ana.hz(now, "system", "daemon", "tick")
    [mine] = [r for r in receipts(remote) if r["kind"] == "turn.finished"]
    refused = ana.root / "home" / "team" / "refused"
    refused.mkdir(mode=0o700)
    amended = {  # a new member's approval, needing no lease
        **{k: mine[k] for k in ("team", "at")},
        "id": "rc-" + "9" * 24,
        "kind": "contract.amended",
        "by": "cai",
        "token": 0,
        "key": f"{mine['team']}@v1",
        "version": 1,
        "fingerprint": "sha256:" + "a" * 64,
    }
    (refused / "000000000009.json").write_text(json.dumps(amended), encoding="utf-8")
    (refused / "000000000009.reason").write_text("by is not a roster handle", encoding="utf-8")
    status = json.loads(ana.hz(now, "team", "status", "--json").stdout)
    assert status["refusals"] == [
        {"file": "000000000009.json", "reason": "by is not a roster handle", "repushable": False}
    ]
    with ana.config.open("a", encoding="utf-8") as config:
        config.write('members = ["ana", "ben", "cai"]\n')
    assert "hz team repush" in ana.hz(now, "team", "status").stdout
    ana.hz(now, "team", "repush")
    assert not list(refused.glob("*.json"))
    ana.hz(now + timedelta(hours=1), "system", "daemon", "tick")
    assert "rc-" + "9" * 24 in {r["id"] for r in receipts(remote)}
