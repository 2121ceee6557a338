"""What a watched worker's pulse means, as pure functions (the watch activity and the status
renderers call them; the tests check them without Temporal or processes).

A watch (activities/processes/watch.py) heartbeats a `WorkerPulse` every few seconds and completes with a
`WorkerEnd` when the worker exits or needs the run's attention:

* **hung** — no log and no control socket `start_timeout` after spawn (stuck before
  `eval_set()` ran), or no sign of life (socket answer, log write) for `unresponsive_after`
  while the process lives (its event loop blocked, or it hangs after `eval_set()` returned).
  Samples waiting on an approval are not hung: the socket still answers for them.
* **complete** — every task's newest log is `success` and the process has not exited
  `COMPLETE_GRACE_S` later (a worker normally exits within a second of it): the run marks the
  tasks complete now rather than when the process goes.
* **lingering** — every task's newest log is `success` and the process is still alive
  `linger_after` later.
* **recovered** — a worker reported hung showed life again (a socket answer or a log write
  after the hang): its `hung_worker` decision no longer holds (workflows/policy/lapsed.py).

Progress shown by `steward status` is the newest of the run's own (as of its last tend) and the
watches' pulses (as of their last heartbeat), each with its age.
"""

from __future__ import annotations

from datetime import datetime

from steward.workflows.activity_io import WatchEnd, WatchRequest, WorkerEnd
from steward.workflows.contracts import RunState, RunStatus, WatchLimits, WorkerProcess, WorkerPulse
from steward.workflows.options import format_duration
from steward.workflows.policy import triage_ledger
from steward.workflows.policy.decisions import LOG_VERDICTS
from steward.workflows.policy.provider_budget import AT_CEILING


def last_sign_of_life(pulse: WorkerPulse, worker: WorkerProcess) -> datetime:
    """The spawn, the socket's last answer or the newest log write, whichever is latest."""
    signs = [worker.started_at, pulse.answered_at, pulse.logged_at]
    return max(s for s in signs if s is not None)


COMPLETE_GRACE_S = 3.0
# Each connection report is a tend: a watch reports pushback no sooner than this after it
# started (the run's retune takes a moment to show), and saturation held this long.
PUSHBACK_REPORT_AFTER_S = 5.0
SATURATED_REPORT_AFTER_S = 10.0


def saturated(pulse: WorkerPulse, in_flight: int, new_retries: bool) -> bool:
    """Its controller stands at its ceiling, clean, with more samples in flight than
    connections (they wait for one): the budget may be too small."""
    limit, ceiling = pulse.connection_limit, pulse.connection_ceiling
    return (
        limit is not None
        and ceiling is not None
        and not new_retries
        and limit >= AT_CEILING * ceiling
        and in_flight > limit
    )


def judge_connections(
    pulse: WorkerPulse,
    request: WatchRequest,
    reported: int | None,
    started: datetime,
    now: datetime,
) -> WorkerEnd | None:
    """Whether the run should retune the shared budget now: new rate-limit pushback since the
    last report (`reported`), or a controller held saturated at its ceiling."""
    retries, worker = pulse.rate_limit_retries, request.worker
    watched = (now - started).total_seconds()
    if retries is None or reported is None:
        return None
    if request.report_pushback and retries > reported and watched >= PUSHBACK_REPORT_AFTER_S:
        end = _end(worker, "pushback", now, now, f"{retries - reported} rate-limit retries")
        return end.model_copy(update={"rate_limit_retries": retries})
    held = pulse.saturated_since
    if (
        request.report_saturated
        and held is not None
        and min(watched, (now - held).total_seconds()) >= SATURATED_REPORT_AFTER_S
    ):
        end = _end(worker, "saturated", now, held, "its connections are all in use, clean")
        return end.model_copy(update={"rate_limit_retries": retries})
    return None


