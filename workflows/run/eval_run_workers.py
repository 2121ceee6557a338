"""The run's task workers: spawn one for a group of tasks (each resuming its log) and watch it,
and stop workers (all of them on cancel and at signoff; those whose tasks leave the run on a
relaunch; lingering ones, and hung ones ruled `restart`)."""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow
from temporalio.exceptions import ActivityError

with workflow.unsafe.imports_passed_through():
    from steward.workflows.activity_io import (
        SelectedTask,
        SpawnRequest,
        StopRequest,
        StopResult,
        WorkerEnd,
    )
    from steward.workflows.contracts import TaskState, TendSummary, WorkerProcess
    from steward.workflows.names import Activity
    from steward.workflows.policy.hosts import HostLoad, HostLost
    from steward.workflows.policy.provider_budget import ConnectionShare
    from steward.workflows.run import eval_run_budget, eval_run_hosts
    from steward.workflows.run.eval_run_context import RunContext, cause_of
    from steward.workflows.run.eval_run_watch import watch

STOP_GRACE_SECONDS = 30.0


async def spawn(
    ctx: RunContext,
    group: list[TaskState],
    connections: ConnectionShare | None = None,
    host: HostLoad | None = None,
) -> list[str]:
    """Start one worker process for `group` (with its share of the provider's connection
    budget, when the run has one; on `host`, when placed on another host); the names of the
    tasks it runs (none when that host could not take it: its tasks stay pending)."""
    state = ctx.state
    state.worker_counter += 1
    worker_id = f"w{state.worker_counter:04d}"
    names = [t.spec.name for t in group]
    ctx.journal(
        "spawning", worker=worker_id, tasks=names, **({"host": host.host_id} if host else {})
    )
    request = SpawnRequest(
        workspace=ctx.workspace,
        definition=ctx.input.definition,
        worker_id=worker_id,
        eval_set_id=ctx.run_id,
        log_dir=state.log_dir,
        max_samples=max(t.max_samples for t in group),
        tasks=[
            SelectedTask(
                identifier=t.spec.identifier,
                registry_name=t.spec.registry_name,
                args_hash=t.spec.args_hash,
                resume=t.log if t.log and t.log_status != "success" else None,
            )
            for t in group
        ],
        connections=connections,
        host=host.host_id if host else "",
        claim_logs=eval_run_hosts.placing(ctx),
    )
    if host is None:
        worker: WorkerProcess = await ctx.activity(
            Activity.SPAWN_WORKER, request, result_type=WorkerProcess
        )
    else:
        try:
            worker = await ctx.activity(
                Activity.SPAWN_WORKER,
                request,
                result_type=WorkerProcess,
                queue=host.queue,
                attempts=3,
            )
        except ActivityError as err:  # gone since it was placed, or it refused the tasks
            ctx.journal("spawn failed", worker=worker_id, host=host.host_id, problem=cause_of(err))
            eval_run_hosts.lost(
                ctx, HostLost(host_id=host.host_id, queue=host.queue, last_seen=workflow.now())
            )
            return []
        worker = worker.model_copy(update={"host": host.host_id, "queue": host.queue})
    state.workers[worker_id] = worker
    if connections is not None:
        eval_run_budget.spawned(ctx, group, worker_id, connections)
    watch(ctx, worker_id)
    for task in group:
        task.phase, task.worker_id = "running", worker_id
        task.host = worker.host or None
        task.attempts += 1
        task.completed_at_spawn = task.progress.completed
    ctx.journal(
        "spawned",
        worker=worker_id,
        tasks=names,
        pid=worker.pid,
        socket=worker.socket,
        output=worker.output,
        **({"host": worker.host} if worker.host else {}),
        **({"connections": connections.model_dump()} if connections else {}),
    )
    return names


async def stop_workers(ctx: RunContext, workers: list[WorkerProcess]) -> StopResult:
    """Stop these processes (gracefully first), each through its host; the caller forgets
    them. A host that cannot be reached leaves its workers to their owner records (their
    logs belong to whoever resumes them), said in the journal."""
    result = StopResult()
    home = [w for w in workers if not w.queue]
    # The workspace's host is asked even with nothing to stop (what runs without `hosts` did).
    queues = ([""] if home or not workers else []) + sorted({w.queue for w in workers if w.queue})
    for queue in queues:
        those = [w for w in workers if w.queue == queue]
        try:
            there: StopResult = await ctx.activity(
                Activity.STOP_WORKERS,
                StopRequest(workers=those, grace_seconds=STOP_GRACE_SECONDS),
                result_type=StopResult,
                timeout=timedelta(minutes=3),
                heartbeat=timedelta(seconds=15),
                queue=queue,
                attempts=3 if queue else None,  # the workspace's host is waited for
            )
        except ActivityError as err:
            if not queue:
                raise
            ctx.journal(
                "workers not stopped",
                host=those[0].host,
                workers=[w.worker_id for w in those],
                problem=cause_of(err),
            )
            continue
        result.stopped_gracefully += there.stopped_gracefully
        result.killed += there.killed
    return result


async def stop_and_forget(ctx: RunContext, reasons: dict[str, str]) -> list[str]:
    """Stop these workers (worker id -> why), forget them and journal it. Their unfinished
    tasks go back to pending, counted as no worker death; returns those tasks' names."""
    state = ctx.state
    workers = [state.workers[w] for w in reasons if w in state.workers]
    if not workers:
        return []
    result = await stop_workers(ctx, workers)
    pending = []
    for worker in workers:
        state.workers.pop(worker.worker_id, None)
        for identifier in worker.tasks:
            task = next((t for t in state.tasks if t.spec.identifier == identifier), None)
            if task is not None and task.phase == "running" and task.worker_id == worker.worker_id:
                task.phase, task.worker_id = "pending", None
                pending.append(task.spec.name)
        if worker.worker_id in result.stopped_gracefully + result.killed:
            ctx.journal(
                "worker stopped",
                worker=worker.worker_id,
                pid=worker.pid,
                reason=reasons[worker.worker_id],
                killed=worker.worker_id in result.killed,
            )
        else:  # it had exited by itself before the stop came
            ctx.journal("worker exited", worker=worker.worker_id, pid=worker.pid)
    return pending


async def stop_workers_of(ctx: RunContext, identifiers: set[str]) -> None:
    """Stop the workers running tasks that leave the run; their other tasks respawn."""
    leaving = [w for w in ctx.state.workers.values() if set(w.tasks) & identifiers]
    await stop_and_forget(ctx, {w.worker_id: "its task left the run" for w in leaving})


async def stop_lingering_and_restarted(
    ctx: RunContext, ends: list[WorkerEnd], summary: TendSummary
) -> None:
    """Stop the workers their watches found lingering, and hung ones ruled `restart` (their
    tasks respawn from their logs in this tend)."""
    state = ctx.state
    reasons = {e.worker_id: f"lingering: {e.detail}" for e in ends if e.kind == "lingering"}
    reasons.update({w: "restart ruled on a hung worker" for w in state.restart_workers})
    state.restart_workers = []
    summary.restarted += await stop_and_forget(ctx, reasons)
