"""The run follows its workspace: each tend re-reads the live options (_steward.yaml edits: the
ramp range, standing rules, heartbeat, prices and cost cap, the tend interval, the watches'
limits) and reports drift of the definition, before the ramp plans with them."""

from __future__ import annotations

import asyncio

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from steward.workflows.activity_io import LiveOptions, LiveOptionsRequest
    from steward.workflows.names import Activity
    from steward.workflows.policy import notices
    from steward.workflows.run.eval_run_change import follow_drift
    from steward.workflows.run.eval_run_context import RunContext
    from steward.workflows.run.eval_run_watch import watch_all


async def follow_options(
    ctx: RunContext, read_ahead: asyncio.Task[LiveOptions] | None = None
) -> None:
    """Read the workspace's options and definition hash now, report drift, apply the options.
    `read_ahead`: the read this tend started beside its observe (eval_run_read_ahead.py)."""
    fresh = await (read_ahead if read_ahead is not None else read_options(ctx))
    await follow_drift(ctx, fresh.definition_hash)
    follow_live_options(ctx, fresh)


async def read_options(ctx: RunContext) -> LiveOptions:
    return await ctx.activity(
        Activity.READ_LIVE_OPTIONS,
        LiveOptionsRequest(workspace=ctx.workspace, definition=ctx.input.definition),
        result_type=LiveOptions,
    )


def follow_live_options(ctx: RunContext, fresh: LiveOptions) -> None:
    """Apply what the workspace's options say now; a broken options file keeps the last good
    values and is reported once."""
    state = ctx.state
    if fresh.tend_interval and fresh.tend_interval != ctx.settings.tend_interval:
        ctx.journal(
            "tend interval changed",
            previous=ctx.settings.tend_interval,
            now=fresh.tend_interval,
            applies=state.timer.interval is None,
        )
        ctx.settings = ctx.settings.model_copy(update={"tend_interval": fresh.tend_interval})
    if fresh.watch is not None and fresh.watch != ctx.settings.watch:
        ctx.journal(
            "watch limits changed",
            previous=ctx.settings.watch.model_dump(),
            now=fresh.watch.model_dump(),
        )
        ctx.settings = ctx.settings.model_copy(update={"watch": fresh.watch})
        watch_all(ctx)  # the watches judge by the new limits from now
    if fresh.problem != state.options_problem:
        state.options_problem = fresh.problem
        if fresh.problem:
            ctx.journal("options unreadable", problem=fresh.problem, kept=ctx.settings.samples_ramp)
            notice = notices.tend_problem_notice(state, f"options unreadable: {fresh.problem}")
            if notice is not None:
                state.outbox.append(notice)
    if fresh.rules is not None:
        # Standing rules, heartbeat and stuck_after follow _steward.yaml edits at once.
        ctx.settings = ctx.settings.model_copy(
            update={
                "rules": fresh.rules,
                "heartbeat": fresh.heartbeat,
                "stuck_after": fresh.stuck_after or ctx.settings.stuck_after,
                "route_after": fresh.route_after,  # None: 2 x tend_interval
            }
        )
        if fresh.prices is not None:
            ctx.settings = ctx.settings.model_copy(
                update={"prices": fresh.prices, "cost_cap": fresh.cost_cap}
            )
    if fresh.samples_ramp is not None and fresh.samples_ramp != ctx.settings.samples_ramp:
        ctx.journal(
            "ramp range changed", previous=ctx.settings.samples_ramp, now=fresh.samples_ramp
        )
        ctx.settings = ctx.settings.model_copy(update={"samples_ramp": fresh.samples_ramp})
