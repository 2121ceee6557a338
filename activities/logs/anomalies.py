"""Find what a run's triage must rule on: errored samples, stuck samples, tasks whose every
metric is zero, and tool calls waiting for a human's approval.

Looked for at each tend (activities/processes/observe.py asks). The logs say which samples errored and
which tasks scored zero; a live worker's control socket says which samples are stuck; the
approver's request files say which approvals wait. The rulings on them are carried out by
activities/logs/rulings.py.
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from steward.activities.logs.log_listing import log_info, logs_by_identifier
from steward.activities.logs.paths import local_path
from steward.activities.logs.triage_ledger import Ledger, open_ledger
from steward.activities.processes.control_socket import ask_each, control_get
from steward.activities.processes.processes import is_alive
from steward.workflows.activity_io import AnomalyRequest
from steward.workflows.contracts import Observation, TaskSpec, WorkerProcess
from steward.workflows.policy.decisions import (
    LEDGER_KINDS,
    Anomaly,
    deepest_frame,
    error_type_of,
    is_interruption,
)
from steward.workflows.policy.layout import approvals_dir_of
from steward.workflows.policy.triage_ledger import MAX_HEALED, MAX_NEW

DETAIL_LIMIT = 500


@dataclass
class _LogSamples:
    """What one read of a log's samples says: its errored samples (those errored by their
    worker's own end apart) and the (id, epoch) of the samples it holds without error."""

    mtime: float
    size: int
    errors: list[Anomaly] = field(default_factory=list)
    interrupted: list[Anomaly] = field(default_factory=list)
    healthy: set[str] = field(default_factory=set)  # "id@epoch"


# log path -> what it said: an unchanged log is not read again.
_samples_by_log: dict[str, _LogSamples] = {}


def forget_errors(log: str) -> None:
    """Read the log's errored samples afresh next time (a ruling has just rewritten it)."""
    _samples_by_log.pop(log, None)


def _read_samples(log: str, spec: TaskSpec) -> _LogSamples | None:
    from inspect_ai.log import read_eval_log_sample, read_eval_log_sample_summaries

    path = local_path(log)
    try:
        stat = Path(path).stat()
    except OSError:
        return None
    cached = _samples_by_log.get(path)
    if cached is not None and (cached.mtime, cached.size) == (stat.st_mtime, stat.st_size):
        return cached
    try:
        summaries = read_eval_log_sample_summaries(path)
    except Exception:  # being written or replaced: next tend
        return cached
    known = {a.uuid: a for a in (cached.errors + cached.interrupted if cached else [])}
    read = _LogSamples(mtime=stat.st_mtime, size=stat.st_size)
    for summary in summaries:
        if not summary.error:
            read.healthy.add(f"{summary.id}@{summary.epoch}")
            continue
        anomaly = known.get(summary.uuid) or _error_of(path, spec, summary, read_eval_log_sample)
        interrupted = is_interruption(anomaly.error_type or "", summary.error, anomaly.detail)
        (read.interrupted if interrupted else read.errors).append(anomaly)
    _samples_by_log[path] = read
    return read


def _error_of(path: str, spec: TaskSpec, summary: Any, read_sample: Any) -> Anomaly:
    traceback = ""
    try:
        sample = read_sample(path, uuid=summary.uuid, exclude_fields={"events"})
        if sample.error is not None:
            traceback = sample.error.traceback or ""
    except Exception:
        pass
    return Anomaly(
        kind="sample_error",
        task=spec.identifier,
        task_name=spec.name,
        sample_id=str(summary.id),
        epoch=summary.epoch,
        uuid=summary.uuid,
        log=path,
        error_type=error_type_of(traceback, summary.error),
        frame=deepest_frame(traceback),
        detail=summary.error[:DETAIL_LIMIT],
    )


def sample_errors(log: str, spec: TaskSpec, *, final: bool = True) -> list[Anomaly]:
    """The errored samples of a log, each with its exception type and deepest frame. A sample
    errored by its worker's end (killed, interrupted, recovered as cancelled) is not a sample
    error unless the log is final (`success`): its task resumes and runs it again."""
    read = _read_samples(log, spec)
    if read is None:
        return []
    return read.errors + (read.interrupted if final else [])


