"""Observe a run: which workers live, and how far each open task has got.

While a worker lives its control socket is asked (concurrently, with a short timeout: a busy
worker answering late is "no news", not "no progress"); the `.eval` logs answer otherwise and
are the truth about whether a task is complete.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
from temporalio import activity

from workflows.contracts import (
    Observation,
    ObserveRequest,
    Progress,
    TaskObservation,
    WorkerProcess,
)

from .processes import is_alive

SOCKET_TIMEOUT_S = 3.0
_LOG_STATUSES = {"started", "success", "cancelled", "error"}
# (path, mtime, size) -> (identifier, status); log headers do not change without the file changing.
_header_cache: dict[tuple[str, float, int], tuple[str, str]] = {}


def control_get(socket: str, path: str, timeout: float = SOCKET_TIMEOUT_S) -> Any:
    transport = httpx.HTTPTransport(uds=socket)
    with httpx.Client(transport=transport, base_url="http://inspect", timeout=timeout) as client:
        response = client.get(path)
        response.raise_for_status()
        return response.json()


def _socket_rows(worker: WorkerProcess) -> list[dict]:
    if not Path(worker.socket).exists():
        return []
    try:
        rows = control_get(worker.socket, "/tasks")
    except (httpx.HTTPError, ValueError):
        return []
    return rows if isinstance(rows, list) else []


def _local_path(location: str) -> str:
    return location.removeprefix("file://")


def log_header(location: str) -> tuple[str, str] | None:
    """(task identifier, status) of a log, or None while it cannot be read yet."""
    from inspect_ai._eval.evalset import task_identifier
    from inspect_ai.log import read_eval_log

    path = Path(_local_path(location))
    try:
        stat = path.stat()
    except OSError:
        return None
    key = (str(path), stat.st_mtime, stat.st_size)
    if key not in _header_cache:
        try:
            header = read_eval_log(str(path), header_only=True)
        except Exception:  # a log being replaced mid-read: try again next tend
            return None
        _header_cache[key] = (task_identifier(header, None), header.status)
    return _header_cache[key]


def logs_by_identifier(log_dir: str) -> dict[str, list[tuple[str, str]]]:
    """identifier -> [(log path, status)], oldest first (log names start with their start time)."""
    found: dict[str, list[tuple[str, str]]] = {}
    directory = Path(log_dir)
    if not directory.is_dir():
        return found
    for path in sorted(directory.glob("*.eval"), key=lambda p: p.name):
        header = log_header(str(path))
        if header is not None:
            found.setdefault(header[0], []).append((str(path), header[1]))
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
    )


def observe_run_sync(request: ObserveRequest) -> Observation:
    observation = Observation()
    live: list[WorkerProcess] = []
    for worker in request.workers:
        alive = is_alive(worker.pid, worker.create_time)
        observation.alive[worker.worker_id] = alive
        if alive:
            live.append(worker)

    with ThreadPoolExecutor(max_workers=max(1, min(16, len(live)))) as pool:
        socket_rows = [row for rows in pool.map(_socket_rows, live) for row in rows]

    logs = logs_by_identifier(request.log_dir)
    rows_by_identifier: dict[str, dict] = {}
    for row in socket_rows:
        location = row.get("log_location")
        header = log_header(location) if location else None
        if header is not None:
            rows_by_identifier[header[0]] = row

    for spec in request.tasks:
        seen = TaskObservation(identifier=spec.identifier)
        newest = logs.get(spec.identifier, [])[-1:] or [None]
        if newest[0] is not None:
            seen.log, status = newest[0]
            seen.log_status = status if status in _LOG_STATUSES else None  # type: ignore[assignment]
        row = rows_by_identifier.get(spec.identifier)
        if row is not None and seen.log_status != "success":
            seen.progress, seen.source = _progress_from_row(row, spec.planned_samples), "socket"
        elif seen.log is not None:
            seen.progress, seen.source = progress_from_log(seen.log, spec.planned_samples), "log"
        observation.tasks[spec.identifier] = seen
    return observation


@activity.defn(name="observe_run")
def observe_run(request: ObserveRequest) -> Observation:
    return observe_run_sync(request)
