"""Turn bodies: appended records, their hashes, gaps, and an explicit prune."""

from __future__ import annotations

import hashlib
import os
import stat
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from ledger.bodies import Bodies
from ledger.errors import LedgerError

NOW = datetime(2026, 10, 30, 15, 0, tzinfo=UTC)


class TestAppendAndRead:
    def test_records_read_back_in_order(self, tmp_path: Path) -> None:
        """What was appended is read back, record by record."""
        bodies = Bodies(tmp_path)
        bodies.append("t1", {"role": "user", "content": "hello"})
        bodies.append("t1", {"role": "model", "content": "hi ü"})
        assert bodies.read("t1") == [
            {"role": "user", "content": "hello"},
            {"role": "model", "content": "hi ü"},
        ]

    def test_the_hash_is_of_the_canonical_line(self, tmp_path: Path) -> None:
        """append returns sha256:<hex> of the line the body holds, without its newline."""
        bodies = Bodies(tmp_path)
        digest = bodies.append("t1", {"b": 1, "a": "x"})
        line = (tmp_path / "turns" / "t1.jsonl").read_bytes().rstrip(b"\n")
        assert line == b'{"a":"x","b":1}'
        assert digest == "sha256:" + hashlib.sha256(line).hexdigest()

    def test_add_writes_what_append_writes(self, tmp_path: Path) -> None:
        """add (a step's value, whose hash nobody reads) writes the same line as append."""
        added, appended = Bodies(tmp_path / "added"), Bodies(tmp_path / "appended")
        added.add("t1", {"b": 1, "a": "x"})
        appended.append("t1", {"b": 1, "a": "x"})
        assert added.read("t1") == [{"a": "x", "b": 1}]
        assert (tmp_path / "added" / "turns" / "t1.jsonl").read_bytes() == (
            tmp_path / "appended" / "turns" / "t1.jsonl"
        ).read_bytes()

    @pytest.mark.usefixtures("hostile_umask")
    def test_bodies_are_private(self, tmp_path: Path) -> None:
        """turns/ is 0700 and each body 0600 under umask 000."""
        Bodies(tmp_path).append("t1", {"a": 1})
        modes = [
            stat.S_IMODE(os.stat(p).st_mode)
            for p in (tmp_path / "turns", tmp_path / "turns" / "t1.jsonl")
        ]
        assert modes == [0o700, 0o600]

    def test_a_gone_body_is_a_gap(self, tmp_path: Path) -> None:
        """read returns None for a body that never was or was pruned."""
        assert Bodies(tmp_path).read("t9") is None

    def test_a_torn_record_is_cut_before_the_next_append(self, tmp_path: Path) -> None:
        """A crash mid-append never glues two records together."""
        bodies = Bodies(tmp_path)
        bodies.append("t1", {"a": 1})
        with (tmp_path / "turns" / "t1.jsonl").open("ab") as handle:
            handle.write(b'{"a":')
        assert bodies.read("t1") == [{"a": 1}]
        bodies.append("t1", {"a": 2})
        assert bodies.read("t1") == [{"a": 1}, {"a": 2}]

    def test_one_open_body_per_turn_closed_at_the_turn_end(self, tmp_path: Path) -> None:
        """Appends keep one descriptor per turn body, and close releases them all."""
        before = len(os.listdir("/proc/self/fd"))
        bodies = Bodies(tmp_path)
        for n in range(5):
            bodies.append("t1", {"n": n})
            bodies.append("t2", {"n": n})
        assert len(os.listdir("/proc/self/fd")) == before + 2
        bodies.close()
        assert len(os.listdir("/proc/self/fd")) == before
        bodies.append("t1", {"n": 5})
        bodies.close("t1")
        assert [r["n"] for r in bodies.read("t1") or []] == [0, 1, 2, 3, 4, 5]

    def test_a_body_removed_under_its_open_handle_is_written_anew(self, tmp_path: Path) -> None:
        """A record appended after the body was pruned lands in a new file, not a ghost."""
        bodies = Bodies(tmp_path)
        bodies.append("t1", {"a": 1})
        (tmp_path / "turns" / "t1.jsonl").unlink()
        bodies.append("t1", {"a": 2})
        assert bodies.read("t1") == [{"a": 2}]

    def test_a_damaged_line_is_a_coded_error(self, tmp_path: Path) -> None:
        """A complete line that is not a JSON object is HZL041."""
        bodies = Bodies(tmp_path)
        bodies.append("t1", {"a": 1})
        with (tmp_path / "turns" / "t1.jsonl").open("ab") as handle:
            handle.write(b"[1]\n")
        with pytest.raises(LedgerError) as caught:
            bodies.read("t1")
        assert caught.value.code == "HZL041"

    @pytest.mark.parametrize("turn", ["../x", "a/b", "", ".hidden", "a..b", "x" * 200])
    def test_turn_ids_cannot_escape_the_directory(self, tmp_path: Path, turn: str) -> None:
        """A turn id that is not a plain name is HZL040."""
        with pytest.raises(LedgerError) as caught:
            Bodies(tmp_path).append(turn, {"a": 1})
        assert caught.value.code == "HZL040"

    def test_a_record_that_is_not_json_is_refused(self, tmp_path: Path) -> None:
        """HZL042, and nothing is written."""
        with pytest.raises(LedgerError) as caught:
            Bodies(tmp_path).append("t1", {"a": object()})
        assert caught.value.code == "HZL042"
        assert Bodies(tmp_path).read("t1") is None

    def test_a_symlinked_body_is_refused(self, tmp_path: Path) -> None:
        """Reading or appending never follows a link."""
        (tmp_path / "turns").mkdir()
        (tmp_path / "secret").write_text("{}\n")
        (tmp_path / "turns" / "t1.jsonl").symlink_to(tmp_path / "secret")
        bodies = Bodies(tmp_path)
        for action in (lambda: bodies.read("t1"), lambda: bodies.append("t1", {"a": 1})):
            with pytest.raises(LedgerError) as caught:
                action()
            assert caught.value.code == "HZL001"
        assert (tmp_path / "secret").read_text() == "{}\n"


