"""The documents adapter: drafts placed in local Markdown files and read back."""

from __future__ import annotations

import os
import stat
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from heinzel.capabilities.documents import (
    LocalDocuments,
    absolute_asset,
    asset_of_key,
    draft_tag,
    normalise_text,
    text_hash,
)
from heinzel.capabilities.errors import CapabilityError
from heinzel.capabilities.protocols import Approved, Pending, Rejected, Unknown

START = "# Checkout: weekly report\n\n## Week of 2026-10-19\n\n- shipped retries\n"
TAG = draft_tag("weekly-report", 1)
DRAFT = "## Week of 2026-10-26\n\n- Express checkout: one-tap button\n- Swiss franc rounding fixed"


def key_for(path: Path, slot: str = "2026-10-30T15:00") -> str:
    return f"hz-01JABCDEFGHJKMNPQRSTVWXYZ0@v1@{slot}@file:{path}"


@pytest.fixture
def doc(tmp_path: Path) -> Path:
    path = tmp_path / "weekly-report.md"
    path.write_text(START, encoding="utf-8")
    return path


def place(
    docs: LocalDocuments, path: Path, text: str = DRAFT, slot: str = "2026-10-30T15:00"
) -> str:
    return docs.place_draft(key_for(path, slot), f"file:{path}", text, TAG)


def without_line(path: Path, line: str) -> None:
    lines = path.read_text(encoding="utf-8").split("\n")
    lines.remove(line)
    path.write_text("\n".join(lines), encoding="utf-8")


class TestPlaceDraft:
    def test_section_format_is_exact(self, doc: Path) -> None:
        """Tag line, key comment, blank, text, blank, end comment, appended after a blank line."""
        digest = place(LocalDocuments("priya"), doc)
        key = key_for(doc)
        assert doc.read_text(encoding="utf-8") == (
            START
            + "\n"
            + "🧝 DRAFT (weekly-report v1): edit, then delete this line to approve\n"
            + f"<!-- hz:draft key={key} -->\n\n{DRAFT}\n\n<!-- hz:end key={key} -->\n"
        )
        assert digest == text_hash(DRAFT)

    def test_nothing_before_the_section_changes(self, doc: Path) -> None:
        """The document's existing bytes are a prefix of the new ones."""
        before = doc.read_bytes()
        place(LocalDocuments("priya"), doc)
        assert doc.read_bytes().startswith(before)

    def test_a_missing_final_newline_is_added_not_glued(self, tmp_path: Path) -> None:
        """The tag line always starts its own line."""
        path = tmp_path / "r.md"
        path.write_text("last line", encoding="utf-8")
        place(LocalDocuments("priya"), path)
        assert path.read_text(encoding="utf-8").startswith("last line\n\n🧝 DRAFT")

    def test_placing_twice_writes_nothing(self, doc: Path) -> None:
        """The same key again leaves the file untouched and returns the same hash."""
        docs = LocalDocuments("priya")
        first = place(docs, doc)
        after_first = doc.read_bytes()
        inode = doc.stat().st_ino
        assert place(docs, doc) == first
        assert doc.read_bytes() == after_first
        assert doc.stat().st_ino == inode

    def test_placing_again_after_edits_returns_the_edited_hash(self, doc: Path) -> None:
        """The hash is of the text as it stands in the document."""
        docs = LocalDocuments("priya")
        place(docs, doc)
        doc.write_text(
            doc.read_text(encoding="utf-8").replace("one-tap", "1-tap"), encoding="utf-8"
        )
        assert place(docs, doc) == text_hash(DRAFT.replace("one-tap", "1-tap"))

    def test_the_document_keeps_its_permissions(self, doc: Path) -> None:
        """A 0644 report stays 0644 after the atomic replace."""
        doc.chmod(0o644)
        place(LocalDocuments("priya"), doc)
        assert stat.S_IMODE(doc.stat().st_mode) == 0o644

    def test_a_linked_document_is_written_through_the_link(self, doc: Path, tmp_path: Path) -> None:
        """The link stays a link and its target gets the draft."""
        link = tmp_path / "link.md"
        link.symlink_to(doc)
        LocalDocuments("priya").place_draft(key_for(link), f"file:{link}", DRAFT, TAG)
        assert link.is_symlink()
        assert "hz:draft" in doc.read_text(encoding="utf-8")

    def test_relative_asset_resolves_against_the_base(self, doc: Path) -> None:
        """file:weekly-report.md is the file next to the contract."""
        docs = LocalDocuments("priya", base=doc.parent)
        key = "hz-01JABCDEFGHJKMNPQRSTVWXYZ0@v1@2026-10-30T15:00@file:weekly-report.md"
        docs.place_draft(key, "file:weekly-report.md", DRAFT, TAG)
        assert docs.find(key) == "present"

    def test_a_concurrent_save_is_kept(self, doc: Path) -> None:
        """A save between read and replace is read again, never overwritten."""

        class Racing(LocalDocuments):
            raced = False

            def _load(self, path: Path) -> bytes:
                data = super()._load(path)
                if not self.raced:
                    self.raced = True
                    path.write_text(START + "- a line saved meanwhile\n", encoding="utf-8")
                return data

        place(Racing("priya"), doc)
        text = doc.read_text(encoding="utf-8")
        assert "- a line saved meanwhile\n" in text
        assert text.count("<!-- hz:draft") == 1

    def test_a_document_that_keeps_changing_is_hzh133(self, doc: Path) -> None:
        """After three tries the adapter gives up with a coded error and writes nothing."""

        class Busy(LocalDocuments):
            saves = 0

            def _load(self, path: Path) -> bytes:
                data = super()._load(path)
                self.saves += 1
                path.write_text(START + f"- save {self.saves}\n", encoding="utf-8")
                return data

        with pytest.raises(CapabilityError) as caught:
            place(Busy("priya"), doc)
        assert caught.value.code == "HZH133"
        assert caught.value.retryable
        assert "hz:draft" not in doc.read_text(encoding="utf-8")


