"""Find anomalies (errored samples, stuck samples, all-zero tasks, waiting approvals) and carry
out rulings (re-run, exclude, zero, cancel a tool call, answer an approval).

Every effect is idempotent: applying a ruling twice (an activity retried after the worker died)
leaves the log as applying it once.
"""

from __future__ import annotations

import json
import math
import os
import time
from pathlib import Path
from typing import Any

import httpx
from temporalio import activity

from workflows.contracts import AnomalyRequest, ApplyRequest, ApplyResult, TaskSpec, WorkerProcess
from workflows.decisions import Action, Anomaly, deepest_frame, error_type_of
from workflows.names import Activity

from .observe import _client, _local_path, _pool, control_get, logs_by_identifier
from .processes import is_alive

DETAIL_LIMIT = 500
STEWARD_SCORE = "steward"  # score name used when a sample has no score to edit (it errored)

# log path -> (mtime, size, anomalies): an unchanged log is not read again.
_errors_by_log: dict[str, tuple[float, int, list[Anomaly]]] = {}


def approvals_dir(workspace: str) -> Path:
    return Path(workspace) / ".steward" / "approvals"


# ---------------------------------------------------------------- observing
def sample_errors(log: str, spec: TaskSpec) -> list[Anomaly]:
    """The errored samples of a log, each with its exception type and deepest frame."""
    from inspect_ai.log import read_eval_log_sample, read_eval_log_sample_summaries

    path = _local_path(log)
    try:
        stat = Path(path).stat()
    except OSError:
        return []
    cached = _errors_by_log.get(path)
    if cached is not None and cached[:2] == (stat.st_mtime, stat.st_size):
        return cached[2]
    try:
        summaries = read_eval_log_sample_summaries(path)
    except Exception:  # being written or replaced: next tend
        return cached[2] if cached else []
    known = {a.uuid: a for a in (cached[2] if cached else [])}
    found = []
    for summary in summaries:
        if not summary.error:
            continue
        if summary.uuid in known:
            found.append(known[summary.uuid])
            continue
        traceback = ""
        try:
            sample = read_eval_log_sample(path, uuid=summary.uuid, exclude_fields={"events"})
            if sample.error is not None:
                traceback = sample.error.traceback or ""
        except Exception:
            pass
        found.append(
            Anomaly(
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
        )
    _errors_by_log[path] = (stat.st_mtime, stat.st_size, found)
    return found


def all_zero(log: str, spec: TaskSpec) -> Anomaly | None:
    """A complete task whose every scorer's headline metric is zero."""
    from inspect_ai.log import read_eval_log

    try:
        header = read_eval_log(_local_path(log), header_only=True)
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
        log=_local_path(log),
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
    from .observe import log_info

    location = row.get("log_location")
    info = log_info(location, fresh_status=False) if location else None
    return specs.get(info.identifier) if info else None


def pending_approvals(workspace: str, specs: dict[str, TaskSpec]) -> list[Anomaly]:
    """Approval requests the Steward approver wrote that have no answer yet."""
    directory = approvals_dir(workspace)
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


def observe_anomalies_sync(request: AnomalyRequest) -> list[Anomaly]:
    specs = {spec.identifier: spec for spec in request.tasks}
    found: list[Anomaly] = []
    for identifier, logs in logs_by_identifier(request.log_dir).items():
        spec = specs.get(identifier)
        if spec is None or not logs:
            continue
        newest = logs[-1]
        found.extend(sample_errors(newest.path, spec))
        zero = all_zero(newest.path, spec) if newest.status == "success" else None
        if zero is not None:
            found.append(zero)
    live = [w for w in request.workers if is_alive(w.pid, w.create_time)]
    for stuck in _pool.map(lambda w: stuck_samples(w, specs, request.stuck_after), live):
        found.extend(stuck)
    found.extend(pending_approvals(request.workspace, specs))
    return found


# ---------------------------------------------------------------- applying
def _provenance(action: Action) -> Any:
    from inspect_ai.log import ProvenanceData

    return ProvenanceData(
        author=action.by or "steward",
        reason=action.reason or f"steward ruling: {action.verdict}",
        metadata={"steward_class": action.class_id, "verdict": action.verdict},
    )


def _edit_log(path: str, actions: list[Action]) -> list[Action]:
    """Apply the log verdicts of one log in one read and one write. Returns the done ones."""
    from inspect_ai.log import edit_score, invalidate_samples, read_eval_log, write_eval_log
    from inspect_ai.scorer import ScoreEdit

    log = read_eval_log(path)
    samples = {(str(s.id), s.epoch): s for s in log.samples or []}
    done, invalidate = [], []
    for action in actions:
        anomaly = action.anomaly
        if action.verdict == "rerun" and anomaly.kind == "all_zero":
            invalidate.extend(s.uuid for s in log.samples or [] if s.uuid)
            done.append(action)
            continue
        sample = samples.get((anomaly.sample_id, anomaly.epoch))
        if sample is None:
            done.append(action)  # gone from the final log: nothing left to apply to
            continue
        if action.verdict == "rerun":
            if sample.invalidation is None and sample.uuid:
                invalidate.append(sample.uuid)
            done.append(action)
            continue
        value = float("nan") if action.verdict == "exclude" else 0
        names = list(sample.scores or {}) or [_score_name(log)]
        for name in names:
            current = (sample.scores or {}).get(name)
            if current is not None and _same(current.value, value) and current.history:
                continue  # already applied (a retried activity)
            edit_score(
                log,
                sample.id,
                name,
                ScoreEdit(
                    value=value,
                    reason="excluded" if action.verdict == "exclude" else "zeroed",
                    explanation=action.reason or None,
                    provenance=_provenance(action),
                ),
                epoch=sample.epoch,
            )
        done.append(action)
    if invalidate:
        rerun = next(a for a in actions if a.verdict == "rerun")
        log = invalidate_samples(log, invalidate, _provenance(rerun))
    write_eval_log(log, path)
    return done


def _score_name(log: Any) -> str:
    if log.results is not None and log.results.scores:
        return log.results.scores[0].name
    return STEWARD_SCORE


def _same(current: Any, value: float) -> bool:
    if isinstance(current, float) and math.isnan(current):
        return math.isnan(value)
    return current == value


def _answer_approval(workspace: str, action: Action) -> None:
    answer = approvals_dir(workspace) / f"{action.anomaly.uuid}.answer.json"
    if answer.exists():
        return
    tmp = answer.with_suffix(".tmp")
    tmp.write_text(
        json.dumps({"decision": action.verdict, "explanation": action.reason, "by": action.by})
    )
    os.replace(tmp, answer)


def _act_on_sample(workers: list[WorkerProcess], action: Action) -> str | None:
    """In the sample's live worker: cancel a stuck tool call (`cancel_tool`), cancel the
    sample (`cancel`), or cancel it and queue it to run again (`retry`)."""
    anomaly = action.anomaly
    eval_id = anomaly.log  # a stuck sample's anomaly carries its eval id here
    worker = next((w for w in workers if anomaly.task in w.tasks), None)
    if worker is None or not Path(worker.socket).exists():
        return None  # the worker is gone, and the sample with it
    client = _client(worker.socket)
    params: dict[str, Any] = {"sample_id": anomaly.sample_id, "epoch": anomaly.epoch}
    try:
        if action.verdict == "cancel_tool":
            response = client.post(
                f"/evals/{eval_id}/sample/cancel-tool-call", params=params, timeout=5.0
            )
        else:
            response = client.post(
                f"/evals/{eval_id}/sample/cancel",
                params={**params, "action": "cancel"},
                timeout=5.0,
            )
            if action.verdict == "retry" and response.status_code < 400:
                response = _requeue(client, eval_id, params)
    except httpx.HTTPError as err:
        return f"{action.verdict} {anomaly.sample_ref}: {err}"
    if response.status_code >= 400 and response.status_code != 404:
        return f"{action.verdict} {anomaly.sample_ref}: HTTP {response.status_code}"
    return None


def _requeue(client: httpx.Client, eval_id: str | None, params: dict) -> httpx.Response:
    """Queue a just-cancelled sample again; the cancel lands asynchronously, so a 409 (still
    running) is asked again for a few seconds."""
    response = client.post(f"/evals/{eval_id}/sample/requeue", params=params, timeout=5.0)
    for _ in range(20):
        if response.status_code != 409:
            break
        time.sleep(0.5)
        response = client.post(f"/evals/{eval_id}/sample/requeue", params=params, timeout=5.0)
    return response


def apply_actions_sync(request: ApplyRequest, workers: list[WorkerProcess]) -> ApplyResult:
    result = ApplyResult()
    by_log: dict[str, list[Action]] = {}
    for action in request.actions:
        if action.verdict in ("rerun", "exclude", "zero"):
            by_log.setdefault(action.anomaly.log or "", []).append(action)
        elif action.verdict in ("approve", "reject", "terminate"):
            _answer_approval(request.workspace, action)
            result.done.append(action)
        else:
            problem = _act_on_sample(workers, action)
            if problem:
                result.problems.append(problem)
            else:
                result.done.append(action)
    for log, actions in by_log.items():
        try:
            done = _edit_log(log, actions)
        except Exception as err:  # an unreadable log is reported, the rest still applies
            result.problems.append(f"{Path(log).name}: {err}")
            continue
        _errors_by_log.pop(log, None)
        result.done.extend(done)
        if any(a.verdict == "rerun" for a in done):
            result.rerun_tasks.extend({a.anomaly.task for a in done if a.verdict == "rerun"})
    return result


@activity.defn(name=Activity.APPLY_ACTIONS)
def apply_actions(request: ApplyRequest) -> ApplyResult:
    return apply_actions_sync(request, request.workers)
