"""`hz` processes forked from a parent that has imported hz once (a fork server).

A turn's process spends most of its CPU importing pydantic-ai and hz (about 0.55 of the
0.7 s a drafted offline wake takes here), and the tests that kill turns at every durable
boundary start hundreds of them. `run` and `Popen` take the same arguments as
`subprocess.run` and `subprocess.Popen` and give the same results; when the command is
`hz` (the venv's script), ``python -m heinzel`` or ``python SCRIPT.py``, the process is
an ``os.fork`` of a server that has already imported hz, pydantic-ai and the engine.
Anything else is started by `subprocess` as usual.

The forked child is a process of its own, as `exec` would make it: it takes the given
standard streams (passed over a Unix socket), working folder, environment (the whole of
it: nothing of the server's is left) and argument vector, runs `heinzel.cli.main` (or
the script, with ``runpy``) and leaves as the interpreter's exit does (threads joined,
atexit handlers run, streams flushed: `_leave`), so exit statuses, ``HZ_CRASH_AT``'s
``os._exit(137)`` and a SIGKILL from the test read exactly as they do for `subprocess`.
Only the interpreter's last step, freeing every object, is skipped after a clean exit: in
a forked child it copies nearly every page the server imported (``HZ_TESTS_FULL_EXIT=1``
keeps it). The server forks only while it has a single
thread, and reports each child's wait status over that child's own socket, so
`Popen.wait`, `poll`, `kill` and `communicate` work unchanged (this class overrides only
how the child starts and how its status is read).

What differs from `exec`: the modules were imported before the child's environment was
set (hz reads its variables when a command runs, not at import: the tests that prove the
user's own commands, such as the README walk and the model tests' key paths, still exec
the real `hz`), and every child shares the server's string-hash seed.
``HZ_TESTS_EXEC=1`` turns the fork server off: every process is exec'd.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import selectors
import socket
import subprocess
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = ["Popen", "run"]

HZ = str(Path(sys.executable).with_name("hz"))
PRELOAD = (
    "heinzel.cli",
    "heinzel.cli.commands",
    "heinzel.app",
    "heinzel.service",
    "heinzel.turns.host",
    "heinzel.turns.models",
    "heinzel.engine.offline",
    "heinzel.engine.run",
    "heinzel.engine.chat",
    "heinzel.capabilities.configured",
    "pydantic_ai.models.anthropic",
    "pydantic_ai.providers.anthropic",
    "pydantic_ai.models.openai",
    "pydantic_ai.providers.openai",
    "anyio._backends._asyncio",
    "heinzel.cli.credential",
    "heinzel.cli.graph",
    "heinzel.cli.migrate",
    "heinzel.cli.report",
    "heinzel.cli.serve",
    "heinzel.cli.team",
    "heinzel.cli.trial",
    "heinzel.cli.verbs",
    "heinzel.tick.tick",
    "heinzel.team.team",
    "heinzel.index.due",
    "heinzel.index.versions",
    "heinzel.contract.schedule",
    "heinzel.session.retention",
    "heinzel.session.replies",
    "heinzel.session.actions",
    "heinzel.session.graph",
    "heinzel.service.doctor",
    "heinzel.service.drafts",
    "heinzel.service.outputs",
    "croniter",
    "yaml",
    "ulid",
)
"""What a turn's process imports (`python -X importtime` of a wake and a tick), what a
wake loads only when it needs it (a chat turn's proposals, the adapter tables' models),
and the providers' models, which read their keys when a model is made, not at import.
Then what the forked children of the suite's tests imported beyond those, most to least
often (each child's new ``sys.modules`` logged over tests/team, tests/loop and
tests/turns): every command registers the whole group (`heinzel.cli.group`), a tick
loads the tick, the team and the index's due query, and croniter, which runs ``file``
on the interpreter at import (`platform.architecture`): a child process of its own."""

_MESSAGE = 1 << 20


def _plan(args: Sequence[str]) -> tuple[str, list[str], str | None] | None:
    """How to run ``args`` in a forked child: (``"hz"`` or ``"script"``, its ``sys.argv``,
    its ``sys.path[0]``, None for the working folder as ``python -m`` has it), or None when
    it is not an hz command or a Python script."""
    if not args:
        return None
    first = str(args[0])
    rest = [str(a) for a in args[1:]]
    if first == HZ:
        return "hz", [first, *rest], str(Path(HZ).parent)
    if first != sys.executable or not rest:
        return None
    if rest[:2] == ["-m", "heinzel"]:
        main = str(Path(__file__).parent.parent / "heinzel" / "__main__.py")
        return "hz", [main, *rest[2:]], None
    if rest[0].endswith(".py") and not rest[0].startswith("-"):
        script = str(Path(rest[0]).resolve())
        return "script", [script, *rest[1:]], str(Path(script).parent)
    return None


class _Server:
    """This process's fork server: started on first use, one per test worker."""

    lock = threading.Lock()
    control: socket.socket | None = None
    process: subprocess.Popen[bytes] | None = None
    broken = False

    @classmethod
    def channel(cls) -> socket.socket | None:
        with cls.lock:
            if cls.broken or os.environ.get("HZ_TESTS_EXEC") == "1":
                return None
            if cls.process is not None and cls.process.poll() is None and cls.control:
                return cls.control
            if cls.control is not None:  # a server that died: start another
                cls.control.close()
                cls.control = None
            ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            env = {k: v for k, v in os.environ.items() if not k.startswith("HZ_")}
            full = ["full-exit"] if os.environ.get("HZ_TESTS_FULL_EXIT") == "1" else []
            cls.process = subprocess.Popen(
                [sys.executable, __file__, str(theirs.fileno()), *full],
                pass_fds=[theirs.fileno()],
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
            )
            theirs.close()
            ready = ours.recv(64)
            if ready != b"ready":  # no pidfds, or threads at start: exec instead
                cls.broken = True
                cls.process.wait()
                ours.close()
                return None
            cls.control = ours
            atexit.register(cls.stop)
            return ours

    @classmethod
    def lost(cls) -> None:
        """The server died under us: forget it (the next command starts another)."""
        with cls.lock:
            if cls.control is not None:
                cls.control.close()
            cls.control = None

    @classmethod
    def stop(cls) -> None:
        """Let the server go (it leaves when its control socket closes) and reap it."""
        if cls.control is not None:
            cls.control.close()
            cls.control = None
        if cls.process is not None:
            cls.process.wait()