class TestDraftState:
    def test_placed_is_pending_and_present(self, doc: Path) -> None:
        """The tag line above the key comment means nobody decided yet."""
        docs = LocalDocuments("priya")
        place(docs, doc)
        assert docs.find(key_for(doc)) == "present"
        assert docs.draft_state(key_for(doc)) == Pending()

    def test_edits_inside_keep_it_pending(self, doc: Path) -> None:
        """Editing the text without deleting the tag line is not an approval."""
        docs = LocalDocuments("priya")
        place(docs, doc)
        doc.write_text(
            doc.read_text(encoding="utf-8").replace("one-tap", "1-tap"), encoding="utf-8"
        )
        assert docs.draft_state(key_for(doc)) == Pending()

    def test_deleting_the_tag_line_approves_with_the_edited_text(self, doc: Path) -> None:
        """The approved text is read back from the file, the user's edits included."""
        docs = LocalDocuments("priya")
        place(docs, doc)
        edited = doc.read_text(encoding="utf-8").replace("- Swiss", "- Risks: none\n- Swiss")
        doc.write_text(edited, encoding="utf-8")
        without_line(doc, TAG)
        assert docs.draft_state(key_for(doc)) == Approved(
            approver="priya", text=DRAFT.replace("- Swiss", "- Risks: none\n- Swiss")
        )
        assert docs.find(key_for(doc)) == "present"

    def test_deleting_the_section_rejects(self, doc: Path) -> None:
        """With every line of the section gone the draft is rejected and absent."""
        docs = LocalDocuments("priya")
        place(docs, doc)
        doc.write_text(START, encoding="utf-8")
        assert docs.draft_state(key_for(doc)) == Rejected()
        assert docs.find(key_for(doc)) == "absent"

    def test_never_placed_is_absent(self, doc: Path) -> None:
        """A key that was never placed is absent (the probe then performs the effect)."""
        assert LocalDocuments("priya").find(key_for(doc)) == "absent"

    def test_missing_document_is_unknown(self, doc: Path) -> None:
        """A document that is gone can't tell: unknown, not rejected."""
        docs = LocalDocuments("priya")
        place(docs, doc)
        doc.unlink()
        assert docs.find(key_for(doc)) == "unknown"
        assert isinstance(docs.draft_state(key_for(doc)), Unknown)

    def test_unreadable_document_is_unknown(self, doc: Path) -> None:
        """A document that is no longer UTF-8 can't tell either."""
        docs = LocalDocuments("priya")
        place(docs, doc)
        doc.write_bytes(doc.read_bytes() + b"\xff")
        assert docs.find(key_for(doc)) == "unknown"
        assert isinstance(docs.draft_state(key_for(doc)), Unknown)

    def test_broken_markers_are_unknown_but_present(self, doc: Path) -> None:
        """With the end comment deleted the section can't be delimited; the key still counts."""
        docs = LocalDocuments("priya")
        place(docs, doc)
        without_line(doc, f"<!-- hz:end key={key_for(doc)} -->")
        state = docs.draft_state(key_for(doc))
        assert isinstance(state, Unknown)
        assert "pair up" in state.reason
        assert docs.find(key_for(doc)) == "present"

    def test_two_drafts_are_decided_apart(self, doc: Path) -> None:
        """An approved first draft is kept beside a second whose key extends the first's."""
        docs = LocalDocuments("priya")
        place(docs, doc, slot="2026-10-30T15:00")
        without_line(doc, TAG)  # the first is approved before the second comes
        place(docs, doc, "second", slot="2026-10-30T15:001")
        assert docs.draft_state(key_for(doc, "2026-10-30T15:00")) == Approved("priya", DRAFT)
        assert docs.draft_state(key_for(doc, "2026-10-30T15:001")) == Pending()

    def test_crlf_documents_read_back_clean(self, tmp_path: Path) -> None:
        """A document saved with CRLF line ends still approves with LF text."""
        path = tmp_path / "r.md"
        path.write_bytes(b"# R\r\n")
        docs = LocalDocuments("priya")
        place(docs, path)
        path.write_bytes(
            path.read_bytes().replace(b"\n", b"\r\n").replace(TAG.encode() + b"\r\n", b"")
        )
        assert docs.draft_state(key_for(path)) == Approved("priya", DRAFT)

    def test_read_returns_the_whole_document(self, doc: Path) -> None:
        """read gives the text as it is."""
        assert LocalDocuments("priya").read(f"file:{doc}") == START


