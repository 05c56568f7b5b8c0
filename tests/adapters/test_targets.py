"""`heinzel.capabilities.targets.Protected`: hz's own places, found on the real path, and
the documents adapter that never writes there (docs/contract.md)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from heinzel.capabilities.documents import LocalDocuments, draft_tag
from heinzel.capabilities.errors import CapabilityError
from heinzel.capabilities.protocols import Unknown
from heinzel.capabilities.targets import Protected
from heinzel.contract import compile_contract
from heinzel.errors import HeinzelError
from heinzel.store.home import Home
from heinzel.store.targets import protected_places
from heinzel.turns.created import check_created
from tests.turns.conftest import CONTRACT

ID = "hz-01M66HRER0BK6P0MEFXXHZ92BK"


@pytest.fixture
def home(tmp_path: Path) -> Home:
    """A home with one session folder and an index."""
    home = Home(tmp_path / "home")
    home.session_dir(ID).mkdir(parents=True)
    home.spine_path(ID).write_text("{}\n", encoding="utf-8")
    home.index_path.write_bytes(b"SQLite format 3\x00")
    return home


@pytest.fixture
def protected(home: Home, tmp_path: Path) -> Protected:
    return protected_places(home, {"XDG_CONFIG_HOME": str(tmp_path / "xdg")})


class TestRefusal:
    """What is one of hz's own places, and what is the user's."""

    def test_the_homes_own_folders_are_refused(self, protected: Protected, home: Home) -> None:
        """heinzel/, web/ and team/ of the home, whatever lies below."""
        for path in (home.spine_path(ID), home.index_path, home.root / "web" / "token"):
            assert protected.refusal(path) is not None
        assert protected.refusal(home.root / "team" / "mirror.git" / "HEAD") is not None

    def test_a_folder_of_the_users_in_the_home_is_not(
        self, protected: Protected, home: Home
    ) -> None:
        """``<home>/priya/report.md`` (as `hz demo` keeps it) is the user's."""
        assert protected.refusal(home.root / "priya" / "report.md") is None

    def test_dotdot_tilde_and_links_are_resolved(
        self, protected: Protected, home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A ``..`` path, a ``~`` path and a path through a link name the real place."""
        monkeypatch.setenv("HOME", str(tmp_path))
        (tmp_path / "work").mkdir()
        (tmp_path / "work" / "in").symlink_to(home.session_dir(ID))
        for path in (
            tmp_path / "work" / ".." / "home" / "heinzel" / ID / "session.jsonl",
            "~/home/heinzel/index.sqlite",
            tmp_path / "work" / "in" / "session.jsonl",
        ):
            why = protected.refusal(path)
            assert why is not None and why.startswith(str(home.heinzel_dir)), path

    def test_the_credential_store_folder_and_a_hard_link_to_its_file(
        self, protected: Protected, tmp_path: Path
    ) -> None:
        """The store's folder is refused, and a hard link to its file elsewhere too."""
        keys = tmp_path / "xdg" / "hz" / "credentials.json"
        keys.parent.mkdir(parents=True)
        keys.write_text("{}", encoding="utf-8")
        assert "credential store's folder" in str(protected.refusal(keys.parent / "other"))
        os.link(keys, tmp_path / "notes.txt")
        assert "a hard link to the credential store" in str(
            protected.refusal(tmp_path / "notes.txt")
        )

    def test_another_home_is_found_by_its_layout(self, home: Home, tmp_path: Path) -> None:
        """With no places passed, any home's heinzel/ is still refused: a session folder,
        or a heinzel/ holding index.sqlite; a folder of the user's named heinzel is not."""
        bare = Protected()
        assert bare.refusal(home.spine_path(ID)) is not None
        assert bare.refusal(home.heinzel_dir / "sources" / "x.json") is not None
        (tmp_path / "notes" / "heinzel").mkdir(parents=True)
        assert bare.refusal(tmp_path / "notes" / "heinzel" / "todo.md") is None


class TestDocuments:
    """The documents adapter with a draft whose document resolves into the home."""

    def test_a_draft_is_not_placed_and_the_file_is_untouched(
        self, protected: Protected, home: Home, tmp_path: Path
    ) -> None:
        """place_draft: HZH342 and the spine's bytes as they were; find says absent,
        draft_state unknown, settle does nothing."""
        (tmp_path / "report.md").symlink_to(home.spine_path(ID))
        documents = LocalDocuments("me", protected=protected)
        asset = f"file:{tmp_path / 'report.md'}"
        key = f"{ID}@v1@slot@{asset}"
        before = home.spine_path(ID).read_bytes()
        with pytest.raises(CapabilityError) as refused:
            documents.place_draft(key, asset, "text", draft_tag("x", 1))
        assert refused.value.code == "HZH342"
        assert home.spine_path(ID).read_bytes() == before
        assert documents.find(key) == "absent"
        assert isinstance(documents.draft_state(key), Unknown)
        assert documents.settle(key) is False
        with pytest.raises(CapabilityError) as unread:
            documents.read(asset)
        assert unread.value.code == "HZH343"


def test_a_contract_the_model_writes_into_the_home_goes_back_as_a_retry(
    protected: Protected, home: Home, tmp_path: Path
) -> None:
    """The created turn's check of a model's contract: an output into a spine is HZH340
    (an error the engine hands back to the model), an input of the credentials HZH341."""
    text = CONTRACT.format(render="always", done_when="covered")
    spine = f"file:{home.spine_path(ID)}"
    keys = str(tmp_path / "xdg" / "hz" / "credentials.json")
    for changed, code in (
        (text.replace("file:report.md", spine), "HZH340"),
        (text.replace("path: notes.txt", f"path: {keys}"), "HZH341"),
    ):
        compiled = compile_contract(changed, source="created turn")
        with pytest.raises(HeinzelError) as refused:
            check_created(compiled, "summarise my notes", tmp_path, protected)
        assert refused.value.code == code
    assert check_created(compile_contract(text, source="x"), "s", tmp_path, protected)