class Popen(subprocess.Popen[Any]):
    """`subprocess.Popen`, forked from the fork server when the command is hz's."""

    _status: socket.socket | None = None

    def _execute_child(  # type: ignore[override]
        self,
        args: Any,
        executable: Any,
        preexec_fn: Any,
        close_fds: bool,
        pass_fds: Sequence[int],
        cwd: Any,
        env: Any,
        startupinfo: Any,
        creationflags: int,
        shell: bool,
        p2cread: int,
        p2cwrite: int,
        c2pread: int,
        c2pwrite: int,
        errread: int,
        errwrite: int,
        *rest: Any,
    ) -> None:
        # rest: restore_signals, gid, gids, uid, umask, start_new_session, process_group
        # a umask, ids or a process group the server cannot give its child: exec'd instead
        unusual = any(v is not None for v in rest[1:4]) or rest[4] != -1
        unusual = unusual or rest[6] not in (None, -1)
        plan = None if (shell or pass_fds or preexec_fn or unusual) else _plan(args)
        control = _Server.channel() if plan else None

        def exec_instead() -> None:
            super(Popen, self)._execute_child(  # type: ignore[misc]
                args, executable, preexec_fn, close_fds, pass_fds, cwd, env, startupinfo,
                creationflags, shell, p2cread, p2cwrite, c2pread, c2pwrite, errread,
                errwrite, *rest,
            )  # fmt: skip

        if plan is None or control is None:
            exec_instead()
            return
        mode, argv, path0 = plan
        folder = str(Path(cwd if cwd is not None else os.getcwd()).resolve())
        request = {
            "mode": mode,
            "argv": argv,
            "path0": folder if path0 is None else path0,
            "cwd": folder,
            "env": dict(os.environ if env is None else env),
            "session": bool(rest[5]),
        }
        stdio = [
            p2cread if p2cread != -1 else 0,
            c2pwrite if c2pwrite != -1 else 1,
            errwrite if errwrite != -1 else 2,
        ]
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            socket.send_fds(control, [json.dumps(request).encode()], [theirs.fileno(), *stdio])
        except OSError:  # the server is gone: this process is exec'd, the next starts one
            ours.close()
            _Server.lost()
            exec_instead()
            return
        finally:
            theirs.close()
        started = json.loads(ours.recv(_MESSAGE))
        self.pid = started["pid"]
        self._status = ours
        self._close_pipe_fds(p2cread, p2cwrite, c2pread, c2pwrite, errread, errwrite)

    def _read_status(self, block: bool) -> int | None:
        """The child's wait status from the server (None: not yet, when not blocking). A
        server gone without saying is exit status 255, so the test fails loudly."""
        status = self._status
        assert status is not None
        status.setblocking(block)
        try:
            data = status.recv(_MESSAGE)
        except BlockingIOError:
            return None
        finally:
            status.setblocking(True)
        status.close()
        self._status = None
        return int(json.loads(data)["status"]) if data else 255 << 8

    def _try_wait(self, wait_flags: int) -> tuple[int, int]:
        if self._status is None:
            return super()._try_wait(wait_flags)  # type: ignore[misc]
        sts = self._read_status(block=not wait_flags & os.WNOHANG)
        return (0, 0) if sts is None else (self.pid, sts)

    def _internal_poll(self, _deadstate: Any = None, *args: Any, **kwargs: Any) -> int | None:
        if self._status is None:
            return super()._internal_poll(_deadstate, *args, **kwargs)  # type: ignore[misc]
        if self.returncode is None and self._waitpid_lock.acquire(False):  # type: ignore[attr-defined]
            try:
                if self.returncode is None and self._status is not None:
                    sts = self._read_status(block=False)
                    if sts is not None:
                        self._handle_exitstatus(sts)  # type: ignore[attr-defined]
            except OSError:
                if _deadstate is not None:
                    self.returncode = _deadstate
            finally:
                self._waitpid_lock.release()  # type: ignore[attr-defined]
        return self.returncode


