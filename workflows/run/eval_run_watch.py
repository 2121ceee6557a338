"""Watching the task workers: one long-running, heartbeating activity per live worker
(activities/processes/watch.py), started right after its spawn and again for every worker a continued
run carries over (re-adoption: the same pid, never a second spawn).

A watch that completes wakes the run, which tends at once: an exit is seen within seconds, not
at the next timer. What the watches reported is handled by the tend (`handle_worker_ends`): a
lingering worker is stopped, a hung one raises a `hung_worker` decision, and a hung worker ruled
`restart` is stopped and its tasks respawn from their logs (eval_run_workers.py stops them). A
hung worker that answers again is reported `recovered`: with what the tend itself saw, that
closes hang and stuck decisions whose cause went away (`close_lapsed`, policy/lapsed.py).
The heartbeats carry progress for
`steward status` and never enter the history.
"""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta

from temporalio import workflow
from temporalio.exceptions import ActivityError

with workflow.unsafe.imports_passed_through():
    from steward.workflows.activity_io import CONNECTION_ENDS, WatchRequest, WorkerEnd
    from steward.workflows.contracts import TERMINAL_PHASES, Observation, WorkerProcess
    from steward.workflows.names import Activity
    from steward.workflows.policy import connection_plan, lapsed, provider_stuck
    from steward.workflows.policy.decisions import Anomaly
    from steward.workflows.policy.hosts import HostLost
    from steward.workflows.run import eval_run_hosts
    from steward.workflows.run.eval_run_context import RunContext

# A watch heartbeats every few seconds; one silent this long is restarted by Temporal (on a
# restarted Steward worker, it re-adopts the pid).
WATCH_HEARTBEAT_TIMEOUT = timedelta(seconds=30)
# A worker may live for days; liveness is the heartbeat's job, not this.
WATCH_LIFETIME = timedelta(days=365)


def watch(ctx: RunContext, worker_id: str) -> None:
    """Start watching a live worker (replacing a watch it already has)."""
    running = ctx.watches.pop(worker_id, None)
    if running is not None and not running.done():
        running.cancel()
    ctx.watches[worker_id] = asyncio.create_task(_watch_loop(ctx, worker_id))


def watch_all(ctx: RunContext) -> None:
    """Watch every worker the state holds (a continued run re-adopts them; changed limits)."""
    for worker_id in list(ctx.state.workers):
        watch(ctx, worker_id)


async def _watch_loop(ctx: RunContext, worker_id: str) -> None:
    # A hang the run still asks about (a continued run's watch starts again): report recovery.
    hang_reported = lapsed.hang_reported_since(ctx.state.triage, worker_id)
    complete_reported = False
    rate_limit_reported: int | None = None
    # A stuck provider reported (failing since then): held by the run, so a watch started again
    # waits for an answer before it reports it again.
    provider_reported = provider_stuck.reported_since(ctx.state.triage, worker_id)
    while ctx.state.phase not in TERMINAL_PHASES:
        worker = ctx.state.workers.get(worker_id)
        if worker is None:
            return
        try:
            end: WorkerEnd = await _watch_once(
                ctx,
                worker,
                hang_reported,
                complete_reported,
                rate_limit_reported,
                provider_reported,
            )
        except ActivityError:
            if not worker.queue:
                raise
            # Its host did not take the watch up within host_timeout: the host is gone.
            eval_run_hosts.lost(
                ctx, HostLost(host_id=worker.host, queue=worker.queue, last_seen=workflow.now())
            )
            return
        ctx.worker_ends.append(end)
        ctx.wake = True
        if end.kind == "exited":
            return
        if end.kind == "lingering":
            # The tend stops it; the watch's work is done once the run forgets it.
            await workflow.wait_condition(lambda: worker_id not in ctx.state.workers)
            return
        if end.kind == "complete":
            complete_reported = True  # the tend marks its tasks complete; watch on for the exit
        elif end.kind in CONNECTION_ENDS:
            rate_limit_reported = end.rate_limit_retries  # the tend retunes the budget
        elif end.kind == "recovered":
            hang_reported = None  # the tend closes its decision; a new hang is a new question
        elif end.kind == "provider_stuck":
            provider_reported = end.since  # reported; again only after an answer
        elif end.kind == "provider_answered":
            provider_reported = None  # the tend closes its decision
        else:
            hang_reported = end.since  # reported; another hang needs a sign of life first


