"""One tend, step by step: observe the run (logs, workers, anomalies) → apply what was seen
(completions, exits, stalls; policy.apply_observation decides) and what the watches reported
(lingering and hung workers) → ramp → triage and the cost cap → admission and spawns → the
run's phase → journal, notices, workspace files → the integrity scan, once every task is
settled (after the run says `finished`: the scan gates signoff, not the finish).

A tend that cannot see the run changes nothing and says so once per reason.
"""

from __future__ import annotations

from temporalio import workflow
from temporalio.exceptions import ActivityError, ApplicationError

with workflow.unsafe.imports_passed_through():
    from steward.workflows.activity_io import AnomalyRequest, ObserveRequest, TidyRequest, WorkerEnd
    from steward.workflows.contracts import ENDING_PHASES, Notice, Observation, TendSummary
    from steward.workflows.names import Activity
    from steward.workflows.payload_limits import PAYLOAD_TOO_LARGE
    from steward.workflows.policy import healing, lapsed, notices
    from steward.workflows.policy import run_policy as policy
    from steward.workflows.policy.layout import triage_ledger_of
    from steward.workflows.policy.provider_budget import ConnectionShare
    from steward.workflows.run import (
        eval_run_budget,
        eval_run_hosts,
        eval_run_metrics,
        eval_run_provider,
        eval_run_scan,
    )
    from steward.workflows.run import eval_run_read_ahead as read_ahead
    from steward.workflows.run import eval_run_versions as versions
    from steward.workflows.run.eval_run_capacity import (
        account_capacity,
        admit,
        needs_admission,
        queued,
        release,
    )
    from steward.workflows.run.eval_run_context import RunContext, cause_of
    from steward.workflows.run.eval_run_lifecycle import orphan
    from steward.workflows.run.eval_run_options import follow_options
    from steward.workflows.run.eval_run_ramp import ramp
    from steward.workflows.run.eval_run_read_ahead import ReadAhead
    from steward.workflows.run.eval_run_triage import check_cost_cap, triage
    from steward.workflows.run.eval_run_watch import close_lapsed, exits_of, hung_anomalies
    from steward.workflows.run.eval_run_workers import spawn, stop_lingering_and_restarted


def nothing_to_tend(ctx: RunContext) -> bool:
    phase = ctx.state.phase
    return phase in ENDING_PHASES


async def tend(ctx: RunContext) -> TendSummary:
    """One tend. One whose activity returned more than Temporal can take (the worker's payload
    guard failed it, naming it) stops there and says why, as one that cannot observe the run
    does; what it did before stands, and the next tend does it all again."""
    state = ctx.state
    summary = TendSummary(
        tend=state.tend_count + 1, at=workflow.now(), phase=state.phase, paused=state.paused
    )
    ahead = None
    if not nothing_to_tend(ctx) and versions.reads_ahead():
        ahead = read_ahead.start(ctx)  # beside the observe: the reads that do not need it
    try:
        return await _tend(ctx, summary, ahead)
    except ActivityError as err:
        cause = err.cause
        if not (isinstance(cause, ApplicationError) and cause.type == PAYLOAD_TOO_LARGE):
            raise
        await _stopped_short(ctx, summary, f"the tend stopped short: {cause_of(err)}")
        return summary
    finally:
        if ahead is not None:
            ahead.cancel()  # what the tend did not take (it stopped short, or spawned nothing)


async def _stopped_short(ctx: RunContext, summary: TendSummary, problem: str) -> None:
    """Say why the tend could not finish: status, status.md, the journal, a notification."""
    state = ctx.state
    summary.problem = state.tend_problem = problem
    ctx.journal("tend failed", problem=problem)
    notice = notices.tend_problem_notice(state, problem)
    if notice is not None:
        state.outbox.append(notice)
    await ctx.flush_outbox()
    await ctx.write_workspace()


