"""Drafts in the user's document: one live draft, placed where asked, left clean (issue 13)."""

from __future__ import annotations

import json
import os
import stat
import subprocess
from pathlib import Path
from typing import Any, cast

from starlette.testclient import TestClient

from heinzel.app import App
from heinzel.web.actions import spawn_verb
from heinzel.web.server import create_app
from tests.hz_mcp.client import session
from tests.loop.conftest import Hz
from tests.web.conftest import ORIGIN, TOKEN


def page_approve(
    env: dict[str, str], draft: dict[str, str]
) -> tuple[dict[str, Any], list[subprocess.Popen[bytes]]]:
    """The page's approve button for ``draft`` (the web head over the home, JSON asked),
    and the child processes it started (`heinzel.web.actions`)."""
    children: list[subprocess.Popen[bytes]] = []

    def start_verb(root: Path, hid: str, verb: str, hint: str, rid: str | None) -> None:
        children.append(spawn_verb(root, hid, verb, hint, env, request_id=rid))

    web = create_app(
        lambda: App.from_environment(env["HZ_HOME"], env),
        TOKEN,
        hosts=["testserver"],
        idle_seconds=0,
        start_verb=start_verb,
    )
    with TestClient(web, follow_redirects=False) as client:
        assert client.get(f"/auth?token={TOKEN}").status_code == 303
        page = client.get(f"/h/{draft['heinzel']}").text
        csrf = page.split('name="csrf" content="')[1].split('"')[0]
        answer = client.post(
            f"/h/{draft['heinzel']}/approve",
            data={"item": draft["key"], "csrf": csrf},
            headers={"Origin": ORIGIN, "Accept": "application/json"},
        )
        assert answer.status_code == 200, answer.text
        return answer.json(), children


class TestOneLiveDraft:
    """Findings 1 and 2 through the `hz` executable."""

    def test_wakes_keep_one_live_draft(self, approved: Hz, folder: Path) -> None:
        """Three wakes leave one tagged section in the document, and `hz drafts` lists one."""
        for _ in range(3):
            assert approved("heinzel", "wake", "notes-digest").code == 0
        text = (folder / "report.md").read_text(encoding="utf-8")
        assert text.count("🧝 DRAFT") == 1 and text.count("hz:draft key=") == 1
        assert text.startswith("# Report\n")
        listed = approved("drafts").out.strip().splitlines()
        assert len(listed) == 3  # the header, one draft, and its sentence
        assert listed[2].startswith("notes-digest: a draft waits for your approval in ")

    def test_approved_draft_is_left_clean_and_not_redrafted(
        self, approved: Hz, folder: Path
    ) -> None:
        """Wake, approve, tick: hz's comments go, and no second identical draft is placed."""
        assert approved("heinzel", "wake", "notes-digest").code == 0
        assert approved("approve", "notes-digest").code == 0
        ticked = approved("system", "daemon", "tick")
        assert ticked.code == 0, ticked.err
        assert "source-changed" not in ticked.out
        text = (folder / "report.md").read_text(encoding="utf-8")
        assert "<!-- hz:" not in text and "🧝 DRAFT" not in text
        assert "ship the rounding fix" in text
        again = approved("system", "daemon", "tick")
        assert "source-changed" not in again.out
        assert "🧝 DRAFT" not in (folder / "report.md").read_text(encoding="utf-8")

    def test_a_changed_source_still_wakes(self, approved: Hz, folder: Path) -> None:
        """After the approval, a real change of notes.txt does wake source-changed."""
        assert approved("heinzel", "wake", "notes-digest").code == 0
        (folder / "notes.txt").write_text("something new\n", encoding="utf-8")
        ticked = approved("system", "daemon", "tick")
        assert "source-changed" in ticked.out


