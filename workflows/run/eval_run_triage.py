"""Decisions: what went wrong is grouped into error classes (workflows/policy/decisions.py decides),
a ruling on a class is carried out on the logs, the scoring-integrity scan reads the settled
transcripts, and crossing the cost cap pauses the run and asks the operator."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from steward.workflows.activity_io import ApplyRequest, ApplyResult
    from steward.workflows.contracts import CancelRequest, Observation, TendSummary
    from steward.workflows.names import Activity
    from steward.workflows.policy import cost, decisions, healing, rulings, triage_ledger
    from steward.workflows.policy import run_policy as policy
    from steward.workflows.policy.decisions import Anomaly
    from steward.workflows.policy.exit_causes import stalled_detail
    from steward.workflows.policy.layout import triage_ledger_of
    from steward.workflows.policy.rulings import RuleRequest, RuleResult
    from steward.workflows.run import eval_run_provider, eval_run_scan
    from steward.workflows.run.eval_run_context import RunContext


async def triage(
    ctx: RunContext, observation: Observation, stalled: list[str], summary: TendSummary
) -> None:
    """Group what went wrong into classes (with what the scans beside the run found), raise
    decisions, and apply what was ruled."""
    state, tend = ctx.state, ctx.state.tend_count + 1
    anomalies = [
        Anomaly(
            kind="stalled_task",
            task=identifier,
            task_name=task.spec.name,
            uuid=f"attempt-{task.attempts}",
            detail=stalled_detail(task.fruitless, task.exit_detail, task.exit_log_tail),
            cause=task.exit_cause,
        )
        for identifier, task in ((i, state.task(i)) for i in stalled)
    ]
    anomalies += observation.anomalies or []
    anomalies += eval_run_scan.take_in(ctx, summary)
    if observation.anomaly_problem:
        summary.problem = f"finding anomalies failed: {observation.anomaly_problem}"
        ctx.journal("tend failed", problem=summary.problem)
    else:
        triage_ledger.written(state.triage, observation.ledger_through)
    if observation.more_anomalies:
        ctx.wake = True  # the rest of what was found comes with the next tend, at once
    for healed in healing.heal(state.triage, observation.healed, now=workflow.now()):
        ctx.journal(
            "healed",
            error_class=healed.class_id,
            samples=healed.samples,
            count=healed.count,
            closed=healed.closed,
            reason="completed cleanly when the task resumed",
        )
    absorb(ctx, anomalies, summary)
    decisions.forget_settled(state.triage)
    route(ctx, tend)
    await apply_rulings(ctx, summary)


def route(ctx: RunContext, tend: int) -> None:
    """Agent items no agent collected in time go to the operator (notified by this tend):
    by the clock (`route_after`), or after two tends for a run started before that."""
    triage_state, window = ctx.state.triage, ctx.route_window()
    if window is None:
        routed = rulings.route_unattended(triage_state, tend, now=workflow.now())
    else:
        routed = rulings.route_overdue(triage_state, workflow.now(), window)
    for decision_id in routed:
        decision = triage_state.find_decision(decision_id)
        because = decision.routed_because if decision else None
        ctx.journal(
            "routed to operator", decision=decision_id, reason=because or "no agent collected"
        )


def absorb(ctx: RunContext, anomalies: list[Anomaly], summary: TendSummary) -> None:
    """File anomalies into classes; journal new classes, standing rulings, raised decisions."""
    state = ctx.state
    outcome = decisions.absorb(
        state.triage,
        anomalies,
        ctx.settings.rules,
        now=workflow.now(),
        tend=state.tend_count + 1,
    )
    for class_id in outcome.new_classes:
        cls = state.triage.find_class(class_id)
        assert cls is not None
        ctx.journal("error class", error_class=cls.id, kind=cls.kind, title=cls.title)
    for class_id, count in outcome.new_instances.items():
        ctx.journal("anomalies", error_class=class_id, new=count)
    for class_id in outcome.standing:
        cls = state.triage.find_class(class_id)
        assert cls is not None and cls.ruling is not None
        ctx.journal("ruled by standing rule", error_class=class_id, verdict=cls.ruling.verdict)
    for decision_id in outcome.raised:
        decision = state.triage.find_decision(decision_id)
        assert decision is not None
        summary.raised.append(decision_id)
        ctx.journal(
            "decision raised",
            decision=decision_id,
            owner=decision.owner,
            question=decision.question,
            verdicts=decision.verdicts,
        )


def rule(ctx: RunContext, request: RuleRequest) -> RuleResult:
    """Answer a decision: an agent's verdict on an error class is a proposal (the operator
    rules on it); the operator's rules. Effects are carried out by the next tend (now)."""
    state = ctx.state
    result = rulings.apply_rule(
        state.triage, request, ctx.settings.rules, now=workflow.now(), tend=state.tend_count
    )
    ctx.journal(
        "proposed" if result.effect == "proposed" else "ruled",
        decision=result.decision_id,
        error_class=result.class_id,
        verdict=request.verdict,
        by=request.by,
        role=request.role,
        reason=request.reason,
        raised=result.raised,
    )
    if request.until is not None and result.effect == "ruled":
        eval_run_provider.defer(ctx, request, result)
    cls = state.triage.find_class(result.class_id)
    step = decisions.run_step(cls.kind, request.verdict) if cls is not None else None
    if cls is not None and step is not None and result.effect == "ruled":
        _RUN_STEPS[step](ctx, cls.instances[-1].anomaly, request)
    ctx.wake = True
    return result


# What decisions.RUN_STEPS says a ruling does, done: each takes the class's latest anomaly.
def _respawn_task(ctx: RunContext, anomaly: Anomaly, request: RuleRequest) -> None:
    task = ctx.state.task(anomaly.task)
    task.phase, task.fruitless = "pending", 0


