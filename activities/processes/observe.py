"""Observe a run: which workers live, and how far each open task has got; and set a live
worker's concurrency (the ramp's setpoints).

While a worker lives its control socket is asked (activities/processes/control_socket.py); the `.eval`
logs answer otherwise and are the truth about whether a task is complete
(activities/logs/log_listing.py).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
from temporalio import activity

from steward.activities.logs.anomalies import (
    find_anomalies,
    healthy_suspects,
    stuck_samples,
    through_the_ledger,
)
from steward.activities.logs.cost import log_usage
from steward.activities.logs.log_listing import log_info, logs_by_identifier
from steward.activities.processes.control_socket import (
    SOCKET_TIMEOUT_S,
    ask_each,
    control_get,
    forget_gone_clients,
    socket_client,
)
from steward.activities.processes.processes import is_alive
from steward.workflows.activity_io import ObserveRequest, SetpointRequest
from steward.workflows.contracts import Observation, Progress, TaskObservation, WorkerProcess
from steward.workflows.names import Activity
from steward.workflows.policy.layout import workspace_record_of
from steward.workflows.policy.ramp import RampCounters, RampReading

_LOG_STATUSES = {"started", "success", "cancelled", "error"}
_RUNNING_ROW = {"running", "started"}


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
    limits, ceilings = _adaptive_bounds(config)
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
        connection_ceiling=max(ceilings) if ceilings else None,
    )


def _adaptive_bounds(config: dict) -> tuple[list[int], list[int]]:
    """A task config's adaptive controllers: their live limits and their ceilings."""
    adaptive = config.get("adaptive") or []
    limits = [a["limit"] for a in adaptive if isinstance(a.get("limit"), int)]
    ceilings = [a["max"] for a in adaptive if isinstance(a.get("max"), int)]
    return limits, ceilings


def connections_of(socket: str, rows: list[dict]) -> tuple[int | None, int | None, int | None]:
    """A worker's cumulative rate-limit retries for its tasks' models, and its adaptive
    controllers' lowest live limit and highest ceiling (None: not answered, or not adaptive)."""
    try:
        throughput = control_get(socket, "/models/throughput", timeout=2.0).get("models", [])
    except (httpx.HTTPError, ValueError, AttributeError):
        throughput = None
    models = {row.get("model") for row in rows}
    retries = (
        None if throughput is None else sum(_rate_limit_retries(throughput, m) or 0 for m in models)
    )
    limits, ceilings = [], []
    for row in rows:
        try:
            config = control_get(socket, f"/tasks/{row['task_id']}/config", timeout=2.0)
        except (httpx.HTTPError, ValueError, KeyError):
            continue
        if isinstance(config, dict):
            found = _adaptive_bounds(config)
            limits += found[0]
            ceilings += found[1]
    return retries, min(limits, default=None), max(ceilings, default=None)


def rate_limits_of(tasks) -> list:  # type: ignore[no-untyped-def]
    """What the workers learned of the rate limits of these tasks' models (the endpoints
    whose model is one of theirs), in the provider's units."""
    from steward.activities.capacity.rate_pacing import read_budgets
    from steward.activities.processes.runner_launch import rate_limits_dir

    names = {task.model.split("/")[-1] for task in tasks}
    return [b for b in read_budgets(rate_limits_dir()) if b.endpoint.rsplit("/", 1)[-1] in names]


def progress_from_log(path: str, total: int) -> Progress:
    from inspect_ai.log import read_eval_log_sample_summaries

    try:
        summaries = read_eval_log_sample_summaries(path)
    except Exception:
        return Progress(total=total)
    errored = sum(1 for s in summaries if s.error)
    return Progress(total=total, completed=len(summaries) - errored, errored=errored)


def progress_from_row(row: dict, total: int) -> Progress:
    samples = row.get("samples") or {}
    return Progress(
        total=samples.get("total") or total,
        completed=samples.get("completed", 0),
        errored=samples.get("errored", 0),
        in_flight=samples.get("in_flight", 0),
        cancelled=samples.get("cancelled", 0),
    )


def observe_run_sync(request: ObserveRequest) -> Observation:
    observation = Observation(rate_limits=rate_limits_of(request.tasks))
    live: list[WorkerProcess] = []
    for worker in request.workers:
        alive = is_alive(worker.pid, worker.create_time)
        observation.alive[worker.worker_id] = alive
        if alive:
            live.append(worker)

    forget_gone_clients()
    socket_rows = [row for rows in ask_each(_socket_rows, live) for row in rows]

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
            seen.progress, seen.source = progress_from_row(row, spec.planned_samples), "socket"
            seen.ramp = ramp_reading(row)
        elif seen.log is not None:
            seen.progress, seen.source = progress_from_log(seen.log, spec.planned_samples), "log"
        if seen.log is not None:
            seen.usage = log_usage(seen.log)
        observation.tasks[spec.identifier] = seen
    if request.stuck_after is not None:  # another host's workers: their stuck samples
        specs = {spec.identifier: spec for spec in request.tasks}
        for stuck in ask_each(lambda w: stuck_samples(w, specs, request.stuck_after), live):
            observation.anomalies = (observation.anomalies or []) + stuck
    return observation


def orphaned(workspace: str, workflow_id: str) -> str | None:
    """Why the workspace is no longer the run's own, or None. Only what is certainly gone
    counts (the directory, or its id record), or an id record naming another run: a file that
    cannot be read now (a network mount's hiccup) is not a verdict."""
    if not Path(workspace).exists():
        return f"the workspace {workspace} no longer exists"
    record = Path(workspace_record_of(workspace))
    try:
        identity = json.loads(record.read_text())["id"]
    except FileNotFoundError:
        return f"{record} no longer exists (the workspace was replaced)"
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if not workflow_id.endswith(f"-{identity}"):
        return f"the workspace {workspace} now belongs to another run (id {identity})"
    return None


@activity.defn(name=Activity.OBSERVE_RUN)
def observe_run(request: ObserveRequest) -> Observation:
    if request.workspace is not None and request.workflow_id is not None:
        gone = orphaned(request.workspace, request.workflow_id)
        if gone is not None:
            return Observation(orphaned=gone)  # nothing else is worth reading
    observation = observe_run_sync(request)
    if request.anomalies is not None:
        try:
            looked = through_the_ledger(request.anomalies, find_anomalies(request.anomalies))
            observation.anomalies, observation.healed = looked.anomalies, looked.healed
            observation.more_anomalies = looked.more_anomalies
            observation.ledger_through = looked.ledger_through
            observation.healthy = healthy_suspects(request.anomalies)
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
            path = f"/tasks/{change.task_id}/config" if change.task_id else "/config"
            response = socket_client(change.socket).patch(
                path, params=params, timeout=SOCKET_TIMEOUT_S
            )
            response.raise_for_status()
        except httpx.HTTPError as err:
            problems.append(f"{change.task_id or change.socket}: {err}")
    return problems


@activity.defn(name=Activity.APPLY_SETPOINTS)
def apply_setpoints(request: SetpointRequest) -> list[str]:
    return apply_setpoints_sync(request)
