"""Run the definition runner to its end, for the steps before a run (capture, the smoke):
forked from the Steward worker's fork server when it is warm (Inspect already imported: the
step costs its own work, not ~5 CPU-seconds of start-up), else as a fresh process.

Either way the runner has its own session, so a step that overruns its time is killed with
everything it started (a sandbox helper), and so are what it left behind when it ends. Asked to,
it is first sent STACK_DUMP_SIGNAL, on which a capture runner writes every thread's Python stack
to its stderr (worker/definition_runner.py), so the caller can say where it was.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from steward.activities.processes import forkserver
from steward.activities.processes.worker_fork import fork_worker

FORK_ENV = "STEWARD_FORK_WORKERS"  # "0": start runners and task workers fresh, never forked
WARM_WAIT_S = 60.0  # the fork server's imports, on a busy machine
STACK_DUMP_SIGNAL = signal.SIGUSR1  # "write your stack to stderr" (faulthandler, in the runner)
DUMP_WAIT_S = 3.0  # for the dump to be written: a signal handler in C, so milliseconds when idle


def forking() -> bool:
    return os.environ.get(FORK_ENV, "1") != "0" and forkserver.ready_soon(WARM_WAIT_S)


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _ask_for_stack(pid: int, stderr: Path, ended: Callable[[], bool]) -> None:
    """Send the overrunning runner STACK_DUMP_SIGNAL and wait until its stderr stops growing
    (the dump is written) or it ended (one that had not registered the dump yet dies of the
    signal), at most DUMP_WAIT_S."""
    before = stderr.stat().st_size if stderr.exists() else 0
    try:
        os.kill(pid, STACK_DUMP_SIGNAL)
    except (ProcessLookupError, PermissionError):
        return
    deadline = time.monotonic() + DUMP_WAIT_S
    size, steady = before, 0
    while time.monotonic() < deadline and steady < 3 and not ended():
        time.sleep(0.05)
        now = stderr.stat().st_size if stderr.exists() else 0
        steady = steady + 1 if now == size and now > before else 0
        size = now


def run_runner(
    command: list[str],
    env: dict[str, str],
    cwd: str,
    stdout: Path,
    stderr: Path,
    timeout: float,
    dump_stack: bool = False,
) -> int | None:
    """Run the runner's `command` in `cwd` with `env`, its output in `stdout` and `stderr`; its
    exit code, or None when it overran `timeout` seconds (then it and its group are killed,
    after it was asked for its stack with `dump_stack`)."""
    if forking():
        process = fork_worker(command, env, cwd, stdout, stderr)
        assert process.pid is not None
        try:
            process.join(timeout)
            code = process.exitcode  # None: still running at the deadline
            if code is None and dump_stack:
                _ask_for_stack(process.pid, stderr, lambda: process.exitcode is not None)
        finally:
            _kill_group(process.pid)  # overran, interrupted, or what it left running
            process.join(10)
        return code
    with open(stdout, "wb") as out, open(stderr, "wb") as err:
        started = subprocess.Popen(
            command,
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=err,
            start_new_session=True,
        )
        try:
            code = started.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            code = None
            if dump_stack:
                _ask_for_stack(started.pid, stderr, lambda: started.poll() is not None)
        finally:
            _kill_group(started.pid)
            started.wait(10)
    return code