def run(
    args: Sequence[str],
    *,
    input: str | bytes | None = None,
    capture_output: bool = False,
    timeout: float | None = None,
    check: bool = False,
    **kwargs: Any,
) -> subprocess.CompletedProcess[Any]:
    """`subprocess.run`, with `Popen` above (so an hz command is forked, not exec'd)."""
    if input is not None:
        kwargs["stdin"] = subprocess.PIPE
    if capture_output:
        kwargs["stdout"] = subprocess.PIPE
        kwargs["stderr"] = subprocess.PIPE
    with Popen(args, **kwargs) as process:
        try:
            stdout, stderr = process.communicate(input, timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
            raise
        except BaseException:
            process.kill()
            raise
        code = process.poll()
        assert code is not None
        if check and code:
            raise subprocess.CalledProcessError(code, args, output=stdout, stderr=stderr)
    return subprocess.CompletedProcess(args, code, stdout, stderr)


def hz(args: Sequence[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """``hz ARGS`` as a user runs it (forked), its output as text; a traceback fails the test:
    whatever went wrong, a person gets a coded error, never Python's."""
    done = run([HZ, *args], env=env, cwd=cwd, capture_output=True, text=True, check=False)
    assert "Traceback" not in done.stderr, done.stderr
    return done


# --- the server ---------------------------------------------------------------------------


def _serve(control: socket.socket) -> dict[str, Any]:
    """Fork a child per request and report its wait status; returns only in a child."""
    picker = selectors.DefaultSelector()
    picker.register(control, selectors.EVENT_READ, None)
    waiting: dict[int, tuple[int, socket.socket]] = {}  # pidfd -> (pid, its status socket)
    while True:
        for key, _ in picker.select():
            if key.data is None:
                try:
                    message, fds, _flags, _addr = socket.recv_fds(control, _MESSAGE, 4)
                except OSError:
                    message, fds = b"", []
                if not message:  # the test worker is gone
                    sys.exit(0)
                status = socket.socket(fileno=fds[0])
                request = json.loads(message)
                sys.stdout.flush()
                sys.stderr.flush()
                pid = os.fork()
                if pid == 0:
                    picker.close()
                    control.close()
                    for _pid, other in waiting.values():
                        other.close()
                    for pidfd in waiting:
                        os.close(pidfd)
                    status.close()
                    request["stdio"] = fds[1:]
                    return request
                for fd in fds[1:]:
                    os.close(fd)
                status.send(json.dumps({"pid": pid}).encode())
                pidfd = os.pidfd_open(pid)
                waiting[pidfd] = (pid, status)
                picker.register(pidfd, selectors.EVENT_READ, pid)
            else:
                pidfd = key.fd
                pid, status = waiting.pop(pidfd)
                picker.unregister(pidfd)
                os.close(pidfd)
                _, sts = os.waitpid(pid, 0)
                with contextlib.suppress(OSError):  # the test let go of this process
                    status.send(json.dumps({"status": sts}).encode())
                status.close()


def _become(request: dict[str, Any]) -> None:
    """Turn this forked child into the process the request describes."""
    for target, fd in enumerate(request["stdio"]):
        os.dup2(fd, target)
    for fd in set(request["stdio"]):
        if fd > 2:
            os.close(fd)
    if request["session"]:
        os.setsid()
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    locale = next((os.environ[k] for k in ("LC_ALL", "LC_CTYPE", "LANG") if os.environ.get(k)), "C")
    if locale in ("C", "POSIX") and os.environ.get("PYTHONCOERCECLOCALE") != "0":
        os.environ["LC_CTYPE"] = "C.UTF-8"  # as a new interpreter coerces the C locale (PEP 538)
    sys.argv = list(request["argv"])
    sys.path[0] = request["path0"]


def _main() -> None:
    import importlib

    control = socket.socket(fileno=int(sys.argv[1]))
    full_exit = sys.argv[2:] == ["full-exit"]
    sys.path[0] = str(Path(__file__).parent.parent)  # tests/machines would shadow machines
    from machines.loading import loading

    with loading():
        for name in PRELOAD:
            importlib.import_module(name)
    try:  # a fork would copy a half-held lock; a child's status is read through a pidfd
        usable = len(os.listdir("/proc/self/task")) == 1
        os.close(os.pidfd_open(os.getpid()))
    except (OSError, AttributeError):  # not Linux, or a kernel before 5.3
        usable = False
    if not usable:
        control.send(b"unusable")
        return
    control.send(b"ready")
    request = _serve(control)
    _become(request)
    try:
        if request["mode"] == "script":
            import runpy

            runpy.run_path(sys.argv[0], run_name="__main__")
            leaving = SystemExit(None)
        else:
            from heinzel.cli import main

            sys.exit(main())  # type: ignore[func-returns-value]
    except SystemExit as exit_:
        leaving = exit_
    if full_exit or not (leaving.code is None or isinstance(leaving.code, int)):
        raise leaving
    _leave(leaving)


def _leave(leaving: SystemExit) -> None:
    """End this child as the interpreter's exit does, without its teardown.

    The interpreter's exit joins the threads that are not daemons, runs the atexit
    handlers, flushes the standard streams, then frees every object it holds. In a
    forked child that last step writes to nearly every page the server imported, so the
    kernel copies them: about 23,000 page faults and 0.1 s of CPU, five to eight times
    what the rest of a short command costs here. The first three are done as the
    interpreter does them; then the child leaves with the same status. A stream that
    cannot be flushed (a closed pipe), a non-integer exit code or an exception leaves
    through the interpreter's own exit, as does every child with HZ_TESTS_FULL_EXIT=1.
    """
    import atexit

    threading._shutdown()  # type: ignore[attr-defined]
    atexit._run_exitfuncs()
    try:
        for stream in (sys.stdout, sys.stderr):
            if stream is not None:
                stream.flush()
    except Exception:
        raise leaving from None  # the interpreter's exit says it (status 120) as it does
    os._exit(0 if leaving.code is None else int(leaving.code))


if __name__ == "__main__":
    _main()
