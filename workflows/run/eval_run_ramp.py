"""The ramp, applied: each tend plans every task's setpoint (workflows/policy/setpoint_plan.py
decides) with the options the tend just read (eval_run_options.py), retunes the live workers
through their control sockets, and resizes the reservation."""

from __future__ import annotations

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from steward.workflows.contracts import Observation
    from steward.workflows.policy.ramp import RampWindow
    from steward.workflows.policy.setpoint_plan import plan_setpoints
    from steward.workflows.run import eval_run_hosts
    from steward.workflows.run.eval_run_capacity import resize_reservation
    from steward.workflows.run.eval_run_context import RunContext


async def ramp(ctx: RunContext, observation: Observation) -> dict[str, RampWindow]:
    """Move each task's sample concurrency by the ramp's rules and apply it live; the windows
    it saw (the connection budgets learn from them later in the tend)."""
    state = ctx.state
    plan = plan_setpoints(
        state, observation, ctx.settings, capacity=True, budgeted=bool(state.providers)
    )
    ctx.journal_events(plan.events)
    if plan.changes:
        problems = await eval_run_hosts.apply_setpoints(ctx, plan.changes)
        if problems:
            ctx.journal("setpoint not applied", problems=problems)
    if state.capacity.admitted:
        await resize_reservation(ctx, plan.wanted)
    return plan.windows