class TestUnicode:
    @settings(derandomize=True, deadline=None, max_examples=40)
    @given(text=st.text(st.characters(exclude_categories=("Cs",)), min_size=1, max_size=200))
    def test_any_text_round_trips_through_approval(
        self, tmp_path_factory: pytest.TempPathFactory, text: str
    ) -> None:
        """Whatever the text (emoji, RTL, combining marks), approval reads it back normalised."""
        if "<!-- hz:" in normalise_text(text) or not normalise_text(text):
            return
        path = tmp_path_factory.mktemp("u") / "r.md"
        path.write_text("Ünïcødé 🧝 heading\n", encoding="utf-8")
        docs = LocalDocuments("priya")
        assert place(docs, path, text) == text_hash(text)
        without_line(path, TAG)
        assert docs.draft_state(key_for(path)) == Approved("priya", normalise_text(text))
        assert path.read_text(encoding="utf-8").startswith("Ünïcødé 🧝 heading\n")


class TestDocumentErrors:
    def code(self, call: object) -> str:
        assert callable(call)
        with pytest.raises(CapabilityError) as caught:
            call()
        return caught.value.code

    def test_only_file_assets(self, doc: Path) -> None:
        """A doc: asset is not this adapter's (HZH130)."""
        key = "hz-01J@v1@s@doc:checkout/weekly-report"
        assert (
            self.code(
                lambda: LocalDocuments("p").place_draft(key, "doc:checkout/weekly-report", "x", TAG)
            )
            == "HZH130"
        )

    def test_key_must_name_the_asset(self, doc: Path, tmp_path: Path) -> None:
        """A key for another asset, or no key shape at all, is HZH134."""
        other = tmp_path / "other.md"
        assert (
            self.code(
                lambda: LocalDocuments("p").place_draft(key_for(other), f"file:{doc}", "x", TAG)
            )
            == "HZH134"
        )
        assert self.code(lambda: asset_of_key("no-at-signs")) == "HZH134"
        assert self.code(lambda: asset_of_key("a@v1@s@file:x y")) == "HZH134"

    def test_tag_and_text_are_checked(self, doc: Path) -> None:
        """A tag over two lines or a text holding hz's markers is HZH132."""
        docs = LocalDocuments("p")
        assert (
            self.code(lambda: docs.place_draft(key_for(doc), f"file:{doc}", "x", TAG + "\nmore"))
            == "HZH132"
        )
        assert (
            self.code(
                lambda: docs.place_draft(key_for(doc), f"file:{doc}", "<!-- hz:end x -->", TAG)
            )
            == "HZH132"
        )

    def test_missing_folder_is_hzh131(self, tmp_path: Path) -> None:
        """A document whose folder does not exist is not created: HZH131 naming the folder."""
        path = tmp_path / "nope" / "report.md"
        assert self.code(lambda: place(LocalDocuments("p"), path)) == "HZH131"
        assert not path.parent.exists()

    def test_missing_document_is_created_0600(self, tmp_path: Path) -> None:
        """The first draft creates a document that is not there yet, readable by the user only."""
        path = tmp_path / "digest.md"
        docs = LocalDocuments("p")
        place(docs, path)
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        assert docs.draft_state(key_for(path)) == Pending()

    def test_not_utf8_document_is_hzh135(self, doc: Path) -> None:
        """A document in another encoding is refused rather than garbled."""
        doc.write_bytes(b"caf\xe9\n")
        assert self.code(lambda: place(LocalDocuments("p"), doc)) == "HZH135"

    def test_relative_asset_without_base_is_hzh116(self) -> None:
        """file:report.md with no contract folder is refused."""
        key = "hz-01J@v1@s@file:report.md"
        assert (
            self.code(lambda: LocalDocuments("p").place_draft(key, "file:report.md", "x", TAG))
            == "HZH116"
        )

    def test_a_directory_is_hzh131(self, tmp_path: Path) -> None:
        """Only regular files hold drafts."""
        assert self.code(lambda: LocalDocuments("p").read(f"file:{tmp_path}")) == "HZH131"
        assert os.path.isdir(tmp_path)


