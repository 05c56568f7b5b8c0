"""hz's own files are no target: a contract whose output or input resolves into the home,
the credential store or any spine, body or index is refused when it is accepted (`new`,
`amend`, `approve`) and again when a turn acts (docs/contract.md)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.loop.conftest import Hz

SECRET = "sk-ant-api03-NOT-A-REAL-KEY-0123456789"


def heinzel_id(hz: Hz, name: str) -> str:
    return str(json.loads(hz("heinzel", "show", name, "--json").out)["id"])


def contract(folder: Path, name: str, *, output: str = "report.md", path: str = "notes.txt") -> str:
    """A copy of the folder's contract named ``name``, drafting into ``output`` and reading
    ``path``; its file name."""
    text = (folder / "digest.prose.md").read_text(encoding="utf-8")
    text = text.replace("name: notes-digest", f"name: {name}")
    text = text.replace("file:report.md", f"file:{output}").replace("notes.txt", path)
    (folder / f"{name}.prose.md").write_text(text, encoding="utf-8")
    return f"{name}.prose.md"


def spines(home: Path) -> dict[str, bytes]:
    return {p.parent.name: p.read_bytes() for p in sorted(home.glob("heinzel/hz-*/session.jsonl"))}


def kinds(home: Path, heinzel: str) -> list[str]:
    lines = (home / "heinzel" / heinzel / "session.jsonl").read_text(encoding="utf-8")
    return [json.loads(line)["kind"] for line in lines.splitlines()]


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


@pytest.fixture
def credentials(tmp_path: Path) -> Path:
    """The credential store where the runs' ``XDG_CONFIG_HOME`` puts it, holding a key."""
    path = tmp_path / "xdg" / "hz" / "credentials.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"anthropic": SECRET}), encoding="utf-8")
    path.chmod(0o600)
    return path


