"""Per-task eval worker processes: spawn them detached, tell whether they live, stop them."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from datetime import UTC, datetime
from multiprocessing.process import BaseProcess
from pathlib import Path

import psutil
from temporalio import activity
from temporalio.exceptions import ApplicationError

from steward.activities.logs.log_owners import OWNER_ENV, Claim, Disowned, take
from steward.activities.logs.paths import write_atomic
from steward.activities.processes.control_socket import socket_path
from steward.activities.processes.runner_launch import (
    PACED_CONNECTIONS_ENV,
    runner_launch,
    selection_document,
    worker_steering,
)
from steward.activities.processes.runner_process import forking
from steward.activities.processes.worker_fork import fork_worker
from steward.workflows.activity_io import SpawnRequest, StopRequest, StopResult
from steward.workflows.contracts import WorkerProcess
from steward.workflows.names import Activity
from steward.workflows.policy.layout import workers_dir_of
from steward.workflows.policy.provider_budget import WORKER_COOLDOWN_S

# Children this process started: polling them reaps them, so a dead child is not a zombie.
_children: dict[int, subprocess.Popen] = {}
_forked: dict[int, BaseProcess] = {}  # task workers forked from the fork server, by pid
_exit_codes: dict[int, int] = {}  # pid -> return code of a reaped child (negative: signal)
# Workers this process told to stop: their SIGINT / SIGKILL is Steward's, not what they died of.
_stopped: set[tuple[int, float]] = set()  # (pid, create time)


def _workers_dir(workspace: str) -> Path:
    path = Path(workers_dir_of(workspace))
    path.mkdir(parents=True, exist_ok=True)
    return path


def _reaped(pid: int, wait: bool) -> bool:
    """Whether `pid`, a child of ours, has ended; its exit code is kept for exit_code_of. With
    `wait`, a child that is just ending (a zombie) is waited for briefly."""
    child = _children.get(pid)
    if child is not None:
        try:
            code = child.wait(1.0) if wait else child.poll()
        except subprocess.TimeoutExpired:
            code = None
        if code is not None:
            _children.pop(pid, None)
            _exit_codes[pid] = code
            return True
    forked = _forked.get(pid)
    if forked is not None:
        if wait:
            forked.join(1.0)
        if forked.exitcode is not None:
            _forked.pop(pid, None)
            _exit_codes[pid] = forked.exitcode
            return True
    return False


def is_alive(pid: int, create_time: float) -> bool:
    if _reaped(pid, wait=False):
        return False
    try:
        process = psutil.Process(pid)
        alive = (
            abs(process.create_time() - create_time) < 0.01
            and process.status() != psutil.STATUS_ZOMBIE
        )
    except psutil.Error:
        alive = False
    if not alive:
        # It ended between the poll above and psutil's look: collect its code now, or the
        # watch reports an exit code "unknown" for a child of ours.
        _reaped(pid, wait=True)
    return alive


def exit_code_of(pid: int) -> int | None:
    """How a child of this process ended (negative: the signal), once it has; None when it
    is not our child (e.g. adopted after a restart of the Steward worker)."""
    return _exit_codes.get(pid)


def stopped_by_steward(pid: int, create_time: float) -> bool:
    """Whether this process stopped the worker `pid` (a stop, a restart, a cancel)."""
    return (pid, create_time) in _stopped


def _write_json_atomic(path: Path, document: dict) -> None:
    write_atomic(path, json.dumps(document, indent=1, default=str))


def _start(command: list[str], env: dict[str, str], workspace: str, output: Path) -> int:
    """Start a task worker detached (its own session: it survives the Steward worker): forked
    from the fork server once that is warm, else as a fresh process. Its pid."""
    if forking():
        process = fork_worker(command, env, workspace, output)
        assert process.pid is not None
        _forked[process.pid] = process
        return process.pid
    with open(output, "ab") as out:
        started = subprocess.Popen(
            command,
            cwd=workspace,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    _children[started.pid] = started
    return started.pid


def spawn_worker_sync(request: SpawnRequest) -> WorkerProcess:
    directory = _workers_dir(request.workspace)
    record_path = directory / f"{request.worker_id}.json"
    # A retried spawn must not start a second process for the same worker id.
    if record_path.is_file():
        record = json.loads(record_path.read_text())
        if record.get("pid") and is_alive(record["pid"], record["create_time"]):
            return WorkerProcess.model_validate(record["worker"])

    selection = directory / f"{request.worker_id}.selection.json"
    output = directory / f"{request.worker_id}.log"
    overrides: dict[str, object] = {
        "log_dir": request.log_dir,
        "max_samples": request.max_samples,
        # A worker packed with several tasks (max_workers) runs them together, not one by one.
        "max_tasks": len(request.tasks),
    }
    if request.connections is not None:
        # Its share of the provider's connection budget: Inspect's adaptive controller, bounded.
        share = request.connections
        overrides["generate_config"] = {
            "adaptive_connections": {
                "min": share.floor,
                "start": share.start,
                "max": share.ceiling,
                # The budget bounds the fleet and judges an episode: a worker climbs back
                # from its own cut sooner than Inspect's 15 s (workflows/policy/provider_budget.py).
                "cooldown_seconds": WORKER_COOLDOWN_S,
            }
        }
    _write_json_atomic(selection, selection_document(request.eval_set_id, request.tasks, overrides))
    _write_json_atomic(
        record_path, {"state": "spawning", "selection": str(selection), "output": str(output)}
    )
    command, env = runner_launch(request.definition, worker_steering(selection, request.workspace))
    if request.claim_logs:
        claim = Claim(
            log_dir=request.log_dir,
            run=request.eval_set_id,
            worker_id=request.worker_id,
            host=request.host,
            identifiers=tuple(t.identifier for t in request.tasks),
        )
        try:
            take(claim)
        except Disowned as err:
            record_path.unlink(missing_ok=True)
            raise ApplicationError(str(err), non_retryable=True) from err
        env[OWNER_ENV] = claim.to_env()
    if request.connections is not None:
        env[PACED_CONNECTIONS_ENV] = "1"
    pid = _start(command, env, request.workspace, output)
    worker = WorkerProcess(
        worker_id=request.worker_id,
        tasks=[t.identifier for t in request.tasks],
        pid=pid,
        create_time=psutil.Process(pid).create_time(),
        socket=socket_path(pid),
        output=str(output),
        started_at=datetime.now(UTC),
    )
    _write_json_atomic(
        record_path,
        {
            "state": "spawned",
            "pid": worker.pid,
            "create_time": worker.create_time,
            "worker": worker.model_dump(mode="json"),
        },
    )
    return worker


@activity.defn(name=Activity.SPAWN_WORKER)
def spawn_worker(request: SpawnRequest) -> WorkerProcess:
    return spawn_worker_sync(request)


def _signal_group(worker: WorkerProcess, signum: int) -> None:
    try:
        os.killpg(worker.pid, signum)
    except (ProcessLookupError, PermissionError):
        pass


def stop_workers_sync(request: StopRequest, heartbeat=lambda: None) -> StopResult:
    """SIGINT (Inspect's graceful stop), then SIGKILL whatever is left after the grace."""
    result = StopResult()
    live = [w for w in request.workers if is_alive(w.pid, w.create_time)]
    for worker in live:
        _stopped.add((worker.pid, worker.create_time))
        _signal_group(worker, signal.SIGINT)
    deadline = time.monotonic() + request.grace_seconds
    while live and time.monotonic() < deadline:
        heartbeat()
        time.sleep(0.2)
        still = [w for w in live if is_alive(w.pid, w.create_time)]
        result.stopped_gracefully += [w.worker_id for w in live if w not in still]
        live = still
    for worker in live:
        _signal_group(worker, signal.SIGKILL)
        result.killed.append(worker.worker_id)
    for worker in live:
        for _ in range(50):
            if not is_alive(worker.pid, worker.create_time):
                break
            time.sleep(0.1)
    return result


@activity.defn(name=Activity.STOP_WORKERS)
def stop_workers(request: StopRequest) -> StopResult:
    return stop_workers_sync(request, heartbeat=activity.heartbeat)
