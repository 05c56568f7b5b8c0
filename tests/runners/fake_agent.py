"""A fake agent CLI for the command runner's tests: ``fake_agent.py MODE [key=value ...]``.

Keys: ``prompt``, ``contract``, ``out`` (output file), ``cwd`` (working dir),
``tools``, ``model``, ``timeout``, ``usd``, ``target`` (for the symlink mode).
Each mode is one behaviour a real agent CLI may show, friendly or hostile.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

MIB = 1024 * 1024


def spawn_grandchild(pid_file: Path, *, ignore_term: bool) -> None:
    """Start a process that sleeps forever in our group and record its pid."""
    code = "import signal, time\n"
    if ignore_term:
        code += "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
    code += "while True:\n    time.sleep(3600)\n"
    child = subprocess.Popen(
        [sys.executable, "-c", code],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    partial = pid_file.with_suffix(".partial")
    partial.write_text(str(child.pid))
    partial.replace(pid_file)  # atomic: a reader never sees an empty pid file


def main() -> int:
    mode = sys.argv[1]
    args = dict(arg.split("=", 1) for arg in sys.argv[2:] if "=" in arg)
    prompt = Path(args["prompt"]).read_text() if "prompt" in args else ""
    contract = Path(args["contract"]).read_text() if "contract" in args else ""
    out = sys.stdout.buffer
    if mode == "text":
        out.write(f"report on {prompt!r} under {contract!r}\n".encode())
    elif mode == "argv":
        out.write(json.dumps({"argv": sys.argv[1:], "cwd": os.getcwd()}).encode())
    elif mode == "stdin":
        out.write(("from stdin: " + sys.stdin.read()).encode())
    elif mode == "json":
        payload = {
            "report": f"json report on {prompt}",
            "model": "fake-model-1",
            "tool_calls": {"read": 2, "grep": 1},
            "num_turns": 3,
            "usage": {"input_tokens": 100, "output_tokens": 20, "cache_read_tokens": 5},
            "total_cost_usd": 0.25,
        }
        out.write(json.dumps(payload).encode())
    elif mode == "file":
        Path(args["out"]).write_text(f"file report on {prompt}")
    elif mode == "symlink":
        os.symlink(args["target"], args["out"])
    elif mode == "fifo":
        os.mkfifo(args["out"])
    elif mode == "env":
        out.write(json.dumps(dict(os.environ)).encode())
    elif mode == "empty":
        pass
    elif mode == "binary":
        out.write(b"\x00\xff\xfe binary \x00")
    elif mode == "not-utf8":
        out.write(b"caf\xe9 au lait")
    elif mode == "bad-json":
        out.write(b'{"report": "unterminated')
    elif mode == "huge":
        for _ in range(9):
            out.write(b"x" * MIB)
    elif mode == "huge-stderr":
        for _ in range(9):
            sys.stderr.buffer.write(b"e" * MIB)
        out.write(b"report despite a noisy stderr")
    elif mode == "fail":
        sys.stderr.write("boom: the agent fell over\n")
        return 3
    elif mode == "leave-child":
        spawn_grandchild(Path(args["cwd"]) / "grandchild.pid", ignore_term=False)
        out.write(b"done, but I left a child behind")
    elif mode == "hang":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        spawn_grandchild(Path(args["cwd"]) / "grandchild.pid", ignore_term=True)
        out.write(b"partial")
        out.flush()
        while True:
            time.sleep(3600)
    elif mode == "polite-hang":
        while True:
            time.sleep(3600)
    else:
        sys.stderr.write(f"unknown mode {mode}\n")
        return 2
    out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
