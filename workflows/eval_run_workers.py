"""The run's task workers: spawn one for a group of tasks (each resuming its log), and stop
workers (all of them on cancel; those whose tasks leave the run on a relaunch)."""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from .activity_io import SelectedTask, SpawnRequest, StopRequest, StopResult
    from .contracts import TaskState, WorkerProcess
    from .eval_run_context import RunContext
    from .names import Activity

STOP_GRACE_SECONDS = 30.0


async def spawn(ctx: RunContext, group: list[TaskState]) -> list[str]:
    """Start one worker process for `group`; the names of the tasks it runs."""
    state = ctx.state
    state.worker_counter += 1
    worker_id = f"w{state.worker_counter:04d}"
    names = [t.spec.name for t in group]
    ctx.journal("spawning", worker=worker_id, tasks=names)
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
    )
    worker: WorkerProcess = await ctx.activity(
        Activity.SPAWN_WORKER, request, result_type=WorkerProcess
    )
    state.workers[worker_id] = worker
    for task in group:
        task.phase, task.worker_id = "running", worker_id
        task.attempts += 1
        task.completed_at_spawn = task.progress.completed
    ctx.journal(
        "spawned",
        worker=worker_id,
        tasks=names,
        pid=worker.pid,
        socket=worker.socket,
        output=worker.output,
    )
    return names


async def stop_workers(ctx: RunContext, workers: list[WorkerProcess]) -> StopResult:
    """Stop these processes (gracefully first); the caller forgets them."""
    return await ctx.activity(
        Activity.STOP_WORKERS,
        StopRequest(workers=workers, grace_seconds=STOP_GRACE_SECONDS),
        result_type=StopResult,
        timeout=timedelta(minutes=3),
        heartbeat=timedelta(seconds=15),
    )


async def stop_workers_of(ctx: RunContext, identifiers: set[str]) -> None:
    """Stop the workers running tasks that leave the run; their other tasks respawn."""
    state = ctx.state
    workers = [w for w in state.workers.values() if set(w.tasks) & identifiers]
    if not workers:
        return
    await stop_workers(ctx, workers)
    for worker in workers:
        state.workers.pop(worker.worker_id, None)
        for identifier in worker.tasks:
            task = next((t for t in state.tasks if t.spec.identifier == identifier), None)
            if task is not None and task.phase == "running":
                task.phase, task.worker_id = "pending", None
        ctx.journal("worker stopped", worker=worker.worker_id, reason="its task left the run")