class TestPlacement:
    """``outputs.<name>.place`` and a document that does not exist yet."""

    def test_top_places_below_the_title(self, hz: Hz, folder: Path) -> None:
        """``place: top`` puts the draft above what the document already holds."""
        contract = folder / "digest.prose.md"
        contract.write_text(
            contract.read_text(encoding="utf-8").replace(
                '{asset: "file:report.md"}', '{asset: "file:report.md", place: top}'
            ),
            encoding="utf-8",
        )
        (folder / "report.md").write_text("# Report\n\n## Older\n\n- done\n", encoding="utf-8")
        assert hz("heinzel", "new", "--from", "digest.prose.md").code == 0
        assert hz("approve", "notes-digest").code == 0
        assert hz("heinzel", "wake", "notes-digest").code == 0
        text = (folder / "report.md").read_text(encoding="utf-8")
        assert text.index("🧝 DRAFT") < text.index("## Older")

    def test_a_bad_place_is_hzc073(self, hz: Hz, folder: Path) -> None:
        """``place: middle`` is refused at `new` with HZC073 and the forms it takes."""
        contract = folder / "digest.prose.md"
        contract.write_text(
            contract.read_text(encoding="utf-8").replace(
                '{asset: "file:report.md"}', '{asset: "file:report.md", place: middle}'
            ),
            encoding="utf-8",
        )
        done = hz("heinzel", "new", "--from", "digest.prose.md")
        assert done.code == 1 and done.err.startswith("HZC073")

    def test_missing_document_is_created_on_the_first_draft(
        self, approved: Hz, folder: Path
    ) -> None:
        """No report.md yet: the first wake creates it, 0600, with the draft."""
        (folder / "report.md").unlink()
        assert approved("heinzel", "wake", "notes-digest").code == 0
        report = folder / "report.md"
        assert "🧝 DRAFT" in report.read_text(encoding="utf-8")
        assert stat.S_IMODE(report.stat().st_mode) == 0o600


class TestSuperseded:
    """Approving a draft a newer one replaced."""

    def test_approving_a_replaced_key_names_the_newer_one(self, approved: Hz) -> None:
        """`hz approve KEY` of a replaced draft is HZH250 with the command that approves."""
        approved("heinzel", "wake", "notes-digest")
        [first] = json.loads(approved("drafts", "--json").out)
        approved("heinzel", "wake", "notes-digest")
        done = approved("approve", first["key"])
        assert done.code == 1
        assert done.err.startswith("HZH250: the draft ")
        assert "hint: approve the newer one: `hz approve notes-digest`" in done.err


class TestOutputsCheckedUpFront:
    """A draft that could never be placed is refused or warned about before any turn."""

    def test_a_missing_folder_is_refused_at_new(self, hz: Hz, folder: Path) -> None:
        """`new` of a contract drafting into a folder that does not exist: HZH251 and the fix."""
        contract = folder / "digest.prose.md"
        contract.write_text(
            contract.read_text(encoding="utf-8").replace("file:report.md", "file:no/r.md"),
            encoding="utf-8",
        )
        done = hz("heinzel", "new", "--from", "digest.prose.md")
        assert done.code == 1
        assert done.err.startswith("HZH251: output section: the folder ")
        assert "hint: create it (mkdir -p " in done.err
        assert hz("heinzel", "list").out.startswith("no Heinzelmännchen")

    def test_a_folder_removed_before_approve_is_refused(self, hz: Hz, folder: Path) -> None:
        """The folder gone between `new` and `approve`: HZH251 at approve, still proposed."""
        (folder / "out").mkdir()
        contract = folder / "digest.prose.md"
        contract.write_text(
            contract.read_text(encoding="utf-8").replace("file:report.md", "file:out/r.md"),
            encoding="utf-8",
        )
        assert hz("heinzel", "new", "--from", "digest.prose.md").code == 0
        (folder / "out").rmdir()
        done = hz("approve", "notes-digest")
        assert done.code == 1 and done.err.startswith("HZH251")
        shown = json.loads(hz("heinzel", "show", "notes-digest", "--json").out)
        assert shown["state"] == "proposed"

    def test_an_asset_no_adapter_writes_is_warned_at_approve(self, hz: Hz, folder: Path) -> None:
        """A ``doc:`` output: approve says HZH252 and how to write it as a file."""
        contract = folder / "digest.prose.md"
        contract.write_text(
            contract.read_text(encoding="utf-8").replace("file:report.md", "doc:team/report"),
            encoding="utf-8",
        )
        assert hz("heinzel", "new", "--from", "digest.prose.md").code == 0
        done = hz("approve", "notes-digest")
        assert "warning: HZH252: output section: no adapter writes doc: assets" in done.out


