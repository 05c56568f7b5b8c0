"""Documented caps enforced: contracts, inputs and documents read with a size cap, regular
files only, in bounded memory; system paths never read; a linked document keeps its owner."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from heinzel.capabilities.documents import MAX_DOCUMENT_BYTES, LocalDocuments, draft_tag
from heinzel.capabilities.errors import CapabilityError
from heinzel.capabilities.files import FilesCapability
from ledger.errors import LedgerError
from ledger.files import read_capped
from tests import forkhz

ROOT = Path(__file__).resolve().parents[2]
PRIYA = ROOT / "fixtures" / "priya"
HZ = str(Path(sys.executable).with_name("hz"))
NOW = datetime(2026, 10, 30, 14, 5, tzinfo=UTC)


def _hz(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HZ_HOME": str(root / "home"), "HZ_NOW": "2026-10-30T14:05:00Z"}
    # the timeout only turns a hang (the old FIFO behaviour) into a failure
    return forkhz.run(
        [HZ, *args], cwd=root, env=env, capture_output=True, text=True, check=False, timeout=120
    )


@pytest.fixture
def root(tmp_path: Path) -> Path:
    shutil.copytree(PRIYA, tmp_path / "priya")
    return tmp_path / "priya"


class TestContractThroughHz:
    def test_a_52_megabyte_contract_is_refused(self, root: Path) -> None:
        """`hz heinzel new --from` a 52 MB contract is HZC072, not compiled."""
        big = root / "big.prose.md"
        text = (root / "weekly-report.prose.md").read_text(encoding="utf-8")
        big.write_text(text + ("\n" + "x" * 1023) * (52 * 1024), encoding="utf-8")
        done = _hz(root, "heinzel", "new", "--from", str(big))
        assert (done.returncode, done.stderr.split(":")[0]) == (1, "HZC072")

    def test_a_fifo_is_refused_without_waiting(self, root: Path) -> None:
        """`--from` a FIFO nobody writes to is HZC070 at once (it used to hang)."""
        fifo = root / "pipe.prose.md"
        os.mkfifo(fifo)
        done = _hz(root, "heinzel", "new", "--from", str(fifo))
        assert (done.returncode, done.stderr.split(":")[0]) == (1, "HZC070")

    def test_dev_zero_is_refused(self, root: Path) -> None:
        """`--from /dev/zero` is HZC070, not a MemoryError traceback."""
        done = _hz(root, "heinzel", "new", "--from", "/dev/zero")
        assert "Traceback" not in done.stderr
        assert (done.returncode, done.stderr.split(":")[0]) == (1, "HZC070")

    def test_a_non_utf8_contract_is_hzc071(self, root: Path) -> None:
        """A contract that is not UTF-8 is HZC071, the code docs/errors.md gives."""
        bad = root / "latin.prose.md"
        bad.write_bytes((root / "weekly-report.prose.md").read_bytes() + b"\n- caf\xe9\n")
        done = _hz(root, "heinzel", "new", "--from", str(bad))
        assert (done.returncode, done.stderr.split(":")[0]) == (1, "HZC071")


class TestReadCapped:
    def test_a_file_claiming_zero_bytes_is_still_capped(self, tmp_path: Path) -> None:
        """The cap counts bytes read, not the size the file claims (as /proc files claim 0)."""
        path = tmp_path / "grows.txt"
        path.write_bytes(b"y" * 100)
        assert read_capped(path, 100) == b"y" * 100
        with pytest.raises(LedgerError) as caught:
            read_capped(path, 99)
        assert caught.value.code == "HZL004"

    def test_a_device_is_not_a_regular_file(self) -> None:
        """/dev/zero is HZL003 before a byte is read."""
        with pytest.raises(LedgerError) as caught:
            read_capped(Path("/dev/zero"), 10)
        assert caught.value.code == "HZL003"


class TestFilesRead:
    @pytest.mark.parametrize("path", ["/proc/self/environ", "/sys/kernel/hostname", "/dev/null"])
    def test_system_paths_are_refused(self, path: str) -> None:
        """files.read of /proc, /sys or /dev is HZH117: the environment's keys stay out."""
        with pytest.raises(CapabilityError) as caught:
            FilesCapability().fetch("read", {"path": path}, None, now=NOW)
        assert caught.value.code == "HZH117"

    def test_a_link_into_proc_is_refused(self, tmp_path: Path) -> None:
        """A link named like a text file that points into /proc is refused too."""
        link = tmp_path / "environ"
        link.symlink_to("/proc/self/environ")
        with pytest.raises(CapabilityError) as caught:
            FilesCapability().fetch("read", {"path": str(link)}, None, now=NOW)
        assert caught.value.code == "HZH117"


class TestDocuments:
    def test_a_huge_document_is_refused_unread(self, tmp_path: Path) -> None:
        """A 200 MB document (sparse here) is HZH136, never read into memory."""
        doc = tmp_path / "report.md"
        with doc.open("wb") as handle:
            handle.truncate(200 * 1024 * 1024)
        assert doc.stat().st_size > MAX_DOCUMENT_BYTES
        with pytest.raises(CapabilityError) as caught:
            LocalDocuments("priya").read(f"file:{doc}")
        assert caught.value.code == "HZH136"

    @pytest.mark.skipif(os.getuid() != 0, reason="giving a file to another user needs root")
    def test_a_linked_document_keeps_its_owner_and_mode(self, tmp_path: Path) -> None:
        """Placing a draft through a symlink keeps the target's owner, group and mode."""
        target = tmp_path / "shared" / "report.md"
        target.parent.mkdir()
        target.write_text("# Report\n", encoding="utf-8")
        os.chown(target, 4321, 4321)
        os.chmod(target, 0o640)
        link = tmp_path / "report.md"
        link.symlink_to(target)
        key = f"hz-01JABCDEFGHJKMNPQRSTVWXYZ0@v1@2026-10-30T15:00@file:{link}"
        LocalDocuments("priya").place_draft(key, f"file:{link}", "- shipped", draft_tag("r", 1))
        info = target.stat()
        assert "- shipped" in target.read_text(encoding="utf-8")
        assert (info.st_uid, info.st_gid, stat.S_IMODE(info.st_mode)) == (4321, 4321, 0o640)