def judge(
    pulse: WorkerPulse,
    worker: WorkerProcess,
    limits: WatchLimits,
    now: datetime,
    hang_reported: datetime | None = None,
    complete_reported: bool = False,
) -> WorkerEnd | None:
    """Whether a live worker needs the run's attention now (None: it is fine)."""
    if pulse.success_at is not None:
        done_for = (now - pulse.success_at).total_seconds()
        if not complete_reported and COMPLETE_GRACE_S <= done_for < limits.linger_after:
            return _end(
                worker, "complete", now, pulse.success_at, "its tasks' logs are success; it "
                "has not exited yet",
            )  # fmt: skip
        if done_for >= limits.linger_after:
            return _end(
                worker, "lingering", now, pulse.success_at, f"still alive "
                f"{format_duration(limits.linger_after)} after its tasks' logs were success",
            )  # fmt: skip
        return None  # done and winding down: not a hang
    life = last_sign_of_life(pulse, worker)
    if hang_reported is not None and life <= hang_reported:
        return None  # this hang was reported; a new one needs a sign of life first
    if hang_reported is not None:
        # The run asked about this hang: tell it the cause went away (lapsed.py closes it).
        answered = pulse.answered_at is not None and pulse.answered_at > hang_reported
        what = "its control socket answers again" if answered else "its log is written again"
        return _end(worker, "recovered", now, life, what)
    silent = (now - life).total_seconds()
    never = pulse.answered_at is None and (
        pulse.logged_at is None or pulse.logged_at <= worker.started_at
    )
    if never and silent >= limits.start_timeout:
        detail = (
            f"no log and no control socket {format_duration(limits.start_timeout)} after "
            "spawn (stuck before eval_set() ran?)"
        )
    elif not never and silent >= limits.unresponsive_after:
        detail = (
            f"no control-socket answer and no log write for {format_duration(round(silent))} "
            "while the process lives (event loop blocked, or stuck after eval_set() returned?)"
        )
    else:
        return None
    return _end(worker, "hung", now, life, detail)


def _end(
    worker: WorkerProcess, kind: WatchEnd, now: datetime, since: datetime, what: str
) -> WorkerEnd:
    return WorkerEnd(
        worker_id=worker.worker_id,
        kind=kind,
        at=now,
        since=since,
        detail=f"worker {worker.worker_id} (pid {worker.pid}): {what}",
    )


def with_live_progress(status: RunStatus, pulses: list[WorkerPulse], now: datetime) -> RunStatus:
    """The status with each running task's progress as of its watch's last heartbeat, when
    that is newer than the run's last tend; `progress_at` says as of when, per task."""
    state = status.state.model_copy(deep=True)
    progress_at: dict[str, datetime] = {}
    by_task = {
        identifier: (pulse, progress)
        for pulse in pulses
        if pulse.worker_id in state.workers
        for identifier, progress in pulse.progress.items()
    }
    for task in state.tasks:
        identifier = task.spec.identifier
        seen = by_task.get(identifier)
        if (
            seen is not None
            and task.worker_id == seen[0].worker_id
            and task.phase == "running"
            and (state.last_tend_at is None or seen[0].at > state.last_tend_at)
        ):
            progress = seen[1]
            task.progress = progress.model_copy(
                update={"total": progress.total or task.spec.planned_samples}
            )
            progress_at[identifier] = seen[0].at
        elif state.last_tend_at is not None:
            progress_at[identifier] = state.last_tend_at
    return status.model_copy(
        update={"state": state, "progress_at": progress_at, "live": pulses, "read_at": now}
    )


def rulings_waiting(state: RunState) -> list[str]:
    """The live workers that ruled log edits wait for (a log is edited once no process writes
    it), each named for a person."""
    waiting: set[str] = set()
    for cls in state.triage.classes:
        ruling = cls.ruling
        if cls.state != "ruled" or ruling is None or ruling.verdict not in LOG_VERDICTS:
            continue
        if not cls.in_ledger:
            waiting |= {i.anomaly.task for i in cls.instances if i.applied != ruling.verdict}
    waiting |= triage_ledger.waiting_tasks(state.triage)
    return waiting_workers(state, waiting)


def waiting_workers(state: RunState, identifiers: set[str]) -> list[str]:
    """The live workers that `identifiers`' rulings wait for, each named for a person:
    task, pid and since when."""
    lines = []
    for task in state.tasks:
        worker = state.workers.get(task.worker_id or "")
        if task.spec.identifier not in identifiers or worker is None:
            continue
        lines.append(
            f"worker {worker.worker_id} of {task.spec.name} (pid {worker.pid}, alive since "
            f"{worker.started_at:%Y-%m-%d %H:%M:%S} UTC)"
        )
    return lines
