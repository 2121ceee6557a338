"""Admission and release: the run asks its capacity domain's ledger before anything spawns
(launch, resume after a rerun, escalation when the ramp wants more), and gives capacity back
when it ramps down, finishes or is cancelled. What an answer means is decided in
workflows/policy/admission.py; this module makes the calls."""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from steward.workflows.names import Activity, Signal
    from steward.workflows.policy import admission, cost
    from steward.workflows.policy import run_policy as policy
    from steward.workflows.policy.capacity import Admission, AdmitRequest, Door, Footprint, Release
    from steward.workflows.policy.capacity_contracts import (
        AdmissionCall,
        AdmissionOutcome,
        ProbeRequest,
    )
    from steward.workflows.run import eval_run_versions as versions
    from steward.workflows.run.eval_run_context import RunContext

# A ledger answers within a workflow task or two; this long without one, it was reset or
# terminated (or is replaying a long history): ask again.
ANSWER_WAIT = timedelta(minutes=2)


def queued(ctx: RunContext) -> bool:
    cap = ctx.state.capacity
    return cap.position is not None and not cap.admitted


def needs_admission(ctx: RunContext) -> bool:
    """Pending work the run holds no capacity for (a rerun after it finished, say)."""
    state = ctx.state
    if state.capacity.admitted or queued(ctx) or state.paused:
        return False
    _, wanted = policy.run_footprint(state, ctx.settings.capacity_backend)
    return not wanted.empty and any(t.phase == "pending" for t in state.tasks)


async def admit(ctx: RunContext, door: Door, wanted: dict[str, int] | None = None) -> None:
    """Ask the domain's ledger before anything spawns: reserved, or queued in order."""
    state, cap = ctx.state, ctx.state.capacity
    backend, footprint = policy.run_footprint(state, ctx.settings.capacity_backend, wanted)
    cap.backend = backend
    if footprint.empty:
        return  # no sandboxes (or the in-process kind): unbounded, nothing to ask
    probe = ProbeRequest(
        backend=backend, workspace=ctx.workspace, namespace=ctx.settings.kubernetes_namespace
    )
    ask = AdmitRequest(run_id=ctx.run_id, workspace=ctx.workspace, footprint=footprint, door=door)
    if versions.asks_by_signal():
        ask.request_id = str(workflow.uuid4())
    outcome = await _ask(ctx, AdmissionCall(probe=probe, admit=ask))
    cap.probe = probe
    if door != "escalation" and cap.admitted:
        return  # the pump's `admitted` came with the answer and was taken first: nothing to do
    step = admission.read_answer(cap, door, outcome, footprint, workflow.now())
    if step.verdict == "queued":
        state.phase = "queued"
    ctx.journal_events(step.events)
    if step.verdict == "granted":
        answer = outcome.admission
        # A run pumped before its answer went out is answered with its admission.
        granted(ctx, answer, "pumped" if answer.reason == "pumped" else door)
    elif step.verdict == "queued":
        await ctx.publish_state()


async def _ask(ctx: RunContext, call: AdmissionCall) -> AdmissionOutcome:
    """The ledger's answer: in the activity's result (asked by update), or by signal
    (ask-by-signal-v1), asking again if none comes (a ledger reset or terminated meanwhile;
    asking twice is harmless: the ledger keeps one entry per run)."""
    ctx.asking, ctx.answer = call.admit.request_id, None  # the answer may beat the activity
    while True:
        outcome: AdmissionOutcome = await ctx.activity(
            Activity.REQUEST_ADMISSION, call, result_type=AdmissionOutcome
        )
        if not ctx.asking:
            return outcome
        try:
            await workflow.wait_condition(lambda: ctx.answer is not None, timeout=ANSWER_WAIT)
        except TimeoutError:
            continue
        answer, ctx.asking, ctx.answer = ctx.answer, "", None
        return outcome.model_copy(update={"admission": answer})


def granted(ctx: RunContext, answer: Admission, how: str) -> None:
    """The run holds `answer` from now: fit the setpoints to it and leave the queue."""
    state = ctx.state
    waited = admission.grant(state.capacity, answer, workflow.now())
    state.cost.held_since = workflow.now()
    cut = policy.fit_to_grant(state, ctx.settings.capacity_backend)
    ctx.journal(
        "admitted", how=how, held=answer.resources, waited_s=round(waited, 3), setpoints_cut=cut
    )
    if state.phase == "queued":
        state.phase = "running"


async def release(ctx: RunContext, keep: Footprint | None, reason: str) -> None:
    """Give capacity back to the ledger (all of it, or down to `keep`); it pumps at once."""
    cap = ctx.state.capacity
    if cap.domain_id is None:
        return
    account_capacity(ctx)
    request = Release(run_id=ctx.run_id, footprint=keep, reason=reason)
    try:
        await workflow.get_external_workflow_handle(cap.domain_id).signal(
            Signal.RELEASE if keep is not None else Signal.WITHDRAW, request
        )
    except Exception as err:  # noqa: BLE001 - a ledger that is gone holds nothing of ours
        ctx.journal("capacity release failed", problem=str(err))
    if keep is None:
        cap.admitted, cap.held, cap.position = False, {}, None
        ctx.state.cost.held_since = None
        ctx.journal("capacity released", reason=reason)
    else:
        cap.held = {k: min(v, keep.resources.get(k, 0.0)) for k, v in cap.held.items()}


async def resize_reservation(ctx: RunContext, wanted: dict[str, int]) -> None:
    """The mid-run door: a climb the reservation held back asks the ledger for more; a cut
    gives the difference back at once (the queue's head may fit in it)."""
    state = ctx.state
    if wanted:
        await admit(ctx, "escalation", wanted)
        return
    _, now_needs = policy.run_footprint(state, ctx.settings.capacity_backend)
    held = state.capacity.held
    if not now_needs.empty and any(now_needs.resources.get(k, 0.0) < v for k, v in held.items()):
        await release(ctx, now_needs, "ramped down")
        ctx.journal("capacity returned", held=state.capacity.held)


def account_capacity(ctx: RunContext) -> None:
    """Reserved capacity-time: the memory the reservation holds x how long, in Gi·minutes."""
    state = ctx.state
    if state.cost.held_since is None:
        return
    seconds = (workflow.now() - state.cost.held_since).total_seconds()
    state.cost.gi_minutes += cost.gi_minutes(policy.held_memory_gi(state), seconds)
    state.cost.held_since = workflow.now()
