"""The scan's child process, started in a fork instead of from scratch.

A scan runs in a process of its own (activities/scan/scan.py says why). Starting Python and
importing inspect_scout and Inspect costs ~6 CPU-seconds a scan; here each scan is forked from a
server that imported them once (activities/processes/forkserver.py, which the Steward worker warms up as
it starts). The child still starts as a fresh process would: the
caller's environment as it is at the time of the scan, the results directory as its working
directory (nothing there on sys.path), its output in a file of its own, and it is killed when
the activity is cancelled or the Steward worker exits. tiktoken's encodings are put where it
finds them without a download (activities/processes/tiktoken_offline.py) before it scans.
"""

from __future__ import annotations

import asyncio
import atexit
import multiprocessing
import os
import sys
from collections.abc import Callable
from multiprocessing.connection import Connection
from pathlib import Path

from steward.activities.processes.forkserver import context, start
from steward.activities.processes.tiktoken_offline import provide_encodings_or_warn

EXIT_GRACE_S = 15.0  # for a child that has answered to exit before it is killed
OUTPUT = "scan-process.log"  # the child's stdout and stderr, in the results directory

_live: set[multiprocessing.process.BaseProcess] = set()


@atexit.register
def _kill_live() -> None:
    """A scan must not outlive the worker that waits for it (nor hold up its exit)."""
    for process in list(_live):
        if process.is_alive():
            process.kill()


def _child(
    work: Callable[[dict], dict], request: dict, env: dict, cwd: str, send: Connection
) -> None:
    os.environ.clear()
    os.environ.update(env)
    os.chdir(cwd)
    sys.path[:] = [p for p in sys.path if p not in ("", ".", cwd)]
    output = os.open(Path(cwd) / OUTPUT, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(output, 1)
    os.dup2(output, 2)
    provide_encodings_or_warn()  # an LLM scanner's model may count tokens with tiktoken
    send.send(work(request))
    send.close()


async def run_in_child(
    work: Callable[[dict], dict], request: dict, cwd: Path, heartbeat: Callable[[], None],
    every_s: float,
) -> tuple[dict | None, str]:  # fmt: skip
    """`work(request)` in a forked child running in `cwd`; calls `heartbeat` every `every_s`
    while it runs. Returns its answer, or None and the last line it printed if it died."""
    forking = context()
    receive, send = forking.Pipe(duplex=False)
    process = forking.Process(
        target=_child,
        args=(work, request, dict(os.environ), str(cwd), send),
        name="steward-scan",
    )
    await asyncio.to_thread(start, process)  # the first one waits for the server's imports
    _live.add(process)
    send.close()
    try:
        while not await asyncio.to_thread(receive.poll, every_s):
            heartbeat()
        try:
            answer = receive.recv()
        except EOFError:  # it died without answering
            answer = None
    except asyncio.CancelledError:
        process.kill()
        raise
    finally:
        receive.close()
        # A child that answered but hangs on its way out must not hold the activity (and the
        # signoff waiting for it): it has said all it had to.
        await asyncio.to_thread(process.join, EXIT_GRACE_S)
        if process.is_alive():
            process.kill()
            await asyncio.to_thread(process.join)
        _live.discard(process)
    return answer, "" if answer is not None else _last_line(cwd / OUTPUT)


def _last_line(path: Path) -> str:
    try:
        lines = [line.strip() for line in path.read_text(errors="replace").splitlines()]
    except OSError:
        return "no output"
    lines = [line for line in lines if line]
    return lines[-1] if lines else "no output"
