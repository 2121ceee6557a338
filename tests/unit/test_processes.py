"""Stopping workers: a graceful window (SIGINT), then SIGKILL for what ignores it."""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC, datetime

import psutil

from steward.activities.processes.processes import is_alive, stop_workers_sync
from steward.workflows.activity_io import StopRequest
from steward.workflows.contracts import WorkerProcess

IGNORES_SIGINT = "import signal, time; signal.signal(signal.SIGINT, signal.SIG_IGN); print('ready', flush=True); time.sleep(120)"
# Python's own SIGINT handler, explicitly: a child inherits an ignored SIGINT (scout ignores it
# in its process while it starts its pool), which is not what this test is about.
OBEYS_SIGINT = "import signal, time; signal.signal(signal.SIGINT, signal.default_int_handler); print('ready', flush=True); time.sleep(120)"


def _worker(worker_id: str, code: str) -> tuple[WorkerProcess, subprocess.Popen]:
    process = subprocess.Popen(
        [sys.executable, "-c", code], start_new_session=True, stdout=subprocess.PIPE, text=True
    )
    assert process.stdout.readline().strip() == "ready"
    worker = WorkerProcess(
        worker_id=worker_id,
        tasks=[],
        pid=process.pid,
        create_time=psutil.Process(process.pid).create_time(),
        socket="",
        output="",
        started_at=datetime.now(UTC),
    )
    return worker, process


def test_graceful_stop_then_kill_after_the_grace():
    polite, polite_process = _worker("polite", OBEYS_SIGINT)
    stubborn, stubborn_process = _worker("stubborn", IGNORES_SIGINT)
    result = stop_workers_sync(StopRequest(workers=[polite, stubborn], grace_seconds=2))
    assert result.stopped_gracefully == ["polite"]
    assert result.killed == ["stubborn"]
    assert polite_process.wait(5) != 0 and stubborn_process.wait(5) == -9
    assert not is_alive(polite.pid, polite.create_time) and not is_alive(
        stubborn.pid, stubborn.create_time
    )


def test_a_reused_pid_is_not_mistaken_for_the_worker():
    worker, process = _worker("w", OBEYS_SIGINT)
    assert is_alive(worker.pid, worker.create_time)
    assert not is_alive(
        worker.pid, worker.create_time - 100
    )  # same pid, another process's start time
    process.kill()
    process.wait()
