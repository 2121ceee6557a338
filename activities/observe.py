"""Observe a run: which workers live, and how far each open task has got.

While a worker lives its control socket is asked (concurrently, with a short timeout: a busy
worker answering late is "no news", not "no progress"); the `.eval` logs answer otherwise and
are the truth about whether a task is complete.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from temporalio import activity

from workflows.contracts import (
    Observation,
    ObserveRequest,
    Progress,
    SetpointRequest,
    TaskObservation,
    WorkerProcess,
)
from workflows.names import Activity
from workflows.ramp import RampCounters, RampReading

from .cost import log_usage
from .processes import is_alive

SOCKET_TIMEOUT_S = 3.0
_LOG_STATUSES = {"started", "success", "cancelled", "error"}
_RUNNING_ROW = {"running", "started"}


@dataclass
class LogInfo:
    path: str
    identifier: str  # a log file never changes task
    stamp: tuple[float, int]  # (mtime, size) when `status` was read
    status: str


# path -> what we last read of it. Reading a header costs milliseconds; a tend of a big fleet
# would pay it for every log every time, so only re-read what changed and matters.
_logs: dict[str, LogInfo] = {}


# One client per control socket, and one thread pool, kept between tends: building an httpx
# client builds an SSL context (tens of ms of CPU), which for a fleet of 20 was most of a tend.
_clients: dict[str, httpx.Client] = {}
_pool = ThreadPoolExecutor(max_workers=16, thread_name_prefix="steward-observe")


def _client(socket: str) -> httpx.Client:
    client = _clients.get(socket)
    if client is None:
        transport = httpx.HTTPTransport(uds=socket)
        client = _clients[socket] = httpx.Client(transport=transport, base_url="http://inspect")
    return client


def _forget_gone_clients() -> None:
    """Close clients whose worker is gone (its socket file removed); other runs' stay."""
    for socket in [s for s in _clients if not Path(s).exists()]:
        _clients.pop(socket).close()


def control_get(socket: str, path: str, timeout: float = SOCKET_TIMEOUT_S) -> Any:
    response = _client(socket).get(path, timeout=timeout)
    response.raise_for_status()
    return response.json()


def _socket_rows(worker: WorkerProcess) -> list[dict]:
    """The worker's task rows, each with what the ramp needs: its config view (setpoint,
    adaptive connection limit) and the process's cumulative rate-limit retries for its model."""
    if not Path(worker.socket).exists():
        return []
    try:
        rows = control_get(worker.socket, "/tasks")
    except (httpx.HTTPError, ValueError):
        return []
    if not isinstance(rows, list):
        return []
    try:
        throughput = control_get(worker.socket, "/models/throughput").get("models", [])
    except (httpx.HTTPError, ValueError, AttributeError):
        throughput = None
    for row in rows:
        row["_worker_id"] = worker.worker_id
        row["_rate_limit"] = _rate_limit_retries(throughput, row.get("model"))
        try:
            row["_config"] = control_get(worker.socket, f"/tasks/{row['task_id']}/config")
        except (httpx.HTTPError, ValueError, KeyError):
            row["_config"] = None
    return rows


def _rate_limit_retries(models: list[dict] | None, model: str | None) -> int | None:
    if models is None:
        return None
    for entry in models:
        if entry.get("model") == model:
            return int(((entry.get("cumulative") or {}).get("retries") or {}).get("rate_limit", 0))
    return 0


def ramp_reading(row: dict) -> RampReading | None:
    """A row's concurrency figures; None when the worker did not answer all we need."""
    config, rate_limit = row.get("_config"), row.get("_rate_limit")
    if not isinstance(config, dict) or rate_limit is None or "task_id" not in row:
        return None
    samples = row.get("samples") or {}
    completed, errored = samples.get("completed", 0), samples.get("errored", 0)
    limits = [a["limit"] for a in config.get("adaptive") or [] if isinstance(a.get("limit"), int)]
    return RampReading(
        worker_id=row["_worker_id"],
        task_id=row["task_id"],
        counters=RampCounters(
            rate_limit_retries=rate_limit,
            http_retries=row.get("http_retries") or 0,
            errored=errored,
            finished=completed + errored,
        ),
        in_flight=samples.get("in_flight", 0),
        setpoint=(config.get("max_samples") or {}).get("limit"),
        connection_limit=min(limits) if limits else None,
    )


def _local_path(location: str) -> str:
    return location.removeprefix("file://")


def log_info(location: str, fresh_status: bool = True) -> LogInfo | None:
    """What a log is (its task identifier) and, when `fresh_status`, its current status.
    None while it cannot be read yet (being created or replaced)."""
    from inspect_ai._eval.evalset import task_identifier
    from inspect_ai.log import read_eval_log

    path = _local_path(location)
    try:
        stat = Path(path).stat()
    except OSError:
        return None
    stamp = (stat.st_mtime, stat.st_size)
    known = _logs.get(path)
    if known is not None and (known.stamp == stamp or not fresh_status):
        return known
    try:
        header = read_eval_log(path, header_only=True)
    except Exception:  # a log being replaced mid-read: try again next tend
        return known
    # A success log with invalidated samples (a re-run ruling) is not complete: its task resumes.
    status = "invalidated" if header.status == "success" and header.invalidated else header.status
    _logs[path] = LogInfo(path, task_identifier(header, None), stamp, status)
    return _logs[path]