def healthy_samples(log: str, spec: TaskSpec) -> set[str]:
    """The samples the log holds without an error, each as "id@epoch"."""
    read = _read_samples(log, spec)
    return read.healthy if read is not None else set()


def all_zero(log: str, spec: TaskSpec) -> Anomaly | None:
    """A complete task whose every scorer's headline metric is zero."""
    from inspect_ai.log import read_eval_log

    try:
        header = read_eval_log(local_path(log), header_only=True)
    except Exception:
        return None
    if header.status != "success" or header.results is None or not header.results.scores:
        return None
    values = [
        metric.value
        for score in header.results.scores
        for metric in score.metrics.values()
        if isinstance(metric.value, int | float) and not math.isnan(metric.value)
    ]
    if not values or any(v != 0 for v in values) or header.results.completed_samples == 0:
        return None
    return Anomaly(
        kind="all_zero",
        task=spec.identifier,
        task_name=spec.name,
        uuid=header.eval.eval_id,
        log=local_path(log),
        detail=f"{header.results.completed_samples} samples, every metric 0",
    )


def stuck_samples(worker: WorkerProcess, specs: dict[str, TaskSpec], stuck_after: float) -> list:
    """Running samples with no activity for `stuck_after`, except those waiting on a human."""
    if not Path(worker.socket).exists():
        return []
    found = []
    now = time.time()
    try:
        rows = control_get(worker.socket, "/tasks")
    except (httpx.HTTPError, ValueError):
        return []
    for row in rows if isinstance(rows, list) else []:
        eval_id = row.get("eval_id")
        spec = _spec_for_row(row, specs)
        if not eval_id or spec is None:
            continue
        try:
            listing = control_get(worker.socket, f"/evals/{eval_id}/samples?status=running")
        except (httpx.HTTPError, ValueError):
            continue
        for sample in listing.get("samples", []):
            activity_ = sample.get("activity") or {}
            if activity_.get("type") in ("approval", "question"):
                continue
            last = sample.get("last_activity_at") or sample.get("started_at")
            if sample.get("status") != "running" or last is None or now - last < stuck_after:
                continue
            tool = activity_.get("detail") if activity_.get("type") == "tool" else None
            calls = activity_.get("calls") or []
            found.append(
                Anomaly(
                    kind="stuck_sample",
                    task=spec.identifier,
                    task_name=spec.name,
                    sample_id=str(sample.get("sample_id")),
                    epoch=sample.get("epoch"),
                    uuid=f"{eval_id}:{int(last)}",
                    log=eval_id,
                    tool=tool,
                    worker=worker.worker_id,  # gone, its decision lapses (policy/lapsed.py)
                    detail=json.dumps(
                        {
                            "idle_s": round(now - last),
                            "activity": activity_.get("type"),
                            "tool_call": calls[0].get("id") if calls else None,
                        }
                    ),
                )
            )
    return found


def _spec_for_row(row: dict, specs: dict[str, TaskSpec]) -> TaskSpec | None:
    location = row.get("log_location")
    info = log_info(location, fresh_status=False) if location else None
    return specs.get(info.identifier) if info else None


def pending_approvals(workspace: str, specs: dict[str, TaskSpec]) -> list[Anomaly]:
    """Approval requests the Steward approver wrote that have no answer yet."""
    directory = Path(approvals_dir_of(workspace))
    if not directory.is_dir():
        return []
    by_name = {spec.name: spec for spec in specs.values()}
    found = []
    for path in sorted(directory.glob("*.json")):
        if path.name.endswith(".answer.json") or path.with_suffix(".answer.json").exists():
            continue
        try:
            request = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        task = request.get("task") or "?"
        spec = by_name.get(task) or next(
            (s for s in specs.values() if s.name.split("/")[-1] == task), None
        )
        found.append(
            Anomaly(
                kind="approval",
                task=spec.identifier if spec else task,
                task_name=spec.name if spec else task,
                sample_id=str(request.get("sample_id")),
                epoch=request.get("epoch"),
                uuid=request["id"],
                tool=request.get("tool"),
                detail=json.dumps(request.get("arguments"))[:DETAIL_LIMIT],
            )
        )
    return found


