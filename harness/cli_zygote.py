"""Run `steward` commands as forks of a process that has already imported the CLI.

Each `steward` call in the e2e tests used to be a new Python process paying about a CPU-second
to import Temporal, pydantic models and Typer before doing anything; the suite makes hundreds
of calls, and on two cores that import was over half of the suite's CPU. The zygote imports
`steward.cli.main` once and forks a child per call: the child is still its own process (its own cwd,
environment, stdout/stderr, exit code, and it can be killed on a timeout), running the same
`steward.cli.main.run()` the `steward` script runs, only without the import.

The zygote imports nothing it could configure from the environment at import time (Inspect is
imported by the commands that need it, in the child, under the call's environment), creates no
threads, event loops or Temporal runtimes before it forks, and resets every inherited signal
disposition in the child. `STEWARD_TEST_SUBPROCESS=1` makes the harness run the `steward`
script instead, as before.

Protocol, one connection per call on a Unix socket: the client sends one JSON line (args, cwd,
env, stdout and stderr paths). A forked child forks the command's process, answers `pid <n>`
and, once that process has ended, `exit <code>` (negative: the signal that killed it).
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

_zygote: subprocess.Popen | None = None
_address: str | None = None
_start_lock = threading.Lock()


def _address_for_this_process() -> str:
    directory = Path(tempfile.mkdtemp(prefix="steward-zygote-"))
    return str(directory / "zygote.sock")


def _ensure_started() -> str:
    global _zygote, _address
    with _start_lock:
        if _zygote is not None and _zygote.poll() is None:
            return _address
        _address = _address_for_this_process()
        _zygote = subprocess.Popen(
            [sys.executable, "-m", "harness.cli_zygote", _address],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            cwd=Path(__file__).resolve().parent.parent,
        )
        deadline = time.monotonic() + 60
        while not Path(_address).exists():
            if _zygote.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the steward zygote did not start (exit {_zygote.poll()})")
            time.sleep(0.05)
        atexit.register(stop)
        return _address


def stop() -> None:
    global _zygote
    if _zygote is not None and _zygote.poll() is None:
        _zygote.kill()
        _zygote.wait()
    _zygote = None
    if _address is not None:
        shutil.rmtree(Path(_address).parent, ignore_errors=True)


def run(
    args: list[str], cwd: Path | None, env: dict[str, str], timeout: float
) -> tuple[int, str, str]:
    """Run `steward *args` in a forked child; (exit code, stdout, stderr) as subprocess.run
    gives them, and subprocess.TimeoutExpired (the child killed) past `timeout`."""
    address = _ensure_started()
    with tempfile.TemporaryDirectory(prefix="steward-call-") as scratch:
        out, err = Path(scratch) / "stdout", Path(scratch) / "stderr"
        request = {
            "args": list(args),
            "cwd": str(cwd) if cwd is not None else os.getcwd(),
            "env": env,
            "stdout": str(out),
            "stderr": str(err),
        }
        deadline = time.monotonic() + timeout
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as connection:
            connection.connect(address)
            connection.sendall(json.dumps(request).encode() + b"\n")
            reader = connection.makefile("rb")
            # bounded too: a zygote that never answers must not hold the test past `timeout`
            connection.settimeout(timeout)
            try:
                pid = int(reader.readline().split()[1])
            except TimeoutError:
                raise subprocess.TimeoutExpired(["steward", *args], timeout) from None
            code = None
            while code is None:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    _kill(pid)
                    raise subprocess.TimeoutExpired(["steward", *args], timeout)
                connection.settimeout(remaining)
                try:
                    line = reader.readline()
                except TimeoutError:
                    continue
                if not line.startswith(b"exit "):
                    raise RuntimeError(f"the steward zygote lost the call {args}")
                code = int(line.split()[1])
        return code, out.read_text(errors="replace"), err.read_text(errors="replace")


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


# ---------- the zygote itself ----------
def _serve(address: str) -> None:
    import steward.cli.main  # noqa: F401  (the import every child is spared)

    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # children reap themselves
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(address + ".tmp")
    listener.listen(64)
    os.rename(address + ".tmp", address)  # the client waits for the name: bound and listening
    parent = os.getppid()
    listener.settimeout(1.0)
    while True:
        try:
            connection, _ = listener.accept()
        except TimeoutError:
            if os.getppid() != parent:  # the test process is gone
                os._exit(0)
            continue
        if os.fork() == 0:
            listener.close()
            _child(connection)  # never returns
        connection.close()


def _child(connection: socket.socket) -> None:
    """Fork the command's own process, say its pid, and report how it ended (the CLI leaves
    through os._exit, so only its parent can know its exit code)."""
    try:
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        request = json.loads(connection.makefile("rb").readline())
        pid = os.fork()
        if pid == 0:
            connection.close()
            _command(request)  # never returns
        connection.sendall(f"pid {pid}\n".encode())
        status = os.waitpid(pid, 0)[1]
        connection.sendall(f"exit {os.waitstatus_to_exitcode(status)}\n".encode())
    finally:
        os._exit(0)


def _command(request: dict) -> None:
    code = 1
    try:
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        for fd, path in ((1, request["stdout"]), (2, request["stderr"])):
            target = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            os.dup2(target, fd)
            os.close(target)
        sys.argv = ["steward", *request["args"]]
        # Click names the program after argv[0] only when __main__ is a script, not `-m`.
        sys.modules["__main__"].__package__ = None
        code = _run_cli()
    finally:
        os._exit(code)


def _run_cli() -> int:
    from steward.cli.main import run as steward

    try:
        steward()  # leaves through os._exit (steward.cli.output.finish) on every normal path
        code = 0
    except SystemExit as exit_:
        code = exit_.code if isinstance(exit_.code, int) else (0 if exit_.code is None else 1)
    except BaseException:
        import traceback

        traceback.print_exc()
        code = 1
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    return code


if __name__ == "__main__":
    _serve(sys.argv[1])
