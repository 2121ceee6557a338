"""Decisions: what went wrong is grouped into error classes (workflows/policy/decisions.py decides),
a ruling on a class is carried out on the logs, the scoring-integrity scan reads the settled
transcripts, and crossing the cost cap pauses the run and asks the operator."""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow
from temporalio.exceptions import ActivityError

with workflow.unsafe.imports_passed_through():
    from steward.workflows.activity_io import ApplyRequest, ApplyResult
    from steward.workflows.contracts import CancelRequest, Observation, TendSummary
    from steward.workflows.names import Activity
    from steward.workflows.policy import cost, decisions, healing, rulings
    from steward.workflows.policy import run_policy as policy
    from steward.workflows.policy.decisions import Anomaly
    from steward.workflows.policy.rulings import RuleRequest, RuleResult
    from steward.workflows.run import eval_run_scan
    from steward.workflows.run.eval_run_context import RunContext, cause_of


async def triage(
    ctx: RunContext, observation: Observation, stalled: list[str], summary: TendSummary
) -> None:
    """Group what went wrong into classes, raise decisions, apply what was ruled, and scan
    the transcripts once every task is settled."""
    state, tend = ctx.state, ctx.state.tend_count + 1
    anomalies = [
        Anomaly(
            kind="stalled_task",
            task=identifier,
            task_name=state.task(identifier).spec.name,
            uuid=f"attempt-{state.task(identifier).attempts}",
            detail=f"{state.task(identifier).fruitless} worker deaths without progress",
            cause=state.task(identifier).exit_cause,
        )
        for identifier in stalled
    ]
    anomalies += observation.anomalies or []
    if ctx.patches.scan:
        anomalies += eval_run_scan.take_in(ctx, summary)
    if observation.anomaly_problem:
        summary.problem = f"finding anomalies failed: {observation.anomaly_problem}"
        ctx.journal("tend failed", problem=summary.problem)
    if ctx.patches.heal:
        for healed in healing.heal(state.triage, observation.healthy, now=workflow.now()):
            ctx.journal(
                "healed",
                error_class=healed.class_id,
                samples=healed.samples,
                closed=healed.closed,
                reason="completed cleanly when the task resumed",
            )
    absorb(ctx, anomalies, summary)
    for decision_id in rulings.route_unattended(state.triage, tend):
        ctx.journal("routed to operator", decision=decision_id, reason="no agent collected")
    await apply_rulings(ctx, summary)
    if ctx.patches.watch:
        return  # the tend scans after it published the finish
    if not policy.open_tasks(state) and policy.unscanned_logs(state):
        await scan(ctx, summary)


def absorb(ctx: RunContext, anomalies: list[Anomaly], summary: TendSummary) -> None:
    """File anomalies into classes; journal new classes, standing rulings, raised decisions."""
    state = ctx.state
    outcome = decisions.absorb(
        state.triage,
        anomalies,
        ctx.settings.rules,
        now=workflow.now(),
        tend=state.tend_count + 1,
        by_sample=ctx.patches.heal,
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
    cls = state.triage.find_class(result.class_id)
    if cls is not None and cls.kind == "cost_cap" and result.effect == "ruled":
        _rule_cost_cap(ctx, request)
    if cls is not None and cls.kind == "stalled_task" and result.effect == "ruled":
        task = state.task(cls.instances[-1].anomaly.task)
        if request.verdict == "retry":
            task.phase, task.fruitless = "pending", 0
        else:
            task.phase = "given_up"
    if cls is not None and cls.kind == "hung_worker" and result.effect == "ruled":
        worker = cls.instances[-1].anomaly.worker
        if request.verdict == "restart" and worker in state.workers:
            state.restart_workers.append(worker)
    ctx.wake = True
    return result


async def apply_rulings(ctx: RunContext, summary: TendSummary) -> None:
    """Carry out what was ruled on settled logs (rerun, exclude, zero...)."""
    state = ctx.state
    actions = rulings.pending_actions(state.triage, policy.settled_logs(state))
    if not actions:
        return
    result: ApplyResult = await ctx.activity(
        Activity.APPLY_ACTIONS,
        ApplyRequest(
            workspace=ctx.workspace, actions=actions, workers=list(state.workers.values())
        ),
        result_type=ApplyResult,
        timeout=timedelta(minutes=5),
    )
    rulings.mark_applied(state.triage, result.done, skipped=result.skipped)
    summary.applied += len(result.done)
    for (class_id, verdict), count in _per_class(result.done).items():
        ctx.journal("ruling applied", error_class=class_id, verdict=verdict, instances=count)
    for (class_id, verdict), count in _per_class(result.skipped).items():
        ctx.journal(
            "ruling skipped",
            error_class=class_id,
            verdict=verdict,
            samples=count,
            reason="healthy in the task's newest log: nothing wrong to act on",
        )
    for identifier in result.rerun_tasks:
        task = state.task(identifier)
        task.phase, task.log_status, task.fruitless = "pending", None, 0
        ctx.journal("rerun queued", task=task.spec.name, log=task.log)
    if result.problems:
        ctx.journal("ruling not applied", problems=result.problems)


def _per_class(actions: list[rulings.Action]) -> dict[tuple[str, str], int]:
    """(class id, verdict) -> how many of `actions`, for the journal."""
    counts: dict[tuple[str, str], int] = {}
    for action in actions:
        key = (action.class_id, action.verdict)
        counts[key] = counts.get(key, 0) + 1
    return counts


async def scan(ctx: RunContext, summary: TendSummary) -> None:
    """The scoring-integrity scan of the settled transcripts; findings become classes."""
    state = ctx.state
    logs = policy.unscanned_logs(state)
    try:
        findings = await eval_run_scan.scan_logs(ctx, logs)
    except ActivityError as err:
        problem = cause_of(err)
        if problem != state.scan_problem:
            ctx.journal("scan failed", problem=problem)
        state.scan_problem = problem
        return
    state.scan_problem = None
    state.scanned_logs.extend(logs)
    anomalies = eval_run_scan.findings_as_anomalies(ctx, findings)
    ctx.journal("scanned", logs=len(logs), findings=len(anomalies))
    absorb(ctx, anomalies, summary)


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


def _rule_cost_cap(ctx: RunContext, request: RuleRequest) -> None:
    state, cap = ctx.state, ctx.settings.cost_cap
    state.cost.cap_paused = False
    if request.verdict == "continue":
        state.cost.cap_waived = cap.model_dump_json() if cap else None
        state.paused, state.pause_reason = False, None
        ctx.journal("resumed", by=request.by, reason="continue past the cost cap")
    elif ctx.cancel is None:
        ctx.cancel = CancelRequest(
            reason=f"cost cap: {request.reason or 'cancelled by the operator'}", by=request.by
        )
