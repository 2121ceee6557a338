"""The connection budgets applied to the run's workers, pure: which endpoint each worker's
tasks reach, what each worker may hold (workflows/policy/provider_budget.py decides), and the retunes
that get there, lowered ceilings first so the fleet's sum never passes its budget on the way.

Like setpoint_plan, it updates the budgets in the state it is given and returns the rest as
data: journal events, control-socket changes, and the budgets learned (for the ledger).
"""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field

from steward.workflows.activity_io import SetpointChange
from steward.workflows.contracts import RunEvent, RunState, TaskState
from steward.workflows.policy import provider_budget
from steward.workflows.policy.provider_budget import (
    ConnectionShare,
    ProviderBudget,
    WorkerConnections,
)
from steward.workflows.policy.ramp import RampWindow

NEW = "new:"  # the key of a worker about to be spawned, by its group's index
SCAN = "scan"  # the integrity scan's share, while it runs on the tasks' own models


class ConnectionPlan(BaseModel):
    events: list[RunEvent] = Field(default_factory=list)
    changes: list[SetpointChange] = Field(default_factory=list)
    learned: dict[str, int] = Field(default_factory=dict)  # endpoint -> limit, for the ledger
    spawns: list[ConnectionShare | None] = Field(default_factory=list)  # per planned group


def budget_of(state: RunState, tasks: list[TaskState]) -> ProviderBudget | None:
    """The budget a worker running `tasks` draws on (its first task's model decides); None
    when a task set its own connections (the definition's setting is kept, outside it)."""
    if any(task.spec.own_connections for task in tasks):
        return None
    for task in tasks:
        for budget in state.providers.values():
            if task.spec.model in budget.models:
                return budget
    return None


def _worker_tasks(state: RunState, worker_id: str) -> list[TaskState]:
    return [t for t in state.tasks if t.worker_id == worker_id and t.phase == "running"]


def _demand(tasks: list[TaskState]) -> int:
    return max(1, sum(t.max_samples for t in tasks))


def _live(state: RunState, budget: ProviderBudget) -> dict[str, list[TaskState]]:
    """The endpoint's live workers and their running tasks."""
    live = {}
    for worker_id in state.workers:
        tasks = _worker_tasks(state, worker_id)
        if tasks and budget_of(state, tasks) is budget:
            live[worker_id] = tasks
    return live


def _scan_demand(state: RunState, budget: ProviderBudget) -> int | None:
    """Transcripts the running scan reads from this endpoint's tasks (None: it reads none)."""
    tasks = [
        t for t in state.tasks if t.log in state.scanning_logs and t.spec.model in budget.models
    ]
    return max(1, sum(t.progress.done for t in tasks)) if tasks else None


def _demands(state: RunState, budget: ProviderBudget) -> dict[str, int]:
    """What each live worker, and the running scan, could use of the budget."""
    demands = {w: _demand(tasks) for w, tasks in _live(state, budget).items()}
    scan = _scan_demand(state, budget)
    if scan is not None:
        demands[SCAN] = scan
    return demands


def scan_share(state: RunState) -> tuple[int | None, list[SetpointChange]]:
    """The scan about to start on `state.scanning_logs`: the connections it may hold (None:
    it reads no budgeted endpoint's tasks, or the budget is spent elsewhere), and the live
    workers' ceilings lowered to make room. With no eval work left it gets the whole budget."""
    for budget in state.providers.values():
        if _scan_demand(state, budget) is None:
            continue
        ceilings = provider_budget.split(budget.limit, _demands(state, budget))
        share = ceilings.pop(SCAN)
        changes = _retunes(state, budget, ceilings, "room for the integrity scan")
        budget.shares = {**ceilings, SCAN: share}
        return share, changes
    return None, []


def _budget_event(budget: ProviderBudget, move: provider_budget.BudgetMove) -> RunEvent:
    return RunEvent(
        event=f"connection budget {move.kind}",
        data=dict(
            endpoint=budget.endpoint, previous=move.previous, limit=move.limit, reason=move.reason
        ),
    )


def share_beside_scan(state: RunState, logs: list[str]) -> int | None:
    """A second scan, of `logs`, beside one that runs (scan-pair-v1): the connections the
    budget has left over the running scan's and any live worker's (None: no budget covers
    these logs, or nothing is left). The running scan keeps what it has."""
    models = {t.spec.model for t in state.tasks if t.log in logs}
    for budget in state.providers.values():
        if not models & set(budget.models):
            continue
        held = sum(budget.shares.get(w, 0) for w in _live(state, budget))
        left = budget.limit - held - budget.shares.get(SCAN, 0)
        if left < 1:
            return None
        budget.shares[SCAN] = budget.shares.get(SCAN, 0) + left
        return left
    return None