class TestSameTextTwice:
    """Issue 38, item 2: approvals keyed by the draft, not its text."""

    def test_a_quiet_week_approved_in_the_document_is_seen(
        self, approved: Hz, folder: Path
    ) -> None:
        """Two drafts with the same text (a quiet week), each approved by deleting its tag
        line: the tick learns from each once, under a key of its own, and `hz drafts`
        lists neither after; a further tick wakes nothing."""
        report = folder / "report.md"
        learned: list[dict[str, object]] = []
        for _ in range(2):
            assert approved("heinzel", "wake", "notes-digest").code == 0
            [draft] = json.loads(approved("drafts", "--json").out)
            lines = report.read_text(encoding="utf-8").split("\n")
            start = next(i for i, line in enumerate(lines) if line.startswith("<!-- hz:draft"))
            end = next(i for i, line in enumerate(lines) if line.startswith("<!-- hz:end"))
            draft["text"] = "\n".join(lines[start + 1 : end]).strip()
            report.write_text(
                "\n".join(line for line in lines if not line.startswith("🧝 DRAFT")),
                encoding="utf-8",
            )
            ticked = approved("system", "daemon", "tick", "--json")
            assert ticked.code == 0, ticked.err
            [woken] = json.loads(ticked.out)["woken"]
            assert [w["cause"] for w in woken["wakes"]] == ["approval"]
            assert [e["disposition"] for e in woken["ended"]] == ["learned"]
            assert json.loads(approved("drafts", "--json").out) == []
            learned.append({"draft": draft, "key": woken["wakes"][0]["key"]})
        assert learned[0]["key"] != learned[1]["key"]
        first, second = (cast(dict[str, str], item["draft"]) for item in learned)
        assert first["text"] == second["text"] and first["key"] != second["key"]
        quiet = approved("system", "daemon", "tick", "--json")
        assert json.loads(quiet.out)["woken"] == []
        shown = json.loads(approved("heinzel", "show", "notes-digest", "--json").out)
        assert [d["state"] for d in shown["drafts"]] == ["approved", "approved"]

    def test_a_quiet_week_approved_on_the_page_is_learned_at_once(
        self, approved: Hz, hz_env: dict[str, str]
    ) -> None:
        """The page's approve button, twice, for two drafts of the same text: each time
        its child (`heinzel.web.actions` learn, a real process) runs that draft's own
        learning turn, so no tick is needed and `hz drafts` is empty after each."""
        for minute in (30, 40):
            assert approved("heinzel", "wake", "notes-digest").code == 0
            [draft] = json.loads(approved("drafts", "--json").out)
            env = {**hz_env, "HZ_NOW": f"2026-10-30T14:{minute}:00Z"}
            answer, children = page_approve(env, draft)
            assert answer["started"] is True, answer
            [child] = children
            assert child.wait(timeout=120) == 0
            assert json.loads(approved("drafts", "--json").out) == []
        shown = json.loads(approved("heinzel", "show", "notes-digest", "--json").out)
        learned = [t for t in shown["turns"] if t["cause"] == "approval"]
        assert [t["disposition"] for t in learned] == ["learned", "learned"]

    def test_a_quiet_week_approved_over_mcp_is_seen_by_the_tick(
        self, approved: Hz, hz_env: dict[str, str], folder: Path
    ) -> None:
        """An agent approves each of two same-text drafts with the `approve` tool (`hz
        mcp`, the SDK's client): the next tick learns from each, once."""
        for _ in range(2):
            assert approved("heinzel", "wake", "notes-digest").code == 0

            async def body(s: Any) -> Any:
                return await s.call_tool("approve", {"items": ["notes-digest"]})

            answer = session(dict(hz_env), folder, body)
            assert not answer.is_error, answer.content
            ticked = approved("system", "daemon", "tick", "--json")
            [woken] = json.loads(ticked.out)["woken"]
            assert [e["disposition"] for e in woken["ended"]] == ["learned"]
            assert json.loads(approved("drafts", "--json").out) == []


class TestApproveSaysWhenItLearns:
    """`hz approve` of a draft says "the next tick learns" only when it will."""

    def test_a_draft_the_tick_learned_from_is_not_promised_again(self, approved: Hz) -> None:
        """Approved and learned from: approving its key again is HZH073 naming where the
        lessons are, with no promise of a tick."""
        assert approved("heinzel", "wake", "notes-digest").code == 0
        [draft] = json.loads(approved("drafts", "--json").out)
        done = approved("approve", "notes-digest")
        assert done.code == 0 and "the next tick learns from your edits" in done.out
        assert approved("system", "daemon", "tick").code == 0
        again = approved("approve", draft["key"])
        assert again.code == 1
        assert again.err.startswith(f"HZH073: the draft {draft['key']} is already approved")
        assert "learned from" in again.err and "next tick" not in again.err
        assert "`hz heinzel show notes-digest`" in again.err

    def test_a_paused_ones_draft_learns_once_unpaused(self, approved: Hz) -> None:
        """A paused one's draft approved: `hz approve` says it learns once unpaused; the
        tick while paused wakes nothing, the first after unpausing learns."""
        assert approved("heinzel", "wake", "notes-digest").code == 0
        assert approved("heinzel", "pause", "notes-digest").code == 0
        done = approved("approve", "notes-digest")
        assert done.code == 0, done.err
        assert "notes-digest is paused: it learns from your edits once unpaused" in done.out
        assert "next tick" not in done.out
        assert json.loads(approved("system", "daemon", "tick", "--json").out)["woken"] == []
        assert approved("heinzel", "unpause", "notes-digest").code == 0
        [woken] = json.loads(approved("system", "daemon", "tick", "--json").out)["woken"]
        assert [w["cause"] for w in woken["wakes"]] == ["approval"]

    def test_a_paused_ones_draft_approved_on_the_page_waits_too(
        self, approved: Hz, hz_env: dict[str, str]
    ) -> None:
        """The page's approve button for a paused one's draft starts no learning turn and
        says so; the first tick after unpausing learns from it."""
        assert approved("heinzel", "wake", "notes-digest").code == 0
        [draft] = json.loads(approved("drafts", "--json").out)
        assert approved("heinzel", "pause", "notes-digest").code == 0
        env = {**hz_env, "HZ_NOW": "2026-10-30T14:30:00Z"}
        answer, children = page_approve(env, draft)
        assert children == [] and "started" not in answer
        assert answer["learns"].startswith("notes-digest is paused: it learns from your edits")
        assert approved("heinzel", "unpause", "notes-digest").code == 0
        [woken] = json.loads(approved("system", "daemon", "tick", "--json").out)["woken"]
        assert [w["cause"] for w in woken["wakes"]] == ["approval"]
        assert [e["disposition"] for e in woken["ended"]] == ["learned"]