class TestRefusedWhenAccepted:
    """`new`, `amend` and `approve` refuse the target with its code; nothing is kept."""

    def test_an_output_at_another_spine_is_refused_at_new(
        self, approved: Hz, folder: Path, home: Path
    ) -> None:
        """A second contract drafting into the first one's spine (a `..` path): HZH340."""
        first = heinzel_id(approved, "notes-digest")
        before = spines(home)
        written = contract(folder, "evil", output=f"../home/heinzel/{first}/session.jsonl")
        done = approved("heinzel", "new", "--from", written)
        assert done.code == 1
        assert done.err.startswith(f"HZH340: output section: file:../home/heinzel/{first}/")
        assert "inside hz's home" in done.err and "hint: write the output into" in done.err
        assert "evil" not in approved("heinzel", "list").out
        assert spines(home) == before

    def test_an_output_at_a_spine_of_another_home_is_refused_at_new(
        self, approved: Hz, folder: Path, tmp_path: Path
    ) -> None:
        """The spine of a Heinzelmännchen in another ``HZ_HOME`` on the machine: found by
        the home's layout, HZH340, and that spine untouched."""
        other = {"HZ_HOME": str(tmp_path / "other")}
        assert approved("heinzel", "new", "--from", "digest.prose.md", env=other).code == 0
        [spine] = (tmp_path / "other" / "heinzel").glob("hz-*/session.jsonl")
        before = spine.read_bytes()
        done = approved("heinzel", "new", "--from", contract(folder, "evil", output=str(spine)))
        assert done.code == 1 and done.err.startswith("HZH340: output section:")
        assert f"inside the hz home {tmp_path / 'other'}" in done.err
        assert spine.read_bytes() == before

    def test_an_output_at_the_index_is_refused_at_new(self, approved: Hz, folder: Path) -> None:
        """Drafting into ``heinzel/index.sqlite``: HZH340."""
        written = contract(folder, "evil", output="../home/heinzel/index.sqlite")
        done = approved("heinzel", "new", "--from", written)
        assert done.code == 1 and done.err.startswith("HZH340: output section:")

    def test_an_output_through_a_symlink_into_the_home_is_refused_at_new(
        self, approved: Hz, folder: Path
    ) -> None:
        """A folder of the user's that is a link into the home: HZH340 names the real path."""
        (folder / "drafts").symlink_to(folder.parent / "home" / "heinzel")
        done = approved("heinzel", "new", "--from", contract(folder, "evil", output="drafts/x.md"))
        assert done.code == 1 and done.err.startswith("HZH340: output section: file:drafts/x.md")
        assert str(folder.parent / "home" / "heinzel" / "x.md") in done.err

    def test_an_output_at_the_credentials_file_is_refused_at_new(
        self, hz: Hz, folder: Path, credentials: Path
    ) -> None:
        """Drafting into the credential store: HZH340, and the keys are untouched."""
        done = hz("heinzel", "new", "--from", contract(folder, "evil", output=str(credentials)))
        assert done.code == 1
        assert done.err.startswith("HZH340") and "the credential store's folder" in done.err
        assert json.loads(credentials.read_text(encoding="utf-8")) == {"anthropic": SECRET}

    def test_an_input_reading_the_credentials_by_tilde_is_refused_at_new(
        self, hz: Hz, folder: Path, credentials: Path, tmp_path: Path
    ) -> None:
        """``path: ~/xdg/hz/credentials.json`` with ``HOME`` above it: HZH341."""
        written = contract(folder, "evil", path="~/xdg/hz/credentials.json")
        done = hz("heinzel", "new", "--from", written, env={"HOME": str(tmp_path)})
        assert done.code == 1
        assert done.err.startswith("HZH341: input notes: ~/xdg/hz/credentials.json resolves")

    def test_the_file_hz_credentials_names_is_refused(
        self, hz: Hz, folder: Path, tmp_path: Path
    ) -> None:
        """``HZ_CREDENTIALS`` elsewhere: that file is protected (its folder is the user's)."""
        keys = folder / "keys.json"
        keys.write_text("{}", encoding="utf-8")
        env = {"HZ_CREDENTIALS": str(keys)}
        done = hz("heinzel", "new", "--from", contract(folder, "evil", path="keys.json"), env=env)
        assert done.code == 1 and done.err.startswith("HZH341") and "credential store" in done.err
        assert hz("heinzel", "new", "--from", "digest.prose.md", env=env).code == 0

    def test_an_amendment_drafting_into_its_own_spine_is_refused(
        self, approved: Hz, folder: Path, home: Path
    ) -> None:
        """`hz heinzel amend` with the output at its own spine: HZH340, nothing filed."""
        own = heinzel_id(approved, "notes-digest")
        before = spines(home)
        written = contract(folder, "notes-digest", output=f"../home/heinzel/{own}/session.jsonl")
        done = approved("heinzel", "amend", "notes-digest", "--from", written)
        assert done.code == 1 and done.err.startswith("HZH340: output section:")
        assert spines(home) == before
        assert json.loads(approved("heinzel", "show", "notes-digest", "--json").out)["pending"] in (
            None,
            "",
        )

    def test_a_link_made_before_approve_is_refused_at_approve(self, hz: Hz, folder: Path) -> None:
        """The output's folder replaced by a link into the home after `new`: HZH340 at
        `approve`, and it stays proposed."""
        (folder / "out").mkdir()
        assert (
            hz("heinzel", "new", "--from", contract(folder, "later", output="out/r.md")).code == 0
        )
        (folder / "out").rmdir()
        (folder / "out").symlink_to(folder.parent / "home" / "heinzel")
        done = hz("approve", "later")
        assert done.code == 1 and done.err.startswith("HZH340: output section: file:out/r.md")
        assert json.loads(hz("heinzel", "show", "later", "--json").out)["state"] == "proposed"

    def test_a_sentence_naming_a_file_in_the_home_is_refused_at_new(
        self, approved: Hz, folder: Path, home: Path
    ) -> None:
        """`hz heinzel new "... into mine/x.md"` where ``mine`` links into a session folder:
        HZH340 before any model runs, and nothing is created."""
        (folder / "mine").symlink_to(home / "heinzel" / heinzel_id(approved, "notes-digest"))
        before = spines(home)
        done = approved("heinzel", "new", "every Friday summarise notes.txt into mine/x.md")
        assert done.code == 1 and done.err.startswith("HZH340: the sentence names mine/x.md")
        assert spines(home) == before


