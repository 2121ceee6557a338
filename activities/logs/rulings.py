"""Carry out the triage's rulings: re-run, exclude or zero a sample (or a whole zero-scoring
task) in its log, cancel a stuck tool call or sample (or retry it) in its live worker, and
answer a tool call waiting for approval.

Every effect is idempotent: applying a ruling twice (an activity retried after the worker died)
leaves the log as applying it once. The anomalies ruled on are found by activities/logs/anomalies.py.
"""

from __future__ import annotations

import json
import math
import time
from pathlib import Path
from typing import Any

import httpx
from temporalio import activity

from steward.activities.logs.anomalies import forget_errors
from steward.activities.logs.paths import write_atomic
from steward.activities.logs.triage_ledger import open_ledger
from steward.activities.processes.control_socket import socket_client
from steward.workflows.activity_io import ApplyRequest, ApplyResult
from steward.workflows.contracts import WorkerProcess
from steward.workflows.names import Activity
from steward.workflows.policy.layout import approvals_dir_of
from steward.workflows.policy.rulings import Action
from steward.workflows.policy.triage_ledger import OrderOutcome

MAX_LOGS = 20  # logs one apply call edits (each is read and written whole); the rest: next tend

STEWARD_SCORE = "steward"  # score name used when a sample has no score to edit (it errored)
ERROR_KINDS = ("sample_error", "rerun_failed")  # ruled for an error the sample must still have


def _provenance(action: Action) -> Any:
    from inspect_ai.log import ProvenanceData

    return ProvenanceData(
        author=action.by or "steward",
        reason=action.reason or f"steward ruling: {action.verdict}",
        metadata={"steward_class": action.class_id, "verdict": action.verdict},
    )


def _edit_log(path: str, actions: list[Action]) -> tuple[list[Action], list[Action]]:
    """Apply the log verdicts of one log in one read and one write. Returns the done ones and
    the skipped ones: a sample ruled for its error that holds no error in this log (its task
    resumed and completed it) is left as it is, never invalidated, re-run or re-scored."""
    from inspect_ai.log import edit_score, invalidate_samples, read_eval_log, write_eval_log
    from inspect_ai.scorer import ScoreEdit

    log = read_eval_log(path)
    samples = {(str(s.id), s.epoch): s for s in log.samples or []}
    done, skipped, invalidate = [], [], []
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
        if anomaly.kind in ERROR_KINDS and sample.error is None:
            skipped.append(action)
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
    if len(skipped) < len(actions):
        write_eval_log(log, path)
    return done, skipped


def _score_name(log: Any) -> str:
    if log.results is not None and log.results.scores:
        return log.results.scores[0].name
    return STEWARD_SCORE


def _same(current: Any, value: float) -> bool:
    if isinstance(current, float) and math.isnan(current):
        return math.isnan(value)
    return current == value


def _answer_approval(workspace: str, action: Action) -> None:
    answer = Path(approvals_dir_of(workspace)) / f"{action.anomaly.uuid}.answer.json"
    if answer.exists():
        return
    write_atomic(
        answer,
        json.dumps({"decision": action.verdict, "explanation": action.reason, "by": action.by}),
    )


def _act_on_sample(workers: list[WorkerProcess], action: Action) -> str | None:
    """In the sample's live worker: cancel a stuck tool call (`cancel_tool`), cancel the
    sample (`cancel`), or cancel it and queue it to run again (`retry`)."""
    anomaly = action.anomaly
    eval_id = anomaly.log  # a stuck sample's anomaly carries its eval id here
    worker = next((w for w in workers if anomaly.task in w.tasks), None)
    if worker is None or not Path(worker.socket).exists():
        return None  # the worker is gone, and the sample with it
    client = socket_client(worker.socket)
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
            done, skipped = _edit_log(log, actions)
        except Exception as err:  # an unreadable log is reported, the rest still applies
            result.problems.append(f"{Path(log).name}: {err}")
            continue
        forget_errors(log)
        result.done.extend(done)
        result.skipped.extend(skipped)
        if any(a.verdict == "rerun" for a in done):
            result.rerun_tasks.extend({a.anomaly.task for a in done if a.verdict == "rerun"})
    return result


def carry_out_orders(request: ApplyRequest, result: ApplyResult) -> None:
    """Carry out the rulings on ledger classes on every instance the ledger holds (at most
    MAX_LOGS logs a call; the rest are left as remaining), and write down what was done."""
    if request.ledger is None:
        return
    ledger = open_ledger(request.ledger, request.ledger_ops)
    result.ledger_through = max([ledger.seq, *(op.seq for op in request.ledger_ops)])
    edited = 0
    for order in request.orders:
        outcome = OrderOutcome(class_id=order.class_id, verdict=order.verdict)
        by_log: dict[str, list[Action]] = {}
        waiting: set[str] = set()
        for key, held in sorted(ledger.of_class(order.class_id).items()):
            anomaly, log = held.anomaly, request.settled_logs.get(held.anomaly.task)
            if log is None:
                waiting.add(anomaly.task)
                outcome.remaining += 1
            elif held.applied != order.verdict or (
                order.verdict != "rerun" and held.applied_log != log
            ):
                by_log.setdefault(log, []).append(
                    Action(
                        class_id=order.class_id,
                        instance=key,
                        verdict=order.verdict,
                        anomaly=anomaly.model_copy(update={"log": log}),
                        by=order.by,
                        reason=order.reason,
                    )
                )
        for log, actions in by_log.items():
            task = actions[0].anomaly.task
            try:
                if edited >= MAX_LOGS:
                    raise _Later()
                done, skipped = _edit_log(log, actions)
            except _Later:
                waiting.add(task)
                outcome.remaining += len(actions)
                continue
            except Exception as err:  # an unreadable log is reported, the rest still applies
                result.problems.append(f"{Path(log).name}: {err}")
                waiting.add(task)
                outcome.remaining += len(actions)
                continue
            edited += 1
            forget_errors(log)
            ledger.append(
                [{"op": "applied", "key": a.instance, "verdict": a.verdict, "log": log}
                 for a in [*done, *skipped]]
                + [{"op": "rerun", "class": order.class_id, "key": a.anomaly.sample_ref,
                    "uuid": a.anomaly.uuid} for a in done if a.verdict == "rerun"]
            )  # fmt: skip
            outcome.done, outcome.skipped = outcome.done + len(done), outcome.skipped + len(skipped)
            if any(a.verdict == "rerun" for a in done):
                outcome.rerun_tasks.append(task)
        outcome.waiting_tasks = sorted(waiting)
        held_tasks = {h.anomaly.task for h in ledger.of_class(order.class_id).values()}
        outcome.edited_logs = {
            task: log
            for task, log in request.settled_logs.items()
            if task in held_tasks and task not in waiting
        }
        result.outcomes.append(outcome)


class _Later(Exception):
    """This call has edited as many logs as it may: the next tend goes on."""


@activity.defn(name=Activity.APPLY_ACTIONS)
def apply_actions(request: ApplyRequest) -> ApplyResult:
    result = apply_actions_sync(request, request.workers)
    carry_out_orders(request, result)
    return result
