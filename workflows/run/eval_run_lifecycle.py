"""The run's beginning and its endings: capture (resolve the definition into tasks), signoff
(curate the log dir and stop tending), and the two endings that stop everything: cancel and
orphan (stop the workers, give capacity back, end with one notice)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any, Literal

from temporalio import workflow
from temporalio.exceptions import ActivityError, ApplicationError

with workflow.unsafe.imports_passed_through():
    from steward.workflows.activity_io import (
        CaptureRequest,
        CurateRequest,
        CurateResult,
        ObserveRequest,
        StopResult,
    )
    from steward.workflows.contracts import (
        Capture,
        Notice,
        Observation,
        Signoff,
        SignoffRequest,
        TendSummary,
    )
    from steward.workflows.names import Activity
    from steward.workflows.policy import run_policy as policy
    from steward.workflows.policy.blockers import Blocker, refusal_lines
    from steward.workflows.run import eval_run_scan
    from steward.workflows.run import eval_run_triage as triage
    from steward.workflows.run import eval_run_versions as versions
    from steward.workflows.run.eval_run_capacity import release
    from steward.workflows.run.eval_run_change import reuse_from_store
    from steward.workflows.run.eval_run_context import RunContext, cause_of
    from steward.workflows.run.eval_run_state import signoff_check as run_signoff_check
    from steward.workflows.run.eval_run_workers import stop_and_forget, stop_workers


async def capture(ctx: RunContext) -> bool:
    """Resolve the definition into tasks; False (and the run failed) if it does not resolve."""
    state = ctx.state
    try:
        # `steward launch` resolved the definition already (to smoke it and match the log
        # store); a run started without one resolves it here.
        resolved: Capture = ctx.input.capture or await ctx.activity(
            Activity.CAPTURE_DEFINITION,
            CaptureRequest(workspace=ctx.workspace, definition=ctx.input.definition),
            result_type=Capture,
            timeout=timedelta(minutes=10),
        )
    except ActivityError as err:
        message = cause_of(err)
        state.phase, state.error, state.finished_at = "failed", message, workflow.now()
        ctx.journal("failed", error=message)
        await ctx.publish_state()
        return False
    state.tasks = policy.initial_tasks(resolved, ctx.settings)
    state.sandbox_budget = policy.sandbox_budget_of(resolved)
    state.max_tasks = resolved.max_tasks
    state.log_dir = resolved.log_dir or ctx.input.log_dir
    state.definition_hash = ctx.input.definition_hash
    state.phase = "running"
    ctx.journal(
        "captured",
        tasks=[t.name for t in resolved.tasks],
        samples=sum(t.planned_samples for t in resolved.tasks),
        log_dir=state.log_dir,
        sandbox_budget=state.sandbox_budget,
    )
    if ctx.input.store_hits:
        reused = await reuse_from_store(ctx, ctx.input.store_hits)
        ctx.journal("reused from store", tasks=reused)
    return True


# ---------------------------------------------------------------- signoff
def signoff_blockers(ctx: RunContext, scan_running_blocks: bool = True) -> list[str]:
    """Why the run cannot be signed off now, as the refusal says it. A scan that is running
    blocks only under the lock (`scan_running_blocks`): the validator lets the signoff wait for
    it instead."""
    return refusal_lines(signoff_check(ctx, scan_running_blocks))


def signoff_check(ctx: RunContext, scan_running_blocks: bool = False) -> list[Blocker]:
    """Every blocker with its owner and the command that clears it: (grouped) the refusal, and
    what `steward signoff --check` and `status` show, built by the reader from the state and
    `scan_waits` (the status query's) with the same pure function."""
    return run_signoff_check(ctx.state, scan_waits=not scan_running_blocks and scan_waits(ctx))


def scan_waits(ctx: RunContext) -> bool:
    """A scan runs, waits to be taken in, or the next tend starts it: a signoff waits for it
    rather than being refused for the logs it will read. Pure reads: the status query asks."""
    return ctx.scanning or bool(ctx.scan_outcomes) or eval_run_scan.scan_pending(ctx)


def signoff_problem(ctx: RunContext, request: SignoffRequest) -> str | None:
    """Why a signoff is refused before it starts, or None."""
    if not request.by.strip():
        return "Signoff needs a name: pass --by NAME."
    blockers = signoff_blockers(ctx, scan_running_blocks=False)
    return "Signoff refused: " + "; ".join(blockers) + "." if blockers else None


async def signoff(ctx: RunContext, request: SignoffRequest) -> Signoff:
    """Curate the log dir (keep each complete task's log), finalize journal and status."""
    if ctx.scan_outcomes:
        # A scan that ended since the last tend: its findings may block the signoff.
        state = ctx.state
        summary = TendSummary(
            tend=state.tend_count, at=workflow.now(), phase=state.phase, paused=state.paused
        )
        triage.absorb(ctx, eval_run_scan.take_in(ctx, summary), summary)
        ctx.wake = True  # a tend tells the operator of what the scan raised
    blockers = signoff_blockers(ctx)
    if blockers:
        # Checked again under the lock: a tend may have changed the run since the validator.
        raise ApplicationError("Signoff refused: " + "; ".join(blockers) + ".", non_retryable=True)
    state = ctx.state
    # Never leave a live worker of the run behind (one lingering after its success log).
    await stop_and_forget(ctx, {w: "signoff" for w in state.workers})
    keep = [t.log for t in state.tasks if t.log and t.phase == "complete"]
    curated: CurateResult = await ctx.activity(
        Activity.CURATE_LOGS,
        CurateRequest(
            workspace=ctx.workspace, log_dir=state.log_dir, keep=keep, publish=request.publish
        ),
        result_type=CurateResult,
        timeout=timedelta(minutes=10),
    )
    state.signoff = Signoff(
        by=request.by,
        at=workflow.now(),
        publish=request.publish,
        published=curated.published,
        archived=curated.archived,
        logs=keep,
    )
    state.phase, state.next_tend_at = "signed_off", None
    ctx.journal(
        "signed off",
        by=request.by,
        logs=len(keep),
        archived=curated.archived,
        published=curated.published,
        publish_problem=curated.problem,
    )
    state.outbox.append(
        Notice(
            kind="signed_off",
            text=f"Signed off by {request.by}: {state.samples_done}/"
            f"{state.samples_total} samples in {len(keep)} log(s)."
            + (f" Published {len(curated.published)}." if curated.published else ""),
        )
    )
    await ctx.flush_outbox()
    await ctx.publish_state()
    ctx.wake = True
    return state.signoff


# ---------------------------------------------------------------- the two endings
async def orphan(ctx: RunContext, reason: str) -> None:
    """The run's workspace is gone, or is another run's now. Nothing of it can be written or
    read any more: stop its workers, give its capacity back, tell people once, and end
    (`steward runs delete` removes it). Its journal stays in the run's state."""
    state = ctx.state
    result = await _stop_all(ctx, "orphaned")
    state.error = reason
    text = (
        f"Orphaned: {reason}. Its workers were stopped and the run has ended "
        f"({state.samples_done}/{state.samples_total} samples); "
        f"`steward runs delete {workflow.info().workflow_id}` removes it."
    )
    await _end(ctx, "orphaned", result, text, reason=reason)
    ctx.upsert_visibility()  # not the workspace: it is not the run's any more


async def cancel(ctx: RunContext) -> None:
    """Stop every worker, give capacity (and leftover sandboxes) back, end as cancelled."""
    assert ctx.cancel is not None
    state, request = ctx.state, ctx.cancel
    state.phase, state.cancel_reason = "cancelling", request.reason
    ctx.upsert_visibility()
    for task in state.tasks:
        if task.phase in ("pending", "running"):
            task.phase, task.worker_id = "pending", None
    # Recorded cancelled whether or not the workers stopped: capacity goes back, and sandbox
    # containers the workers left behind go with it.
    result = await _stop_all(ctx, "cancelled")
    if versions.cancel_counts_from_the_logs():
        await _count_from_the_logs(ctx)
    if state.capacity.domain_id is not None and state.capacity.backend == "docker":
        reaped = await ctx.activity(
            Activity.REAP_SANDBOXES, [ctx.workspace], result_type=list[str], attempts=3
        )
        if reaped:
            ctx.journal("sandboxes reaped", containers=reaped)
    text = (
        f"Cancelled by {request.by or 'someone'}: {request.reason or 'no reason given'} "
        f"({state.samples_done}/{state.samples_total} samples)."
    )
    await _end(ctx, "cancelled", result, text, reason=request.reason, by=request.by)
    await ctx.publish_state()


async def _count_from_the_logs(ctx: RunContext) -> None:
    """Read the unfinished tasks' logs once their workers are stopped: their progress was as
    of the last tend (the watches' heartbeats never enter the state), so the samples completed
    since would be missing from the cancelled run's count. Unread, the count stays as it was."""
    state = ctx.state
    unfinished = [t.spec for t in policy.open_tasks(state)]
    if not state.log_dir or not unfinished:
        return
    request = ObserveRequest(log_dir=state.log_dir, workers=[], tasks=unfinished)
    try:
        seen = await ctx.activity(
            Activity.OBSERVE_RUN, request, result_type=Observation, attempts=3
        )
    except ActivityError as err:
        ctx.journal("count not read", problem=cause_of(err))
        return
    # No workers are left, so only progress is folded in (and a log found complete).
    policy.apply_observation(state, seen, ctx.settings.stall_after)


EndPhase = Literal["orphaned", "cancelled"]


async def _stop_all(ctx: RunContext, why: str) -> StopResult:
    """An ending's first steps: stop every worker, forget them, give the capacity back."""
    state = ctx.state
    result = await stop_workers(ctx, list(state.workers.values()))
    state.workers.clear()
    if state.capacity.domain_id is not None:
        await release(ctx, None, why)
    return result


async def _end(
    ctx: RunContext, phase: EndPhase, stopped: StopResult, text: str, **journal: Any
) -> None:
    """An ending's last steps: the phase, the journal line, and the one notice."""
    state = ctx.state
    state.phase, state.finished_at, state.next_tend_at = phase, workflow.now(), None
    ctx.journal(phase, **journal, stopped=stopped.stopped_gracefully, killed=stopped.killed)
    state.outbox.append(Notice(kind=phase, text=text))
    await ctx.flush_outbox()