async def _tend(ctx: RunContext, summary: TendSummary, ahead: ReadAhead | None) -> TendSummary:
    state = ctx.state
    if nothing_to_tend(ctx):
        return summary
    moved = eval_run_hosts.forget_lost_workers(ctx) if state.host_losses else []
    if state.lost_hosts:
        await eval_run_hosts.recheck_lost(ctx)
    ends, ctx.worker_ends = ctx.worker_ends, []
    try:
        observation = await _observe(ctx)
        if eval_run_hosts.placing(ctx):
            await eval_run_hosts.observe_remote(ctx, observation, ends)
    except ActivityError as err:
        ctx.worker_ends[:0] = ends  # for the next tend
        await _stopped_short(ctx, summary, f"observing the run failed: {cause_of(err)}")
        return summary
    if observation.orphaned is not None:
        await orphan(ctx, observation.orphaned)
        summary.phase = state.phase
        return summary
    stalled = await _apply_observation(ctx, observation, summary, exits_of(ends))
    summary.restarted += moved  # from a lost host
    await stop_lingering_and_restarted(ctx, ends, summary)
    hung = hung_anomalies(ctx, ends)
    stuck = eval_run_provider.stuck_anomalies(ctx, ends)
    close_lapsed(ctx, observation, ends)  # before triage files `hung`: a new hang asks anew
    eval_run_provider.close_answered(ctx, ends)  # likewise a provider stuck again
    observation.anomalies = (observation.anomalies or []) + hung + stuck
    versions.read_at_first_tend()
    await follow_options(ctx, ahead.take_options() if ahead else None)
    windows = await ramp(ctx, observation)
    eval_run_metrics.count_windows(state, ctx.run_id, windows)
    await triage(ctx, observation, stalled, summary)
    check_cost_cap(ctx, summary)
    if state.providers:
        # After triage: a scan that ended there has given its connections back.
        await eval_run_budget.rebalance(ctx, observation, windows)
    await _start_work(ctx, summary, ahead)
    await _settle_phase(ctx)
    await eval_run_scan.start(ctx, eval_run_budget.make_room_for_scan)
    await _finish_tend(ctx, summary)
    return summary


async def _observe(ctx: RunContext) -> Observation:
    state = ctx.state
    home = [w for w in state.workers.values() if not w.queue]  # hosts: the rest is theirs
    request = ObserveRequest(
        log_dir=state.log_dir,
        workers=home,
        tasks=[t.spec for t in policy.open_tasks(state)],
        anomalies=AnomalyRequest(
            workspace=ctx.workspace,
            log_dir=state.log_dir,
            tasks=[t.spec for t in state.tasks],
            workers=home,
            stuck_after=ctx.settings.stuck_after,
            # Stuck samples that may be done; the error classes a resumed task may have healed.
            suspects=sorted(lapsed.watched_samples(state.triage)),
            suspect_classes=healing.suspect_classes(state.triage),
            ledger=triage_ledger_of(ctx.workspace, workflow.info().first_execution_run_id),
            ledger_ops=state.triage.ledger_ops,
        ),
    )
    request.workspace, request.workflow_id = ctx.workspace, workflow.info().workflow_id
    return await ctx.activity(Activity.OBSERVE_RUN, request, result_type=Observation, attempts=3)


async def _apply_observation(
    ctx: RunContext, observation: Observation, summary: TendSummary, exits: dict[str, WorkerEnd]
) -> list[str]:
    """Progress, completions, worker exits (`exits`: how, as their watches saw it) and stalls;
    completed tasks' logs tidied. Returns the tasks that stalled in this tend."""
    state = ctx.state
    outcome = policy.apply_observation(state, observation, ctx.settings.stall_after)
    account_capacity(ctx)
    priced = policy.llm_cost(state).dollars(ctx.settings.prices)
    state.cost.usd, state.cost.unpriced = priced[0], priced[1]
    for worker_id in outcome.exited_workers:
        end = exits.get(worker_id)
        if end is None:
            ctx.journal("worker exited", worker=worker_id)
            continue
        ctx.journal("worker exited", worker=worker_id, how=end.detail, **_said(end.cause))
        for identifier, log_status in end.log_status.items():
            # What its last worker died of, for its stalled question; a finished task keeps none.
            died = log_status != "success"
            task = state.task(identifier)
            task.exit_cause = end.cause if died else None
            task.exit_detail = end.detail if died else None
            task.exit_log_tail = end.log_tail if died else []
    for identifier in outcome.completed:
        task = state.task(identifier)
        summary.completed.append(task.spec.name)
        ctx.journal("task complete", task=task.spec.name, log=task.log, samples=task.progress.done)
    for identifier in outcome.stalled:
        task = state.task(identifier)
        summary.stalled.append(task.spec.name)
        ctx.journal(
            "task stalled",
            task=task.spec.name,
            attempts=task.attempts,
            reason=f"{task.fruitless} worker deaths without a completed sample",
            **_said(task.exit_cause),
        )
    summary.restarted = [state.task(i).spec.name for i in outcome.restart]
    if outcome.completed:
        await ctx.activity(
            Activity.TIDY_LOGS, TidyRequest(log_dir=state.log_dir, identifiers=outcome.completed)
        )
    return outcome.stalled


