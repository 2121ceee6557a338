"""Changing a live run: a relaunch's delta committed (archive, restore, store reuse, new or
grown work), drift reported when the definition was edited but not launched, and results
reused from the log store."""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow
from temporalio.exceptions import ActivityError

with workflow.unsafe.imports_passed_through():
    from steward.workflows.activity_io import CaptureRequest, FetchRequest, MoveRequest
    from steward.workflows.contracts import Capture, Progress, TaskState
    from steward.workflows.names import Activity
    from steward.workflows.policy import run_policy as policy
    from steward.workflows.policy.delta import AmendRequest, AmendResult, compute_delta, delta_lines
    from steward.workflows.policy.layout import archive_dir_of
    from steward.workflows.run.eval_run_context import RunContext, cause_of
    from steward.workflows.run.eval_run_workers import stop_workers_of


async def amend(ctx: RunContext, request: AmendRequest) -> AmendResult:
    """Commit a relaunch's delta: archive what it removes or supersedes, restore what the
    archive answers, reuse what the store answers, and queue only the new or grown work; a
    task whose identifier survived keeps its log."""
    state, result = ctx.state, AmendResult()
    leaving = {r.identifier for r in request.rows if r.kind in ("removed", "superseded")}
    await stop_workers_of(ctx, leaving)
    archive = archive_dir_of(state.log_dir)
    moves = [
        (path, archive if row.kind != "restore" else state.log_dir)
        for row in request.rows
        if row.kind in ("removed", "superseded", "restore")
        for path in row.moves
    ]
    moved: list[str] = []
    if moves:
        moved = await ctx.activity(
            Activity.MOVE_LOGS, MoveRequest(moves=moves), result_type=list[str]
        )
    destination = dict(zip([path for path, _ in moves], moved, strict=True))
    result.archived = [m for m in moved if m.startswith(archive)]
    restored = {
        row.identifier: destination[row.moves[0]]
        for row in request.rows
        if row.kind == "restore" and row.moves
    }
    fetched: dict[str, str] = {}
    if request.store_hits:
        fetched = await fetch_from_store(ctx, request.store_hits)
    state.tasks = _amended_tasks(ctx, request, restored, fetched, result)
    state.max_tasks = request.capture.max_tasks
    state.reused = sorted({*state.reused, *result.reused})
    state.definition_hash = request.definition_hash
    state.drift, state.drift_hash = [], None
    ctx.journal(
        "amended",
        by=request.by,
        rows=[f"{r.kind} {r.name} ({r.model}): {r.detail}" for r in request.rows],
        runs=result.added,
        archived=result.archived,
        restored=result.restored,
        reused=result.reused,
    )
    if state.phase in ("finished", "stalled"):
        state.phase = policy.run_phase(state)
    await ctx.publish_state()
    ctx.wake = True
    return result


def _amended_tasks(
    ctx: RunContext,
    request: AmendRequest,
    restored: dict[str, str],
    fetched: dict[str, str],
    result: AmendResult,
) -> list[TaskState]:
    old = {t.spec.identifier: t for t in ctx.state.tasks}
    fresh = {t.spec.identifier: t for t in policy.initial_tasks(request.capture, ctx.settings)}
    tasks = []
    for spec in request.capture.tasks:
        task = old.get(spec.identifier)
        if task is not None:
            grew = spec.samples > task.spec.samples or spec.epochs > task.spec.epochs
            task.spec = spec
            if grew and task.phase in ("complete", "given_up", "stalled"):
                # Resume its log: the samples it holds are reused, only the rest run.
                task.phase, task.log_status, task.fruitless = "pending", "extend", 0
                task.extending = task.log
                result.added.append(spec.name)
            tasks.append(task)
            continue
        task = fresh[spec.identifier]
        if spec.identifier in restored:
            mark_complete(task, restored[spec.identifier])
            result.restored.append(spec.name)
        elif spec.identifier in fetched:
            mark_complete(task, fetched[spec.identifier])
            result.reused.append(spec.name)
        else:
            result.added.append(spec.name)
        tasks.append(task)
    return tasks


async def follow_drift(ctx: RunContext, current: str | None) -> None:
    """An edit of the definition that was not launched is drift: resolve the edit once (per
    version of the file) and report what a launch would change, every tend."""
    state = ctx.state
    if current is None or state.definition_hash is None:
        return
    if current == state.definition_hash:
        if state.drift:
            state.drift, state.drift_hash = [], None
            ctx.journal("drift cleared", reason="the definition is as launched again")
        return
    if current == state.drift_hash:
        return
    try:
        capture: Capture = await ctx.activity(
            Activity.CAPTURE_DEFINITION,
            CaptureRequest(workspace=ctx.workspace, definition=ctx.input.definition),
            result_type=Capture,
            timeout=timedelta(minutes=10),
            attempts=1,
        )
    except ActivityError as err:
        state.drift = [f"the edited definition does not resolve: {cause_of(err)}"]
    else:
        committed = [t.spec for t in state.tasks]
        logs = {t.spec.identifier: t.log for t in state.tasks}
        delta = compute_delta(committed, logs, capture.tasks, [])
        state.drift = delta_lines(delta) if delta.changed else []
    state.drift_hash = current
    if state.drift:
        ctx.journal("drift", changes=state.drift, hint="`steward launch --dry-run` shows the delta")


async def fetch_from_store(ctx: RunContext, hits: dict[str, str]) -> dict[str, str]:
    """Copy the store's logs that satisfy tasks into the log dir: identifier -> local log."""
    return await ctx.activity(
        Activity.FETCH_FROM_STORE,
        FetchRequest(hits=hits, log_dir=ctx.state.log_dir),
        result_type=dict[str, str],
        timeout=timedelta(minutes=10),
    )


async def reuse_from_store(ctx: RunContext, hits: dict[str, str]) -> list[str]:
    """The tasks the store answers are done: fetch their logs and mark them complete."""
    fetched = await fetch_from_store(ctx, hits)
    names = []
    for task in ctx.state.tasks:
        if task.spec.identifier in fetched:
            mark_complete(task, fetched[task.spec.identifier])
            names.append(task.spec.name)
    ctx.state.reused = sorted({*ctx.state.reused, *names})
    return names


def mark_complete(task: TaskState, log: str) -> None:
    """A task answered by an existing log (from the store, or restored from the archive)."""
    task.phase, task.log, task.log_status, task.worker_id = "complete", log, "success", None
    planned = task.spec.planned_samples
    task.progress = Progress(total=planned, completed=planned)