def find_anomalies(request: AnomalyRequest) -> list[Anomaly]:
    specs = {spec.identifier: spec for spec in request.tasks}
    found: list[Anomaly] = []
    for identifier, logs in logs_by_identifier(request.log_dir).items():
        spec = specs.get(identifier)
        if spec is None or not logs:
            continue
        newest = logs[-1]
        found.extend(sample_errors(newest.path, spec, final=newest.status == "success"))
        zero = all_zero(newest.path, spec) if newest.status == "success" else None
        if zero is not None:
            found.append(zero)
    live = [w for w in request.workers if is_alive(w.pid, w.create_time)]
    for stuck in ask_each(lambda w: stuck_samples(w, specs, request.stuck_after), live):
        found.extend(stuck)
    found.extend(pending_approvals(request.workspace, specs))
    return found


def healthy_suspects(request: AnomalyRequest) -> list[str]:
    """The suspects (task#id@epoch) that their task's newest log holds without an error."""
    if not request.suspects:
        return []
    specs = {spec.identifier: spec for spec in request.tasks}
    newest = {i: logs[-1] for i, logs in logs_by_identifier(request.log_dir).items() if logs}
    healthy = []
    for ref in request.suspects:
        identifier, _, sample = ref.rpartition("#")
        log, spec = newest.get(identifier), specs.get(identifier)
        if log is not None and spec is not None and sample in healthy_samples(log.path, spec):
            healthy.append(ref)
    return healthy


def through_the_ledger(request: AnomalyRequest, found: list[Anomaly]) -> Observation:
    """What the triage ledger makes of this look (workflows/policy/triage_ledger.py): the run's
    pending changes written first; of the ledger kinds, only anomalies the ledger does not hold
    (at most MAX_NEW; a re-run sample's new error as `rerun_failed`, its replaced run left out),
    the others whole; and the instances of the suspect classes now healthy in their newest log."""
    observation = Observation()
    if request.ledger is None:
        observation.anomalies = found
        return observation
    ledger = open_ledger(request.ledger, request.ledger_ops)
    observation.ledger_through = max([ledger.seq, *(op.seq for op in request.ledger_ops)])
    runs, new, fresh = ledger.runs(), [], 0
    for anomaly in found:
        if anomaly.kind == "sample_error" and anomaly.sample_ref in ledger.reruns:
            if (anomaly.sample_ref, anomaly.uuid) in runs:
                continue  # the errored run a re-run replaces, still in the log
            anomaly = anomaly.model_copy(update={"kind": "rerun_failed"})
        if anomaly.kind in LEDGER_KINDS:
            if anomaly.sample_key in ledger.held:
                continue
            fresh += 1
            if fresh > MAX_NEW:
                observation.more_anomalies = True
                continue
        new.append(anomaly)
    observation.anomalies = new
    observation.healed = _healed(request, ledger)
    return observation


def _healed(request: AnomalyRequest, ledger: Ledger) -> dict[str, dict[str, str]]:
    """Instances of the suspect classes whose ruling was not carried out on them and that
    their task's newest log holds without an error: class id -> {key: task}."""
    if not request.suspect_classes:
        return {}
    specs = {spec.identifier: spec for spec in request.tasks}
    newest = {i: logs[-1] for i, logs in logs_by_identifier(request.log_dir).items() if logs}
    healed: dict[str, dict[str, str]] = {}
    count = 0
    for class_id in request.suspect_classes:
        for key, held in ledger.of_class(class_id).items():
            anomaly = held.anomaly
            log, spec = newest.get(anomaly.task), specs.get(anomaly.task)
            if held.applied is not None or log is None or spec is None:
                continue
            if f"{anomaly.sample_id}@{anomaly.epoch}" in healthy_samples(log.path, spec):
                healed.setdefault(class_id, {})[key] = anomaly.task
                count += 1
                if count >= MAX_HEALED:
                    return healed
    return healed