def logs_by_identifier(log_dir: str, fresh_status: bool = False) -> dict[str, list[LogInfo]]:
    """identifier -> its logs, oldest first (log names start with their start time)."""
    found: dict[str, list[LogInfo]] = {}
    directory = Path(log_dir)
    if not directory.is_dir():
        return found
    present = sorted(str(p) for p in directory.glob("*.eval"))
    for gone in [p for p in _logs if Path(p).parent == directory and p not in present]:
        del _logs[gone]
    for path in sorted(present, key=lambda p: Path(p).name):
        info = log_info(path, fresh_status)
        if info is not None:
            found.setdefault(info.identifier, []).append(info)
    return found


def progress_from_log(path: str, total: int) -> Progress:
    from inspect_ai.log import read_eval_log_sample_summaries

    try:
        summaries = read_eval_log_sample_summaries(path)
    except Exception:
        return Progress(total=total)
    errored = sum(1 for s in summaries if s.error)
    return Progress(total=total, completed=len(summaries) - errored, errored=errored)


def _progress_from_row(row: dict, total: int) -> Progress:
    samples = row.get("samples") or {}
    return Progress(
        total=samples.get("total") or total,
        completed=samples.get("completed", 0),
        errored=samples.get("errored", 0),
        in_flight=samples.get("in_flight", 0),
        cancelled=samples.get("cancelled", 0),
    )


def observe_run_sync(request: ObserveRequest) -> Observation:
    observation = Observation()
    live: list[WorkerProcess] = []
    for worker in request.workers:
        alive = is_alive(worker.pid, worker.create_time)
        observation.alive[worker.worker_id] = alive
        if alive:
            live.append(worker)

    _forget_gone_clients()
    socket_rows = [row for rows in _pool.map(_socket_rows, live) for row in rows]

    logs = logs_by_identifier(request.log_dir)
    rows_by_identifier: dict[str, dict] = {}
    for row in socket_rows:
        info = (
            log_info(row["log_location"], fresh_status=False) if row.get("log_location") else None
        )
        if info is not None:
            rows_by_identifier[info.identifier] = row

    for spec in request.tasks:
        seen = TaskObservation(identifier=spec.identifier)
        row = rows_by_identifier.get(spec.identifier)
        newest = logs.get(spec.identifier, [])[-1:]
        if newest:
            # A log its live worker reports as running needs no header read to know that.
            running = row is not None and row.get("status") in _RUNNING_ROW
            info = newest[0] if running else log_info(newest[0].path) or newest[0]
            seen.log = info.path
            status = "started" if running else info.status
            seen.log_status = status if status in _LOG_STATUSES else None  # type: ignore[assignment]
        if row is not None and seen.log_status != "success":
            seen.progress, seen.source = _progress_from_row(row, spec.planned_samples), "socket"
            seen.ramp = ramp_reading(row)
        elif seen.log is not None:
            seen.progress, seen.source = progress_from_log(seen.log, spec.planned_samples), "log"
        if seen.log is not None:
            seen.usage = log_usage(seen.log)
        observation.tasks[spec.identifier] = seen
    return observation


@activity.defn(name=Activity.OBSERVE_RUN)
def observe_run(request: ObserveRequest) -> Observation:
    observation = observe_run_sync(request)
    if request.anomalies is not None:
        from .triage import observe_anomalies_sync

        try:
            observation.anomalies = observe_anomalies_sync(request.anomalies)
        except Exception as err:  # progress still counts; anomalies are looked for next tend
            observation.anomaly_problem = f"{type(err).__name__}: {err}"
    return observation


def apply_setpoints_sync(request: SetpointRequest) -> list[str]:
    """PATCH each change into its worker (author and reason go into the log's config_updates).
    A worker that is gone or busy is skipped: the next tend sees it and decides again."""
    problems = []
    for change in request.changes:
        params: dict[str, Any] = {"author": "steward", "reason": change.reason or "steward ramp"}
        if change.max_samples is not None:
            params["max_samples"] = change.max_samples
        if change.max_connections is not None:
            params["max_connections"] = change.max_connections
        try:
            response = _client(change.socket).patch(
                f"/tasks/{change.task_id}/config", params=params, timeout=SOCKET_TIMEOUT_S
            )
            response.raise_for_status()
        except httpx.HTTPError as err:
            problems.append(f"{change.task_id}: {err}")
    return problems


@activity.defn(name=Activity.APPLY_SETPOINTS)
def apply_setpoints(request: SetpointRequest) -> list[str]:
    return apply_setpoints_sync(request)