class TestDocumentsRead:
    def test_documents_read_is_an_input(self, doc: Path) -> None:
        """documents.read {doc} gives the text with a content facet, and moves with a draft."""
        docs = LocalDocuments("priya")
        now = datetime(2026, 10, 30, 14, 0, tzinfo=UTC)
        before = docs.fetch("read", {"doc": f"file:{doc}"}, None, now=now)
        place(docs, doc)
        after = docs.fetch("read", {"doc": f"file:{doc}"}, None, now=now)
        assert before.result == START
        assert set(before.fingerprints) == {"content"}
        assert before.fingerprint != after.fingerprint

    def test_absolute_asset_resolves_only_relative_files(self, tmp_path: Path) -> None:
        """file:r.md becomes absolute against the contract's folder; others stay."""
        assert absolute_asset("file:r.md", tmp_path) == f"file:{tmp_path / 'r.md'}"
        assert absolute_asset("file:/x/r.md", tmp_path) == "file:/x/r.md"
        assert absolute_asset("doc:team/r", tmp_path) == "doc:team/r"


class TestOneLiveDraft:
    """A new draft replaces the pending one of the same Heinzelmännchen and asset."""

    def test_a_new_draft_replaces_the_pending_one_in_place(self, doc: Path) -> None:
        """Three drafts in a row leave one section, where the first was, the text around kept."""
        docs = LocalDocuments("priya")
        place(docs, doc, "first", slot="s1")
        doc.write_text(doc.read_text(encoding="utf-8") + "\n## After\n\nmine\n", encoding="utf-8")
        place(docs, doc, "second", slot="s2")
        place(docs, doc, "third", slot="s3")
        text = doc.read_text(encoding="utf-8")
        assert text.count(TAG) == 1 and text.count("hz:draft key=") == 1
        assert text.startswith(START) and text.endswith("## After\n\nmine\n")
        assert text.index("third") < text.index("## After")
        assert docs.draft_state(key_for(doc, "s3")) == Pending()
        assert docs.find(key_for(doc, "s1")) == "absent"

    def test_an_approved_section_is_never_replaced(self, doc: Path) -> None:
        """A draft whose tag the user deleted stays as approved; the new one is placed beside."""
        docs = LocalDocuments("priya")
        place(docs, doc, "first", slot="s1")
        without_line(doc, TAG)
        place(docs, doc, "second", slot="s2")
        assert docs.draft_state(key_for(doc, "s1")) == Approved("priya", "first")
        assert docs.draft_state(key_for(doc, "s2")) == Pending()

    def test_another_heinzel_draft_is_left_alone(self, doc: Path) -> None:
        """Only the same Heinzelmännchen's pending draft is superseded."""
        docs = LocalDocuments("priya")
        place(docs, doc, "first", slot="s1")
        other = f"hz-other@v1@s2@file:{doc}"
        docs.place_draft(other, f"file:{doc}", "theirs", TAG)
        assert docs.draft_state(key_for(doc, "s1")) == Pending()
        assert docs.draft_state(other) == Pending()

    def test_settle_removes_hz_comments_after_approval(self, doc: Path) -> None:
        """After approval, settle leaves the user's text without hz's comments; pending is kept."""
        docs = LocalDocuments("priya")
        place(docs, doc, "first", slot="s1")
        assert not docs.settle(key_for(doc, "s1"))  # still pending: untouched
        without_line(doc, TAG)
        assert docs.settle(key_for(doc, "s1"))
        assert doc.read_text(encoding="utf-8") == START + "\nfirst\n"
        assert not docs.settle(key_for(doc, "s1"))


