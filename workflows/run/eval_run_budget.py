"""The run's connection budgets, applied (budget-v1): before its first spawn the run learns which
endpoint each model reaches and what earlier runs learned there (the provider ledger), and sizes
the tasks' starting setpoints; each spawn starts its worker at its share; each tend learns from
the workers' windows and retunes their ceilings; a budget learned is handed to the ledger.
The decisions are workflows/policy/provider_budget.py's and workflows/policy/connection_plan.py's."""

from __future__ import annotations

import asyncio

from temporalio import workflow
from temporalio.exceptions import ActivityError

with workflow.unsafe.imports_passed_through():
    from steward.workflows.activity_io import BudgetAnswer, BudgetCall, SetpointChange
    from steward.workflows.contracts import Observation, TaskState
    from steward.workflows.names import Activity
    from steward.workflows.policy import connection_plan, provider_budget
    from steward.workflows.policy.provider_budget import ConnectionShare
    from steward.workflows.policy.ramp import RampWindow
    from steward.workflows.run import eval_run_hosts
    from steward.workflows.run import eval_run_versions as versions
    from steward.workflows.run.eval_run_context import RunContext, cause_of


def unbudgeted_models(ctx: RunContext) -> list[str]:
    """The run's models, which seed exchanges with the provider ledger, when any of them has no
    budget yet; else none (nothing to seed)."""
    models = {t.spec.model for t in ctx.state.tasks}
    covered = {m for b in ctx.state.providers.values() for m in b.models}
    return sorted(models) if models - covered else []


async def seed(
    ctx: RunContext, read_ahead: asyncio.Task[BudgetAnswer | ActivityError] | None = None
) -> None:
    """Budgets for the run's models that have none yet (at the first spawn, and for a model a
    relaunch brought in), before their workers spawn. `read_ahead`: the exchange this tend
    started beside its observe (eval_run_read_ahead.py), for these models."""
    state = ctx.state
    covered = {m for b in state.providers.values() for m in b.models}
    if not unbudgeted_models(ctx):
        return
    if read_ahead is not None:
        answer = _answered(ctx, await read_ahead)
    else:
        answer = await _exchange(ctx, {})
    if answer is None:
        return
    by_endpoint: dict[str, list[str]] = {}
    for model, endpoint in answer.endpoints.items():
        if model not in covered:
            by_endpoint.setdefault(endpoint, []).append(model)
    for endpoint, models in sorted(by_endpoint.items()):
        if endpoint in state.providers:  # another model of a known endpoint
            state.providers[endpoint].models.extend(models)
            continue
        lesson = answer.known.get(endpoint)
        budget = provider_budget.seeded(
            endpoint,
            models,
            lesson.limit if lesson else None,
            workflow.now() if versions.brackets_budgets() else None,
        )
        state.providers[endpoint] = budget
        ctx.journal(
            "connection budget",
            endpoint=endpoint,
            limit=budget.limit,
            start=budget.start,
            learned_by=lesson.run_id if lesson else None,
        )
    headroom = versions.sizes_setpoints_with_headroom()
    ctx.journal_events(connection_plan.size_starting_setpoints(state, headroom))


async def shares_for(
    ctx: RunContext, groups: list[list[TaskState]]
) -> list[ConnectionShare | None]:
    """Each group's bounds for its new worker; live workers' ceilings lowered to make room."""
    plan = connection_plan.plan_spawns(ctx.state, groups)
    await _apply(ctx, plan.changes)
    return plan.spawns


def spawned(
    ctx: RunContext, group: list[TaskState], worker_id: str, share: ConnectionShare
) -> None:
    connection_plan.spawned(ctx.state, group, worker_id, share)


async def rebalance(
    ctx: RunContext, observation: Observation, windows: dict[str, RampWindow]
) -> None:
    """Learn from this tend's windows and retune the live workers' ceilings."""
    state = ctx.state
    seen: dict[str, int] = {}
    for task in state.tasks:
        reading = observation.tasks.get(task.spec.identifier)
        ramp = reading.ramp if reading is not None else None
        if task.worker_id and ramp is not None and ramp.connection_ceiling is not None:
            seen[task.worker_id] = ramp.connection_ceiling
    plan = connection_plan.rebalance(state, windows, seen, workflow.now())
    ctx.journal_events(plan.events)
    await _apply(ctx, plan.changes)
    if plan.learned:
        await _exchange(ctx, plan.learned)


async def make_room_for_scan(ctx: RunContext, beside: list[str] | None = None) -> int | None:
    """The scan about to start holds its share of the budget (the whole of it once no eval
    work is left): the workers make room first. `beside`: the logs of a second scan beside a
    running one, which gets what the budget has left. The share, or None (no budget applies)."""
    if beside is not None:
        share = connection_plan.share_beside_scan(ctx.state, beside)
    else:
        share, changes = connection_plan.scan_share(ctx.state)
        await _apply(ctx, changes)
    if share is not None:
        extra = {"beside_a_scan": True} if beside is not None else {}
        ctx.journal("scan connections", connections=share, **extra)
    return share


async def _apply(ctx: RunContext, changes: list[SetpointChange]) -> None:
    if not changes:
        return
    problems = await eval_run_hosts.apply_setpoints(ctx, changes)
    if problems:
        ctx.journal("connection ceiling not applied", problems=problems)


async def _exchange(ctx: RunContext, learned: dict[str, int]) -> BudgetAnswer | None:
    """Tell the provider ledger what was learned, hear what is known. A ledger that cannot be
    reached costs the run its memory, not its progress: it runs on one process's default."""
    return _answered(ctx, await ask_ledger(ctx, learned))


async def ask_ledger(ctx: RunContext, learned: dict[str, int]) -> BudgetAnswer | ActivityError:
    """The exchange itself: the ledger's answer, or why it could not be had."""
    try:
        return await ctx.activity(
            Activity.EXCHANGE_PROVIDER_BUDGETS,
            BudgetCall(
                workspace=ctx.workspace,
                run_id=ctx.run_id,
                models=sorted({t.spec.model for t in ctx.state.tasks}),
                learned=learned,
            ),
            result_type=BudgetAnswer,
            attempts=3,
        )
    except ActivityError as err:
        return err


def _answered(ctx: RunContext, outcome: BudgetAnswer | ActivityError) -> BudgetAnswer | None:
    if isinstance(outcome, ActivityError):
        ctx.journal("provider ledger unreachable", problem=cause_of(outcome))
        return None
    return outcome
