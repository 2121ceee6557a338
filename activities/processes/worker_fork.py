"""A task worker forked from the Steward worker's fork server (activities/processes/forkserver.py) instead
of started from scratch: the same `python -m steward.worker.definition_runner DEFINITION` from the
workspace, with Inspect already imported (the runner too: worker/inspect_preload.py). The runner
is an entry point of steward.worker, which activities never import: the child finds it by the
name its command line gives (runner_launch.RUNNER_MODULE), as a fresh process's `python -m` does.

The child makes itself what a fresh process would be: its own session (so it outlives the
Steward worker and a stop signals its whole group, as `start_new_session` did), the caller's
environment and working directory, stdin from /dev/null and its output in the worker's file.
It lets go of the fork server's liveness pipe, so a fork server whose Steward worker is gone
exits instead of waiting for every worker it forked. It ends by running its exit handlers (a
forked child otherwise leaves through os._exit) and exits with the runner's code.
"""

from __future__ import annotations

import atexit
import importlib
import multiprocessing
import os
import sys
from multiprocessing import forkserver
from multiprocessing.process import BaseProcess
from pathlib import Path

from steward.activities.processes.forkserver import context
from steward.activities.processes.forkserver import start as forkserver_start
from steward.activities.processes.runner_launch import RUNNER_MODULE

RUNNER_ARGS_START = 3  # [python, -m, RUNNER_MODULE, DEFINITION]: where the runner's args start


def _task_worker(
    argv: list[str], env: dict[str, str], cwd: str, output: str, errors: str | None = None
) -> None:
    os.setsid()
    alive = forkserver._forkserver._forkserver_alive_fd  # noqa: SLF001
    if alive is not None:
        os.close(alive)
        forkserver._forkserver._forkserver_alive_fd = None  # noqa: SLF001
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    out = os.open(output, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.dup2(out, 1)
    os.dup2(os.open(errors, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644) if errors else out, 2)
    os.environ.clear()
    os.environ.update(env)
    os.chdir(cwd)
    sys.path[0:0] = [cwd]  # as `python -m` puts the working directory first
    sys.argv = ["-m", *argv]
    # By name, not runpy.run_module: that would run a second copy of the preloaded runner (and
    # warn that it was already imported).
    runner = importlib.import_module(RUNNER_MODULE)

    code: int | str | None = 0
    try:
        runner.main(argv)
    except SystemExit as exit_:
        code = exit_.code
    finally:
        atexit._run_exitfuncs()  # noqa: SLF001
        sys.stdout.flush()
        sys.stderr.flush()
    if isinstance(code, str):
        print(code, file=sys.stderr, flush=True)
        code = 1
    os._exit(code or 0)


def fork_worker(
    command: list[str], env: dict[str, str], cwd: str, output: Path, errors: Path | None = None
) -> BaseProcess:
    """Start `command` (the runner's command line) as a forked task worker; its pid is set. Its
    output goes to `output` (stderr too, unless `errors` names another file)."""
    if command[1:RUNNER_ARGS_START] != ["-m", RUNNER_MODULE]:
        raise ValueError(f"not a definition runner's command line: {command}")
    for path in (output, errors):  # there to read even if the child dies before writing
        if path is not None:
            Path(path).touch()
    process = context().Process(
        target=_task_worker,
        args=(command[RUNNER_ARGS_START:], env, cwd, str(output), str(errors) if errors else None),
        name="steward-task-worker",
        daemon=False,
    )
    forkserver_start(process)
    # A task worker outlives the Steward worker: multiprocessing must not join it at exit.
    multiprocessing.process._children.discard(process)  # noqa: SLF001
    return process
