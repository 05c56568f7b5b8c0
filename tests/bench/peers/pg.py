"""A temporary Postgres cluster for the peers that run on Postgres (``run.py``), and
fsyncs counted with strace, of a worker and, for Postgres, of the server beside it.

The cluster is made with the machine's own ``initdb`` (on PATH, or Debian's
``/usr/lib/postgresql/<version>/bin``), started by ``pg_ctl`` on a free loopback port
with the server's defaults (``fsync``, ``synchronous_commit`` and ``wal_sync_method``
as shipped: a commit is durable when it returns), trust auth, and removed when the
bench ends. As root (Postgres refuses to run as root) it runs as the ``postgres`` user.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

FSYNC_CALLS = "fsync,fdatasync,msync,sync_file_range,sync,syncfs"
"""The syscalls that make data durable, counted together."""


@dataclass(frozen=True)
class Cluster:
    bin: Path
    data: Path
    port: int
    run_as: list[str]
    """The command prefix that runs a server tool as the cluster's owner."""

    def url(self, database: str) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def createdb(self, database: str) -> None:
        subprocess.run(
            [
                str(self.bin / "createdb"),
                "-h",
                "127.0.0.1",
                "-p",
                str(self.port),
                "-U",
                "postgres",
                database,
            ],
            check=True,
            capture_output=True,
        )

    def server_pids(self) -> list[int]:
        """The postmaster and every process it started (backends, walwriter, checkpointer)."""
        postmaster = int((self.data / "postmaster.pid").read_text().split()[0])
        children = []
        for stat in glob.glob("/proc/[0-9]*/stat"):
            with contextlib.suppress(OSError, ValueError, IndexError):
                fields = Path(stat).read_text().rsplit(")", 1)[1].split()
                if int(fields[1]) == postmaster:
                    children.append(int(Path(stat).parent.name))
        return [postmaster, *children]


def find_bin() -> Path | None:
    """The directory holding ``initdb``, ``pg_ctl`` and ``postgres``, or None."""
    found = shutil.which("pg_ctl")
    if found:
        return Path(os.path.realpath(found)).parent
    versions = sorted(
        glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"),
        key=lambda p: [int(x) for x in re.findall(r"\d+", p)],
    )
    return Path(versions[-1]).parent if versions else None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def cluster(parent: str | None) -> Iterator[Cluster | str]:
    """A running temporary cluster, or the reason there is none (a string)."""
    where = find_bin()
    if where is None or not (where / "initdb").exists():
        yield "no initdb/pg_ctl on PATH or under /usr/lib/postgresql/*/bin"
        return
    run_as: list[str] = []
    directory = Path(tempfile.mkdtemp(prefix="hz-peers-pg-", dir=parent))
    if os.geteuid() == 0:
        try:
            owner = pwd.getpwnam("postgres")
        except KeyError:
            shutil.rmtree(directory)
            yield "running as root and there is no postgres user to run the server as"
            return
        os.chown(directory, owner.pw_uid, owner.pw_gid)
        run_as = ["runuser", "-u", "postgres", "--"]
    data, port = directory / "data", free_port()
    log = directory / "server.log"
    try:
        made = subprocess.run(
            [
                *run_as,
                str(where / "initdb"),
                "-D",
                str(data),
                "-U",
                "postgres",
                "-A",
                "trust",
                "--no-sync",
                "-E",
                "UTF8",
            ],
            capture_output=True,
            text=True,
            check=False,
        )
        if made.returncode != 0:
            yield f"initdb failed: {made.stderr.strip()[-300:]}"
            return
        options = f"-p {port} -c listen_addresses=127.0.0.1 -k {directory}"
        started = subprocess.run(
            [
                *run_as,
                str(where / "pg_ctl"),
                "-D",
                str(data),
                "-l",
                str(log),
                "-o",
                options,
                "-w",
                "-t",
                "120",
                "start",
            ],
            capture_output=True,
            text=True,
            check=False,
        )
        if started.returncode != 0:
            reason = log.read_text()[-300:] if log.exists() else started.stderr[-300:]
            yield f"pg_ctl start failed: {reason.strip()}"
            return
        try:
            yield Cluster(where, data, port, run_as)
        finally:
            subprocess.run(
                [*run_as, str(where / "pg_ctl"), "-D", str(data), "-m", "fast", "-w", "stop"],
                capture_output=True,
                check=False,
            )
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def strace_calls(summary: Path) -> int:
    """The calls of the fsync family in an ``strace -c`` summary."""
    calls = 0
    for line in summary.read_text().splitlines():
        fields = line.split()
        if fields and fields[-1] in FSYNC_CALLS.split(",") and len(fields) >= 4:
            calls += int(fields[3])
    return calls


def attached(pids: list[int], within: float = 60.0) -> bool:
    """Whether every pid still alive has a tracer, waiting up to ``within`` seconds for
    strace (a backend that ended meanwhile needs none)."""
    end = time.monotonic() + within
    while time.monotonic() < end:
        waiting = 0
        for pid in pids:
            try:
                status = Path(f"/proc/{pid}/status").read_text()
            except OSError:
                continue
            if re.search(r"State:\s+[ZX]", status):
                continue
            found = re.search(r"TracerPid:\s+(\d+)", status)
            waiting += found is not None and found[1] == "0"
        if not waiting:
            return True
        time.sleep(0.01)
    return False


def counted_fsyncs(
    command: list[str], env: dict[str, str], server: Cluster | None, scratch: Path
) -> tuple[int, int]:
    """Run ``command`` under ``strace -f -c`` and return its fsync-family calls, and those
    of every server process (the postmaster followed with -f, so a backend forked for a
    connection counts too) while it ran; 0 for the server when there is none."""
    own, theirs = scratch / "worker.strace", scratch / "server.strace"
    tracer = None
    if server is not None:
        pids = server.server_pids()
        tracer = subprocess.Popen(
            ["strace", "-q", "-f", "-c", "-e", f"trace={FSYNC_CALLS}", "-o", str(theirs)]
            + [arg for pid in pids for arg in ("-p", str(pid))],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        if not attached(pids):
            tracer.kill()
            raise SystemExit(f"strace did not attach to every Postgres process of {pids}")
    try:
        subprocess.run(
            ["strace", "-q", "-f", "-c", "-e", f"trace={FSYNC_CALLS}", "-o", str(own), *command],
            env=env,
            check=True,
            capture_output=True,
        )
    finally:
        if tracer is not None:
            tracer.send_signal(signal.SIGINT)
            tracer.wait(timeout=60)
    return strace_calls(own), strace_calls(theirs) if tracer is not None else 0