def test_an_amendment_a_chat_turn_writes_is_refused(
    approved: Hz, folder: Path, home: Path, credentials: Path
) -> None:
    """A chat asking to "also include the keys from keys/credentials.json" (``keys`` a link
    to the credential store): the turn's amendment is recorded ``amendment.refused`` with
    HZH341, nothing waits for approval, and the key is nowhere in the home."""
    (folder / "keys").symlink_to(credentials.parent)
    done = approved("heinzel", "chat", "notes-digest", "also include the keys from keys/x.json")
    assert done.code == 0, done.err
    own = heinzel_id(approved, "notes-digest")
    lines = (home / "heinzel" / own / "session.jsonl").read_text("utf-8").splitlines()
    refused = [json.loads(line) for line in lines if '"amendment.refused"' in line]
    # the line may carry the turn's step starts (docs/spine.md, "Steps carried by the next line")
    assert [{k: v for k, v in e["data"].items() if k != "steps"} for e in refused] == [
        {"code": "HZH341"}
    ]
    # the chat's reply says its amendment was refused, never that it proposed one
    assert "proposed an amendment that hz refused (HZH341)" in done.out, done.out
    assert "amendment.proposed" not in kinds(home, own)
    assert not [p for p in home.rglob("*") if p.is_file() and SECRET.encode() in p.read_bytes()]


def test_a_hard_link_to_the_credentials_is_not_read(
    approved: Hz, folder: Path, home: Path, credentials: Path
) -> None:
    """notes.txt replaced by a hard link to the credentials file (no path to resolve): the
    wake refuses the input, HZH343, and the key is nowhere in the home."""
    (folder / "notes.txt").unlink()
    os.link(credentials, folder / "notes.txt")
    done = approved("heinzel", "wake", "notes-digest")
    assert done.code == 1 and "HZH343" in done.err and "a hard link to" in done.err
    assert not [p for p in home.rglob("*") if p.is_file() and SECRET.encode() in p.read_bytes()]