def _said(cause: str | None) -> dict[str, str]:
    """The journal field for what a dead worker last said, when it said anything."""
    return {"cause": cause} if cause else {}


async def _start_work(ctx: RunContext, summary: TendSummary, ahead: ReadAhead | None) -> None:
    """Ask for capacity if pending work holds none, then spawn what the plan allows."""
    state = ctx.state
    state.phase = policy.run_phase(state)
    if needs_admission(ctx):
        await admit(ctx, "resume")
    groups = policy.plan_spawns(state, ctx.settings)
    shares: list[ConnectionShare | None] = [None] * len(groups)
    if groups:
        models = eval_run_budget.unbudgeted_models(ctx)
        await eval_run_budget.seed(ctx, ahead.take_budgets(models) if ahead else None)
        shares = await eval_run_budget.shares_for(ctx, groups)
    hosts = await eval_run_hosts.placements(ctx, groups)
    for group, share, host in zip(groups, shares, hosts, strict=True):
        summary.spawned.extend(await spawn(ctx, group, share, host))
    await eval_run_hosts.subscribe(ctx)


async def _settle_phase(ctx: RunContext) -> None:
    """The run's phase after the spawns; a run with nothing open gives its capacity back."""
    state = ctx.state
    state.phase = policy.run_phase(state)
    if queued(ctx):
        state.phase = "queued"
    elif state.capacity.admitted and not policy.open_tasks(state):
        await release(ctx, None, f"the run is {state.phase}")


async def _finish_tend(ctx: RunContext, summary: TendSummary) -> None:
    """Mark a finished run, count the tend, notify, and publish the state."""
    state = ctx.state
    if state.phase == "finished" and state.finished_at is None:
        state.finished_at = workflow.now()
        ctx.journal("finished", samples=state.samples_done, tasks=len(state.tasks))
        open_items = len(state.triage.open_decisions())
        state.outbox.append(
            Notice(
                kind="finished",
                text=f"Finished: {state.samples_done}/{state.samples_total} samples; "
                f"{open_items} decision(s) open. Sign off with `steward signoff --by NAME`.",
            )
        )
    elif state.phase != "finished":
        state.finished_at = None
    if state.tend_problem is not None:
        ctx.journal("tend recovered", problem=state.tend_problem)
        state.tend_problem = None
    state.tend_count = summary.tend  # counted when done, so status never shows a tend half-way
    state.last_tend_at = workflow.now()
    summary.phase, summary.paused = state.phase, state.paused
    summary.samples_done, summary.samples_total = state.samples_done, state.samples_total
    ctx.journal(
        "tend",
        tend=state.tend_count,
        phase=state.phase,
        samples_done=summary.samples_done,
        samples_total=summary.samples_total,
        spawned=summary.spawned,
    )
    await _publish(ctx)
    eval_run_metrics.count_tend(ctx.run_id, summary.at, workflow.now())


async def _publish(ctx: RunContext) -> None:
    """Notify what is due, then show the state as it is now (workspace files, search
    attributes) with when the timer fires next."""
    state = ctx.state
    state.outbox.extend(notices.decision_notices(state))
    heartbeat = notices.heartbeat_notice(state, ctx.settings.heartbeat, workflow.now())
    if heartbeat is not None:
        state.outbox.append(heartbeat)
    await ctx.flush_outbox()
    state.next_tend_at = ctx.next_tend_at()
    await ctx.publish_state()
