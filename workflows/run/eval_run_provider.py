"""When a provider stops answering, in the run: a rerun deferred until it answers again (the
probing, on a timer of the run's own: workflows/policy/deferrals.py decides), and a stuck
provider asked about (what the watches report: workflows/policy/provider_stuck.py decides).

A deferral is probed by a task of the workflow beside its loop, one per class: at the ruling,
then on the backoff, the `probe_provider` activity on the workspace's host. The first probe every
model answers releases the ruling and wakes the run, whose tend carries it out. A run continued
as new takes its deferrals along and probes on where the last left off (`resume_probing`).
"""

from __future__ import annotations

import asyncio
from datetime import timedelta

from temporalio import workflow
from temporalio.exceptions import ActivityError

with workflow.unsafe.imports_passed_through():
    from steward.workflows.activity_io import ProbeRequest, ProbeResult, WorkerEnd
    from steward.workflows.contracts import TERMINAL_PHASES
    from steward.workflows.names import Activity
    from steward.workflows.policy import deferrals, lapsed, provider_stuck
    from steward.workflows.policy.decisions import Anomaly
    from steward.workflows.policy.deferrals import Deferral
    from steward.workflows.policy.rulings import RuleRequest, RuleResult
    from steward.workflows.run import eval_run_versions as versions
    from steward.workflows.run.eval_run_context import RunContext, cause_of

PROBE_TIMEOUT_S = 30.0  # for each model's request
PROBE_ACTIVITY_TIMEOUT = timedelta(minutes=3)  # the requests, each in a process of its own


# ---------------------------------------------------------------- a rerun deferred
def defer(ctx: RunContext, request: RuleRequest, result: RuleResult) -> None:
    """A rerun just ruled to wait for its provider: journal it and start probing. (A history
    recorded before deferred-rerun-v1 carried such a ruling out at once: so does its replay.)"""
    state = ctx.state
    cls = state.triage.find_class(result.class_id)
    if cls is None or cls.ruling is None or cls.ruling.until is None:
        return
    if not versions.defers_reruns():
        cls.ruling.until = None
        return
    task_models = {t.spec.identifier: t.spec.model for t in state.tasks}
    deferral = deferrals.defer(
        cls, result.decision_id, task_models, by=request.by, now=workflow.now()
    )
    state.deferrals = [d for d in state.deferrals if d.class_id != cls.id] + [deferral]
    ctx.journal(
        "rerun deferred",
        decision=result.decision_id,
        error_class=cls.id,
        until=f"{deferrals.providers_text(deferral.models)} answers",
        models=deferral.models,
        by=request.by,
    )
    _start(ctx, cls.id)


def resume_probing(ctx: RunContext) -> None:
    """Probe for every deferral the state carries (a run continued as new)."""
    for deferral in ctx.state.deferrals:
        _start(ctx, deferral.class_id)


def _start(ctx: RunContext, class_id: str) -> None:
    running = ctx.probes.pop(class_id, None)
    if running is not None and not running.done():
        running.cancel()
    ctx.probes[class_id] = asyncio.create_task(_probe_until_answered(ctx, class_id))


def _deferral(ctx: RunContext, class_id: str) -> Deferral | None:
    return next((d for d in ctx.state.deferrals if d.class_id == class_id), None)


async def _probe_until_answered(ctx: RunContext, class_id: str) -> None:
    state = ctx.state
    while state.phase not in TERMINAL_PHASES:
        deferral = _deferral(ctx, class_id)
        if deferral is None:
            return
        if not deferrals.holds(state.triage, deferral):
            # Ruled anew, healed or let go meanwhile: nothing waits for the provider any more.
            state.deferrals.remove(deferral)
            ctx.journal(
                "deferral dropped",
                error_class=class_id,
                reason=deferrals.dropped_because(state.triage, deferral),
            )
            return
        wait = deferral.next_probe_at - workflow.now()
        if wait > timedelta(0):
            await workflow.sleep(
                wait,
                summary=f"probe {deferrals.providers_text(deferral.models)} again "
                f"({deferral.verdict} of {class_id} waits for it)",
            )
            continue
        result = await _probe(ctx, deferral)
        deferral = _deferral(ctx, class_id)
        if deferral is None or not deferrals.holds(state.triage, deferral):
            continue  # changed while probing: the top of the loop says what stands
        if result.answered:
            _answered(ctx, deferral, result)
            return
        problem = "; ".join(f"{m}: {p}" for m, p in sorted(result.problems.items()))
        first = deferral.probes == 0
        deferrals.missed(deferral, problem or "no answer", workflow.now())
        if first:  # once: the backoff's later misses are in the state (status --json)
            ctx.journal(
                "provider did not answer",
                error_class=class_id,
                problem=deferral.last_problem,
                next_probe_in_s=round((deferral.next_probe_at - workflow.now()).total_seconds()),
            )


async def _probe(ctx: RunContext, deferral: Deferral) -> ProbeResult:
    request = ProbeRequest(workspace=ctx.workspace, models=deferral.models, timeout=PROBE_TIMEOUT_S)
    try:
        return await ctx.activity(
            Activity.PROBE_PROVIDER,
            request,
            result_type=ProbeResult,
            timeout=PROBE_ACTIVITY_TIMEOUT,
            attempts=1,
        )
    except ActivityError as err:  # the probe itself failed: as good as no answer
        return ProbeResult(answered=False, problems={"probe": cause_of(err)})


def _answered(ctx: RunContext, deferral: Deferral, result: ProbeResult) -> None:
    state = ctx.state
    deferrals.release(state.triage, deferral)
    state.deferrals.remove(deferral)
    ctx.journal(
        "provider answered",
        error_class=deferral.class_id,
        provider=deferrals.providers_text(deferral.models),
        endpoints=sorted(set(result.endpoints.values())),
        probes=deferral.probes + 1,
        waited_s=round((workflow.now() - deferral.since).total_seconds()),
        then=f"{deferral.verdict} applied",
    )
    ctx.wake = True  # the tend carries the ruling out


# ---------------------------------------------------------------- a stuck provider
def stuck_anomalies(ctx: RunContext, ends: list[WorkerEnd]) -> list[Anomaly]:
    """A `provider_stuck` anomaly for each worker its watch found waiting on a provider that
    answers nothing (and not answering again by this tend); the journal says both."""
    state, anomalies = ctx.state, []
    for at, end in enumerate(ends):
        worker = state.workers.get(end.worker_id)
        if end.kind == "provider_answered":
            ctx.journal("provider answers again", worker=end.worker_id, model=end.model)
        if end.kind != "provider_stuck" or worker is None or not worker.tasks:
            continue
        ctx.journal("provider stuck", worker=end.worker_id, model=end.model, detail=end.detail)
        later = ends[at + 1 :]
        if any(e.kind == "provider_answered" and e.worker_id == end.worker_id for e in later):
            continue
        task = state.task(worker.tasks[0])
        anomalies.append(provider_stuck.stuck_anomaly(end, task.spec.identifier, task.spec.name))
    return anomalies


def close_answered(ctx: RunContext, ends: list[WorkerEnd]) -> None:
    """Close the stuck-provider questions that no longer hold: the provider answers that
    worker again, or the worker is gone (before the tend files new ones)."""
    state = ctx.state
    answered = {e.worker_id for e in ends if e.kind == "provider_answered"}
    gone = provider_stuck.lapses(state.triage, answered, set(state.workers))
    if gone:
        closed = lapsed.close(state.triage, gone, now=workflow.now())
        ctx.journal_events(lapsed.journal_events(closed))