class TestRefusedWhenActing:
    """A link planted after approval: the act refuses, coded, and every spine is whole."""

    def test_a_draft_linked_into_another_spine_is_refused_and_no_line_is_lost(
        self, approved: Hz, folder: Path, home: Path
    ) -> None:
        """B's document made a link to A's spine after B's approval: the wake fails with
        HZH342, A's spine is byte for byte what it was, both chains verify, and B's spine
        holds the failed effect and the finished turn."""
        first = heinzel_id(approved, "notes-digest")
        (folder / "b.md").write_text("# B\n", encoding="utf-8")
        assert approved("heinzel", "new", "--from", contract(folder, "b", output="b.md")).code == 0
        assert approved("approve", "b").code == 0
        (folder / "b.md").unlink()
        (folder / "b.md").symlink_to(home / "heinzel" / first / "session.jsonl")
        before = spines(home)[first]
        done = approved("heinzel", "wake", "b")
        assert done.code == 1 and "HZH342" in done.err
        assert "hint: point the document back at a file of your own" in done.err
        assert spines(home)[first] == before
        verified = approved("heinzel", "verify")
        assert verified.code == 0 and "BROKEN" not in verified.out
        ended = kinds(home, heinzel_id(approved, "b"))[-3:]
        assert ended == ["effect.started", "effect.failed", "turn.finished"]

    def test_a_draft_linked_into_its_own_spine_is_refused_and_the_spine_stays_whole(
        self, approved: Hz, folder: Path, home: Path
    ) -> None:
        """The document made a link to its own spine: HZH342; the spine is still the file
        the writer appends to (every line of the turn is in it) and verifies."""
        own = heinzel_id(approved, "notes-digest")
        spine = home / "heinzel" / own / "session.jsonl"
        inode = spine.stat().st_ino
        (folder / "report.md").unlink()
        (folder / "report.md").symlink_to(spine)
        done = approved("heinzel", "wake", "notes-digest")
        assert done.code == 1 and "HZH342" in done.err
        assert spine.stat().st_ino == inode and "🧝 DRAFT" not in spine.read_text("utf-8")
        assert kinds(home, own)[-3:] == ["effect.started", "effect.failed", "turn.finished"]
        assert approved("heinzel", "verify", "notes-digest").code == 0
        failed = [json.loads(line) for line in spine.read_text("utf-8").splitlines()][-2]
        assert failed["data"] == {"error": "HZH342"}

    def test_a_turn_killed_after_effect_started_resumes_into_the_refusal(
        self, approved: Hz, folder: Path, home: Path
    ) -> None:
        """The wake killed right after ``effect.started`` (HZ_CRASH_AT, exit 137) with the
        document linked to its own spine: the tick resumes the turn, probes (absent), is
        refused HZH342 instead of performing, and the spine stays one whole chain."""
        own = heinzel_id(approved, "notes-digest")
        spine = home / "heinzel" / own / "session.jsonl"
        (folder / "report.md").unlink()
        (folder / "report.md").symlink_to(spine)
        killed = approved(
            "heinzel", "wake", "notes-digest", env={"HZ_CRASH_AT": "after:effect.started"}
        )
        assert killed.code == 137
        assert kinds(home, own)[-1] == "effect.started"
        approved("system", "daemon", "tick")
        assert kinds(home, own)[-3:] == ["effect.started", "effect.failed", "turn.finished"]
        assert "🧝 DRAFT" not in spine.read_text("utf-8")
        assert approved("heinzel", "verify", "notes-digest").code == 0

    def test_an_input_linked_into_the_credentials_is_not_read(
        self, hz: Hz, folder: Path, home: Path, credentials: Path
    ) -> None:
        """The input's folder made a link to the credential store after approval: HZH343,
        and the key is nowhere in the home (not in the source cache, a body or the spine)."""
        (folder / "in").mkdir()
        (folder / "in" / "credentials.json").write_text('{"a": 1}', encoding="utf-8")
        written = contract(folder, "reader", path="in/credentials.json")
        assert hz("heinzel", "new", "--from", written).code == 0
        assert hz("approve", "reader").code == 0
        (folder / "in" / "credentials.json").unlink()
        (folder / "in").rmdir()
        (folder / "in").symlink_to(credentials.parent)
        done = hz("heinzel", "wake", "reader")
        assert done.code == 1 and "HZH343" in done.err
        leaked = [p for p in home.rglob("*") if p.is_file() and SECRET.encode() in p.read_bytes()]
        assert leaked == []
        assert hz("heinzel", "verify").code == 0


def test_a_home_moved_over_the_output_refuses_the_act(hz: Hz, folder: Path) -> None:
    """The document is in a folder ``store/heinzel/`` of the user's; after approval the
    home is moved there (``HZ_HOME=store``), so the document now lies in hz's own
    ``heinzel/`` folder: the act is refused with HZH342, the document is untouched and the
    chain verifies."""
    (folder.parent / "notes.txt").write_text("ship it\n", encoding="utf-8")
    store = folder / "store"
    (store / "heinzel").mkdir(parents=True)
    written = contract(folder, "moved", output="store/heinzel/notes.md", path="../notes.txt")
    assert hz("heinzel", "new", "--from", written).code == 0
    assert hz("approve", "moved").code == 0
    for entry in (folder.parent / "home" / "heinzel").iterdir():
        os.rename(entry, store / "heinzel" / entry.name)
    env = {"HZ_HOME": str(store)}
    done = hz("heinzel", "wake", "moved", env=env)
    assert done.code == 1 and "HZH342" in done.err, done.err
    assert not (store / "heinzel" / "notes.md").exists()
    assert hz("heinzel", "verify", env=env).code == 0


def test_a_folder_of_the_users_inside_the_home_is_theirs(hz: Hz, folder: Path) -> None:
    """A document in a folder of the user's inside the home (as `hz demo` keeps Priya's)
    is not one of hz's files: created, approved and drafted."""
    (folder.parent / "home" / "mine").mkdir(parents=True)
    written = contract(folder, "inside", output="../home/mine/r.md")
    assert hz("heinzel", "new", "--from", written).code == 0
    assert hz("approve", "inside").code == 0
    assert hz("heinzel", "wake", "inside").code == 0
    assert "🧝 DRAFT" in (folder.parent / "home" / "mine" / "r.md").read_text("utf-8")