class TestHardLinks:
    """A hard-linked document keeps its link when hz writes it (issue 38, smaller)."""

    def test_a_linked_document_keeps_its_link_through_draft_approve_and_settle(
        self, approved: Hz, folder: Path
    ) -> None:
        """report.md and a second name of it: the draft, `hz approve` and the tick's
        settling each write it in place, so both names stay one file (same inode, mode)."""
        report, other = folder / "report.md", folder / "linked.md"
        report.chmod(0o640)
        os.link(report, other)
        inode = report.stat().st_ino
        assert approved("heinzel", "wake", "notes-digest").code == 0
        assert "🧝 DRAFT" in other.read_text(encoding="utf-8")
        assert approved("approve", "notes-digest").code == 0
        assert "🧝 DRAFT" not in other.read_text(encoding="utf-8")
        assert approved("system", "daemon", "tick").code == 0
        text = other.read_text(encoding="utf-8")
        assert "<!-- hz:" not in text and "ship the rounding fix" in text
        for name in (report, other):
            assert name.stat().st_ino == inode and name.stat().st_nlink == 2
        assert stat.S_IMODE(report.stat().st_mode) == 0o640
        assert not [p.name for p in folder.iterdir() if ".hz-inplace" in p.name]

    def test_a_write_in_place_cut_halfway_is_finished_by_the_next_hz(
        self, approved: Hz, folder: Path
    ) -> None:
        """A wake killed halfway through writing the linked document (HZ_CRASH_AT=at:
        in-place): the document is torn, its journal beside it; the next tick finishes
        the write from the journal, the turn's draft is placed once, the link holds."""
        report, other = folder / "report.md", folder / "linked.md"
        os.link(report, other)
        woken = approved("heinzel", "wake", "notes-digest", env={"HZ_CRASH_AT": "at:in-place"})
        assert woken.code == 137
        assert (folder / ".report.md.hz-inplace").exists()
        assert "<!-- hz:end" not in report.read_text(encoding="utf-8")  # torn
        ticked = approved("system", "daemon", "tick")
        assert ticked.code == 0, ticked.err
        text = other.read_text(encoding="utf-8")
        assert text.count("🧝 DRAFT") == 1 and text.count("<!-- hz:end") == 1
        assert text.startswith("# Report\n")
        assert report.stat().st_ino == other.stat().st_ino
        assert not (folder / ".report.md.hz-inplace").exists()
        assert len(json.loads(approved("drafts", "--json").out)) == 1

    def test_a_journal_that_cannot_be_written_is_hzh420_and_changes_nothing(
        self, approved: Hz, folder: Path
    ) -> None:
        """The journal's place is taken (a folder there): the wake fails HZH420 with its
        hint, the linked document is as it was, and a later wake places the draft."""
        report, other = folder / "report.md", folder / "linked.md"
        os.link(report, other)
        (folder / ".report.md.hz-inplace").mkdir()
        woken = approved("heinzel", "wake", "notes-digest")
        assert woken.code == 1
        assert "failed (HZH420)" in woken.out and "HZL002" not in woken.out
        assert "HZH420: cannot write the hard-linked document" in woken.err
        assert "hint: free space or fix the permissions" in woken.err
        assert report.read_text(encoding="utf-8") == "# Report\n"
        (folder / ".report.md.hz-inplace").rmdir()
        assert approved("heinzel", "wake", "notes-digest").code == 0
        assert "🧝 DRAFT" in other.read_text(encoding="utf-8")