def _retunes(
    state: RunState,
    budget: ProviderBudget,
    ceilings: dict[str, int],
    why: str,
    seen: dict[str, int] | None = None,
) -> list[SetpointChange]:
    """Changes for the workers whose ceiling is not the one they should have (as their control
    socket reports it, in `seen`; else as last set), lowered ones first. A retune that did not
    land shows in the next reading and is sent again."""
    seen = seen or {}
    now = {w: seen.get(w, budget.shares.get(w)) for w in ceilings}
    moved = [(w, c) for w, c in ceilings.items() if now[w] != c]
    moved.sort(key=lambda wc: wc[1] - (now[wc[0]] or 0))
    return [
        SetpointChange(
            socket=state.workers[w].socket,
            task_id=None,
            max_connections=ceiling,
            reason=f"connection budget {budget.limit} for {budget.endpoint}: {why}",
        )
        for w, ceiling in moved
    ]


def watch_reports(state: RunState, worker_id: str) -> tuple[bool, bool]:
    """What a worker's watch reports of its connections: pushback when a budget covers its
    tasks, and saturation once that budget was lowered (to raise it back when it can)."""
    budget = budget_of(state, _worker_tasks(state, worker_id))
    return budget is not None, budget is not None and budget.learned


def size_starting_setpoints(state: RunState, headroom: bool = False) -> list[RunEvent]:
    """With a learned budget, tasks not yet started begin at their share of it (`headroom`:
    with samples to spare over their connections, provider_budget.starting_setpoint)."""
    events = []
    for budget in state.providers.values():
        tasks = [t for t in state.tasks if t.spec.model in budget.models]
        fresh = [t for t in tasks if t.attempts == 0 and not t.pinned and t.phase == "pending"]
        for task in fresh:
            sized = provider_budget.starting_setpoint(
                budget, task.max_samples, len(tasks), headroom
            )
            if sized < task.max_samples:
                events.append(
                    RunEvent(
                        event="setpoint sized to budget",
                        data=dict(
                            task=task.spec.name,
                            previous=task.max_samples,
                            setpoint=sized,
                            budget=budget.limit,
                            endpoint=budget.endpoint,
                        ),
                    )
                )
                task.max_samples = sized
    return events


def plan_spawns(state: RunState, groups: list[list[TaskState]]) -> ConnectionPlan:
    """Shares for the groups about to start, and the live workers' ceilings lowered to make
    room for them."""
    plan = ConnectionPlan(spawns=[None] * len(groups))
    for budget in state.providers.values():
        new = {
            f"{NEW}{i}": _demand(group)
            for i, group in enumerate(groups)
            if budget_of(state, group) is budget
        }
        if not new:
            continue
        live = {w: _demand(tasks) for w, tasks in _live(state, budget).items()}
        scan = budget.shares.get(SCAN) if _scan_demand(state, budget) is not None else None
        kept, bounds = provider_budget.spawn_shares(budget, live, new, held=scan or 0)
        plan.changes += _retunes(state, budget, kept, "room for new workers")
        budget.shares = {**kept, **({SCAN: scan} if scan is not None else {})}
        for key, share in bounds.items():
            plan.spawns[int(key.removeprefix(NEW))] = share
    return plan


def spawned(state: RunState, group: list[TaskState], worker_id: str, share: ConnectionShare):
    """Record the ceiling a new worker started with."""
    budget = budget_of(state, group)
    if budget is not None:
        budget.shares[worker_id] = share.ceiling


def rebalance(
    state: RunState,
    windows: dict[str, RampWindow],
    ceilings_seen: dict[str, int],
    now: datetime | None = None,
) -> ConnectionPlan:
    """One tend: learn from each endpoint's windows (pushback anywhere lowers the budget for
    all), then split the budget over the live workers again (tasks finished, started, or
    wanting more). `ceilings_seen`: worker id -> the ceiling its controller reports. `now`:
    budget-episode-v1 (provider_budget.adjust)."""
    plan = ConnectionPlan()
    for budget in state.providers.values():
        live = _live(state, budget)
        seen = {}
        for worker_id, tasks in live.items():
            mine = [windows[t.spec.identifier] for t in tasks if t.spec.identifier in windows]
            if mine:
                limits = [w.connection_limit for w in mine if w.connection_limit is not None]
                seen[worker_id] = WorkerConnections(
                    demand=_demand(tasks),
                    live_limit=min(limits) if limits else None,
                    in_flight=sum(w.in_flight for w in mine),
                    pushback=any(w.pushback for w in mine),
                )
        move = provider_budget.adjust(budget, seen, now)
        provider_budget.apply_move(budget, move, now)
        if move.kind != "none":
            plan.events.append(_budget_event(budget, move))
            if budget.learned:
                plan.learned[budget.endpoint] = budget.limit
        ceilings = provider_budget.split(budget.limit, _demands(state, budget))
        if SCAN in ceilings:
            # The running scan's connections were fixed when it started: the workers share
            # the rest, and take it back when the scan ends.
            scan = min(ceilings.pop(SCAN), budget.shares.get(SCAN, budget.limit))
            rest = {w: _demand(t) for w, t in live.items()}
            ceilings = provider_budget.split(max(budget.limit - scan, len(rest)), rest)
            ceilings[SCAN] = budget.shares.get(SCAN, scan)
        why = move.reason or "rebalanced"
        workers = {w: c for w, c in ceilings.items() if w != SCAN}
        plan.changes += _retunes(state, budget, workers, why, ceilings_seen)
        budget.shares = ceilings
    return plan