class TestPlacement:
    """``place``: end, top or under a heading."""

    def test_top_goes_below_the_title(self, doc: Path) -> None:
        """A changelog's newest draft goes right below its ``# `` title."""
        LocalDocuments("p").place_draft(key_for(doc), f"file:{doc}", "new", TAG, "top")
        lines = doc.read_text(encoding="utf-8").split("\n")
        assert lines[0] == "# Checkout: weekly report" and lines[2] == TAG
        assert lines.index("## Week of 2026-10-19") > lines.index("new")

    def test_under_a_heading(self, tmp_path: Path) -> None:
        """``under:Drafts`` puts it right below that heading, before what follows."""
        path = tmp_path / "r.md"
        path.write_text("# R\n\n## Drafts\n\nold\n\n## Done\n", encoding="utf-8")
        LocalDocuments("p").place_draft(key_for(path), f"file:{path}", "new", TAG, "under:Drafts")
        text = path.read_text(encoding="utf-8")
        assert text.index("## Drafts") < text.index(TAG) < text.index("new") < text.index("old")

    def test_under_a_missing_heading_goes_to_the_end(self, doc: Path) -> None:
        """No such heading: the draft goes at the end, the document otherwise unchanged."""
        LocalDocuments("p").place_draft(key_for(doc), f"file:{doc}", "new", TAG, "under:Nope")
        assert doc.read_text(encoding="utf-8").startswith(START)
