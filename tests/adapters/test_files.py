"""files.read: text, JSON and JSONL from local files, with links and sizes checked."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path

import pytest

from heinzel.capabilities.errors import CapabilityError
from heinzel.capabilities.files import FilesCapability
from heinzel.fingerprint import fingerprint

NOW = datetime(2026, 10, 30, 14, 0, tzinfo=UTC)


def read(capability: FilesCapability, path: str) -> object:
    return capability.fetch("read", {"path": path}, None, now=NOW).result


def code_of(capability: FilesCapability, path: str) -> str:
    with pytest.raises(CapabilityError) as caught:
        capability.fetch("read", {"path": path}, None, now=NOW)
    return caught.value.code


class TestFilesRead:
    def test_text_resolves_against_the_contract_folder(self, tmp_path: Path) -> None:
        """A relative path is read from the base folder, as UTF-8 text."""
        (tmp_path / "notes.md").write_text("Grüße\n", encoding="utf-8")
        got = FilesCapability(tmp_path).fetch("read", {"path": "notes.md"}, None, now=NOW)
        assert got.result == "Grüße\n"
        assert got.fingerprints == {"content": fingerprint("Grüße\n")}
        assert got.as_of == "2026-10-30T14:00:00.000Z"

    def test_absolute_path_needs_no_base(self, tmp_path: Path) -> None:
        """An absolute path is read as written."""
        (tmp_path / "a.txt").write_text("x", encoding="utf-8")
        assert read(FilesCapability(None), str(tmp_path / "a.txt")) == "x"

    def test_relative_path_without_base_is_hzh116(self) -> None:
        """A relative path with no contract folder is a coded error."""
        assert code_of(FilesCapability(None), "notes.md") == "HZH116"

    def test_json_is_parsed_with_a_facet_per_top_level_key(self, tmp_path: Path) -> None:
        """Each top-level key of a JSON object is a facet."""
        (tmp_path / "d.json").write_text('{"owners": ["p"], "goal": "ship"}', encoding="utf-8")
        got = FilesCapability(tmp_path).fetch("read", {"path": "d.json"}, None, now=NOW)
        assert got.result == {"owners": ["p"], "goal": "ship"}
        assert got.fingerprints == {"owners": fingerprint(["p"]), "goal": fingerprint("ship")}

    def test_jsonl_is_parsed_line_by_line(self, tmp_path: Path) -> None:
        """Blank lines are skipped; the records come as a list."""
        (tmp_path / "r.jsonl").write_text('{"a": 1}\n\n[2]\n', encoding="utf-8")
        assert read(FilesCapability(tmp_path), "r.jsonl") == [{"a": 1}, [2]]

    def test_bad_jsonl_line_is_named(self, tmp_path: Path) -> None:
        """HZH115 says which line is broken."""
        (tmp_path / "r.jsonl").write_text('{"a": 1}\n{oops\n', encoding="utf-8")
        with pytest.raises(CapabilityError) as caught:
            read(FilesCapability(tmp_path), "r.jsonl")
        assert caught.value.code == "HZH115"
        assert "line 2" in caught.value.message

    def test_bad_json_says_where(self, tmp_path: Path) -> None:
        """HZH114 names the line and column; NaN is not JSON either."""
        (tmp_path / "d.json").write_text('{\n  "a": ,\n}', encoding="utf-8")
        (tmp_path / "n.json").write_text("[NaN]", encoding="utf-8")
        with pytest.raises(CapabilityError) as caught:
            read(FilesCapability(tmp_path), "d.json")
        assert caught.value.code == "HZH114"
        assert "line 2" in caught.value.message
        assert code_of(FilesCapability(tmp_path), "n.json") == "HZH114"

    def test_missing_file_is_hzh110(self, tmp_path: Path) -> None:
        """A file that is not there is a coded error, not a traceback."""
        assert code_of(FilesCapability(tmp_path), "gone.md") == "HZH110"

    def test_not_utf8_is_hzh113(self, tmp_path: Path) -> None:
        """Binary content is refused."""
        (tmp_path / "b.txt").write_bytes(b"\xff\xfe\x00")
        assert code_of(FilesCapability(tmp_path), "b.txt") == "HZH113"

    def test_over_the_size_cap_is_hzh112(self, tmp_path: Path) -> None:
        """A file larger than max_bytes is refused before parsing."""
        (tmp_path / "big.txt").write_text("x" * 11, encoding="utf-8")
        assert code_of(FilesCapability(tmp_path, max_bytes=10), "big.txt") == "HZH112"
        (tmp_path / "ok.txt").write_text("x" * 10, encoding="utf-8")
        assert read(FilesCapability(tmp_path, max_bytes=10), "ok.txt") == "x" * 10

    def test_directory_is_hzh111(self, tmp_path: Path) -> None:
        """Only regular files are read."""
        (tmp_path / "dir").mkdir()
        assert code_of(FilesCapability(tmp_path), "dir") == "HZH111"

    def test_fifo_is_refused_without_blocking(self, tmp_path: Path) -> None:
        """A named pipe is not read (and the open does not hang)."""
        os.mkfifo(tmp_path / "pipe.txt")
        assert code_of(FilesCapability(tmp_path), "pipe.txt") == "HZH111"

    def test_link_to_the_same_kind_of_file_is_followed(self, tmp_path: Path) -> None:
        """A .json link to a .json file reads the target."""
        (tmp_path / "real.json").write_text("[1]", encoding="utf-8")
        (tmp_path / "link.json").symlink_to(tmp_path / "real.json")
        assert read(FilesCapability(tmp_path), "link.json") == [1]

    def test_link_to_another_kind_of_file_is_hzh111(self, tmp_path: Path) -> None:
        """A .json link to a .txt file is refused, never parsed silently."""
        (tmp_path / "real.txt").write_text("[1]", encoding="utf-8")
        (tmp_path / "link.json").symlink_to(tmp_path / "real.txt")
        assert code_of(FilesCapability(tmp_path), "link.json") == "HZH111"

    def test_link_to_a_directory_is_hzh111(self, tmp_path: Path) -> None:
        """A link whose target is a directory is refused."""
        (tmp_path / "d").mkdir()
        (tmp_path / "link").symlink_to(tmp_path / "d")
        assert code_of(FilesCapability(tmp_path), "link") == "HZH111"

    def test_cursor_moves_when_the_file_changes(self, tmp_path: Path) -> None:
        """The cursor is the file's mtime and size."""
        path = tmp_path / "n.txt"
        path.write_text("a", encoding="utf-8")
        os.utime(path, ns=(1, 1_000))
        first = FilesCapability(tmp_path).fetch("read", {"path": "n.txt"}, None, now=NOW)
        path.write_text("ab", encoding="utf-8")
        os.utime(path, ns=(1, 2_000))
        second = FilesCapability(tmp_path).fetch("read", {"path": "n.txt"}, None, now=NOW)
        assert (first.cursor, second.cursor) == ("1000:1", "2000:2")
        assert first.fingerprint != second.fingerprint

    def test_path_must_be_a_string(self, tmp_path: Path) -> None:
        """A non-string path is HZH102."""
        with pytest.raises(CapabilityError) as caught:
            FilesCapability(tmp_path).fetch("read", {"path": 3}, None, now=NOW)
        assert caught.value.code == "HZH102"
