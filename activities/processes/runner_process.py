"""Run the definition runner to its end, for the steps before a run (capture, the smoke):
forked from the Steward worker's fork server when it is warm (Inspect already imported: the
step costs its own work, not ~5 CPU-seconds of start-up), else as a fresh process.

Either way the runner has its own session, so a step that overruns its time is killed with
everything it started (a sandbox helper), and so are what it left behind when it ends.
"""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

from steward.activities.processes import forkserver
from steward.activities.processes.worker_fork import fork_worker

FORK_ENV = "STEWARD_FORK_WORKERS"  # "0": start runners and task workers fresh, never forked
WARM_WAIT_S = 60.0  # the fork server's imports, on a busy machine


def forking() -> bool:
    return os.environ.get(FORK_ENV, "1") != "0" and forkserver.ready_soon(WARM_WAIT_S)


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def run_runner(
    command: list[str],
    env: dict[str, str],
    cwd: str,
    stdout: Path,
    stderr: Path,
    timeout: float,
) -> int | None:
    """Run the runner's `command` in `cwd` with `env`, its output in `stdout` and `stderr`; its
    exit code, or None when it overran `timeout` seconds (then it and its group are killed)."""
    if forking():
        process = fork_worker(command, env, cwd, stdout, stderr)
        assert process.pid is not None
        try:
            process.join(timeout)
            code = process.exitcode  # None: still running at the deadline
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
        finally:
            _kill_group(started.pid)
            started.wait(10)
    return code