def _give_up_task(ctx: RunContext, anomaly: Anomaly, request: RuleRequest) -> None:
    ctx.state.task(anomaly.task).phase = "given_up"


def _restart_worker(ctx: RunContext, anomaly: Anomaly, request: RuleRequest) -> None:
    if anomaly.worker in ctx.state.workers:
        ctx.state.restart_workers.append(anomaly.worker)


def _waive_cost_cap(ctx: RunContext, anomaly: Anomaly, request: RuleRequest) -> None:
    state, cap = ctx.state, ctx.settings.cost_cap
    state.cost.cap_paused = False
    state.cost.cap_waived = cap.model_dump_json() if cap else None
    state.paused, state.pause_reason = False, None
    ctx.journal("resumed", by=request.by, reason="continue past the cost cap")


def _cancel_run(ctx: RunContext, anomaly: Anomaly, request: RuleRequest) -> None:
    ctx.state.cost.cap_paused = False
    if ctx.cancel is None:
        ctx.cancel = CancelRequest(
            reason=f"cost cap: {request.reason or 'cancelled by the operator'}", by=request.by
        )


def _pause_run(ctx: RunContext, anomaly: Anomaly, request: RuleRequest) -> None:
    state = ctx.state
    if not state.paused:
        reason = f"{anomaly.model or 'the provider'} stopped answering"
        state.paused, state.pause_reason = True, reason
        ctx.journal("paused", reason=reason, by=request.by)


_RUN_STEPS: dict[decisions.RunStep, Callable[[RunContext, Anomaly, RuleRequest], None]] = {
    "respawn_task": _respawn_task,
    "give_up_task": _give_up_task,
    "restart_worker": _restart_worker,
    "waive_cost_cap": _waive_cost_cap,
    "cancel_run": _cancel_run,
    "pause_run": _pause_run,
}


async def apply_rulings(ctx: RunContext, summary: TendSummary) -> None:
    """Carry out what was ruled on settled logs (rerun, exclude, zero...): on the instances the
    state holds, and on every instance the triage ledger holds of the ledger classes."""
    state = ctx.state
    settled = policy.settled_logs(state)
    actions = rulings.pending_actions(state.triage, settled)
    orders = triage_ledger.ledger_orders(state.triage, settled)
    if not actions and not orders:
        return
    request = ApplyRequest(
        workspace=ctx.workspace, actions=actions, workers=list(state.workers.values())
    )
    if orders:
        request.orders, request.settled_logs = orders, settled
        request.ledger = triage_ledger_of(ctx.workspace, workflow.info().first_execution_run_id)
        request.ledger_ops = state.triage.ledger_ops
    result: ApplyResult = await ctx.activity(
        Activity.APPLY_ACTIONS, request, result_type=ApplyResult, timeout=timedelta(minutes=5)
    )
    rulings.mark_applied(state.triage, result.done, skipped=result.skipped)
    if orders:
        triage_ledger.written(state.triage, result.ledger_through)
        triage_ledger.take_outcomes(state.triage, result.outcomes)
    summary.applied += len(result.done) + sum(o.done for o in result.outcomes)
    done = _per_class(result.done)
    skipped = _per_class(result.skipped)
    for outcome in result.outcomes:
        key = (outcome.class_id, outcome.verdict)
        done[key], skipped[key] = (
            done.get(key, 0) + outcome.done,
            skipped.get(key, 0) + outcome.skipped,
        )
    for (class_id, verdict), count in done.items():
        if count:
            ctx.journal("ruling applied", error_class=class_id, verdict=verdict, instances=count)
    for (class_id, verdict), count in skipped.items():
        if count:
            ctx.journal(
                "ruling skipped",
                error_class=class_id,
                verdict=verdict,
                samples=count,
                reason="healthy in the task's newest log: nothing wrong to act on",
            )
    for identifier in sorted(
        {*result.rerun_tasks, *(t for o in result.outcomes for t in o.rerun_tasks)}
    ):
        task = state.task(identifier)
        task.phase, task.log_status, task.fruitless = "pending", None, 0
        ctx.journal("rerun queued", task=task.spec.name, log=task.log)
    if any(o.done and any(t in settled for t in o.waiting_tasks) for o in result.outcomes):
        ctx.wake = True  # more final logs to edit than one call does: go on at once
    if result.problems:
        ctx.journal("ruling not applied", problems=result.problems)


def _per_class(actions: list[rulings.Action]) -> dict[tuple[str, str], int]:
    """(class id, verdict) -> how many of `actions`, for the journal."""
    counts: dict[tuple[str, str], int] = {}
    for action in actions:
        key = (action.class_id, action.verdict)
        counts[key] = counts.get(key, 0) + 1
    return counts


# ---------------------------------------------------------------- cost cap
def check_cost_cap(ctx: RunContext, summary: TendSummary) -> None:
    """Crossing the cap pauses the run and asks the operator: continue or cancel."""
    state, cap = ctx.state, ctx.settings.cost_cap
    if cap is None or state.cost.cap_paused or state.cost.cap_waived == cap.model_dump_json():
        return
    crossed = cost.cap_crossed(policy.llm_cost(state), ctx.settings.prices, cap)
    if crossed is None:
        return
    state.cost.cap_paused = True
    if not state.paused:
        state.paused, state.pause_reason = True, crossed
    ctx.journal("cost cap crossed", problem=crossed, cap=cap.model_dump())
    cap_anomaly = Anomaly(
        kind="cost_cap",
        task="",
        task_name="the run",
        uuid=f"cap-{state.journal_seq}",
        detail=crossed,
    )
    absorb(ctx, [cap_anomaly], summary)