async def _watch_once(
    ctx: RunContext,
    worker: WorkerProcess,
    hang_reported: datetime | None,
    complete_reported: bool,
    rate_limit_reported: int | None,
    provider_reported: datetime | None = None,
) -> WorkerEnd:
    """One watch activity on the worker's host, until it has something to report."""
    pushback, saturation = connection_plan.watch_reports(ctx.state, worker.worker_id)
    return await ctx.activity(
        Activity.WATCH_WORKER,
        WatchRequest(
            worker=worker,
            log_dir=ctx.state.log_dir,
            limits=ctx.settings.watch,
            hang_reported=hang_reported,
            complete_reported=complete_reported,
            report_pushback=pushback,
            report_saturated=saturation,
            rate_limit_reported=rate_limit_reported,
            provider_stuck_reported=provider_reported,
        ),
        result_type=WorkerEnd,
        timeout=WATCH_LIFETIME,
        heartbeat=WATCH_HEARTBEAT_TIMEOUT,
        queue=worker.queue,
    )


def exits_of(ends: list[WorkerEnd]) -> dict[str, WorkerEnd]:
    """worker id -> how it exited (for the journal, and the cause its tasks keep)."""
    return {e.worker_id: e for e in ends if e.kind == "exited"}


def hung_anomalies(ctx: RunContext, ends: list[WorkerEnd]) -> list[Anomaly]:
    """A `hung_worker` anomaly for each live worker its watch found hung (and not answering
    again by this tend: nothing to ask then); the journal says both, in their order."""
    state, anomalies = ctx.state, []
    for at, end in enumerate(ends):
        worker = state.workers.get(end.worker_id)
        if end.kind == "recovered" and worker is not None:
            ctx.journal("worker answered again", worker=end.worker_id, detail=end.detail)
        if end.kind != "hung" or worker is None or not worker.tasks:
            continue
        ctx.journal("worker hung", worker=end.worker_id, detail=end.detail)
        if any(e.kind == "recovered" and e.worker_id == end.worker_id for e in ends[at + 1 :]):
            continue
        task = state.task(worker.tasks[0])
        anomalies.append(
            Anomaly(
                kind="hung_worker",
                task=task.spec.identifier,
                task_name=task.spec.name,
                uuid=f"{end.worker_id}@{end.since.isoformat() if end.since else ''}",
                worker=end.worker_id,
                detail=end.detail,
            )
        )
    return anomalies


def close_lapsed(ctx: RunContext, observation: Observation, ends: list[WorkerEnd]) -> None:
    """Close the hang and stuck decisions whose cause went away, by what this tend saw (before
    the tend files its new anomalies: a hang seen again is a new question, named anew)."""
    state = ctx.state
    task_workers = {t.spec.identifier: t.worker_id for t in state.tasks if t.worker_id}
    facts = lapsed.TendFacts(
        workers={w.worker_id: w.pid for w in state.workers.values()},
        answered={e.worker_id for e in ends if e.kind == "recovered"}
        | {
            task_workers[identifier]
            for identifier, seen in observation.tasks.items()
            if seen.source == "socket" and identifier in task_workers
        },
        task_workers=task_workers,
        completed=set(observation.healthy),
        errored={a.sample_ref for a in observation.anomalies or [] if a.kind == "sample_error"},
    )
    closed = lapsed.close(state.triage, lapsed.lapsed(state.triage, facts), now=workflow.now())
    ctx.journal_events(lapsed.journal_events(closed))