class TestPrune:
    def make(self, tmp_path: Path, *turns: str) -> Bodies:
        bodies = Bodies(tmp_path)
        for turn in turns:
            bodies.append(turn, {"a": 1})
        return bodies

    def test_prunes_only_turns_ended_before_retention(self, tmp_path: Path) -> None:
        """Ended 91 days ago goes; 89 days ago, unended and unknown stay."""
        bodies = self.make(tmp_path, "old", "recent", "running")
        ended = {"old": NOW - timedelta(days=91), "recent": NOW - timedelta(days=89)}
        assert bodies.prune(now=NOW, retention_days=90, ended=ended) == ["old"]
        assert [bodies.read(t) is None for t in ("old", "recent", "running")] == [
            True,
            False,
            False,
        ]

    def test_prune_is_idempotent(self, tmp_path: Path) -> None:
        """A second prune finds nothing to do."""
        bodies = self.make(tmp_path, "old")
        ended = {"old": NOW - timedelta(days=100)}
        assert bodies.prune(now=NOW, retention_days=90, ended=ended) == ["old"]
        assert bodies.prune(now=NOW, retention_days=90, ended=ended) == []

    def test_zero_keeps_forever(self, tmp_path: Path) -> None:
        """retention_days 0 deletes nothing."""
        bodies = self.make(tmp_path, "old")
        ended = {"old": NOW - timedelta(days=10_000)}
        assert bodies.prune(now=NOW, retention_days=0, ended=ended) == []
        assert bodies.read("old") is not None

    def test_never_deletes_links_or_foreign_files(self, tmp_path: Path) -> None:
        """Only regular <turn>.jsonl files go; a link and its target stay."""
        bodies = self.make(tmp_path, "real")
        (tmp_path / "target.jsonl").write_text("{}\n")
        (tmp_path / "turns" / "linked.jsonl").symlink_to(tmp_path / "target.jsonl")
        (tmp_path / "turns" / "notes.txt").write_text("mine")
        old = NOW - timedelta(days=365)
        ended = {"real": old, "linked": old, "notes": old}
        assert bodies.prune(now=NOW, retention_days=1, ended=ended) == ["real"]
        assert sorted(os.listdir(tmp_path / "turns")) == ["linked.jsonl", "notes.txt"]
        assert (tmp_path / "target.jsonl").exists()

    def test_a_symlinked_turns_directory_is_refused(self, tmp_path: Path) -> None:
        """prune never walks through a link to another directory."""
        (tmp_path / "elsewhere").mkdir()
        (tmp_path / "elsewhere" / "t.jsonl").write_text("{}\n")
        (tmp_path / "turns").symlink_to(tmp_path / "elsewhere")
        with pytest.raises(LedgerError) as caught:
            Bodies(tmp_path).prune(now=NOW, retention_days=1, ended={"t": NOW - timedelta(9)})
        assert caught.value.code == "HZL001"
        assert (tmp_path / "elsewhere" / "t.jsonl").exists()

    def test_no_turns_directory_prunes_nothing(self, tmp_path: Path) -> None:
        """A session without bodies is fine."""
        assert Bodies(tmp_path).prune(now=NOW, retention_days=1, ended={}) == []

    @pytest.mark.parametrize(
        ("retention", "now"), [(-1, NOW), (True, NOW), (1, NOW.replace(tzinfo=None))]
    )
    def test_bad_arguments_are_coded(self, tmp_path: Path, retention: int, now: datetime) -> None:
        """A negative or non-integer retention, or a naive time, is HZL043."""
        with pytest.raises(LedgerError) as caught:
            Bodies(tmp_path).prune(now=now, retention_days=retention, ended={})
        assert caught.value.code == "HZL043"

    def test_reading_never_prunes(self, tmp_path: Path) -> None:
        """An expired body is still readable until prune runs."""
        bodies = self.make(tmp_path, "old")
        assert bodies.read("old") == [{"a": 1}]
        assert bodies.exists("old")


class TestBodyWriteFailure:
    def test_a_write_the_disk_refuses_is_coded(self, tmp_path: Path) -> None:
        """A file size limit hit mid-append is HZL002, not a traceback."""
        code = f"""
import resource, signal
from ledger.bodies import Bodies
from ledger.errors import LedgerError
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
bodies = Bodies({str(tmp_path)!r})
bodies.append("t1", {{"a": 1}})
resource.setrlimit(resource.RLIMIT_FSIZE, (20, 20))
try:
    bodies.append("t1", {{"pad": "p" * 100}})
except LedgerError as error:
    print(error.code)
"""
        result = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True
        )
        assert result.stdout.split() == ["HZL002"]
