"""A run's metrics (definitions: workflows/metrics.py). Its gauges are set wherever the run
publishes its state (each tend's publish step, and the commands that change it); each tend
counts itself and its duration as it ends, and the rate-limit retries of its ramp windows.

Recording adds no command and nothing is recorded during replay: no patch flag is needed.
"""

from __future__ import annotations

from datetime import datetime
from typing import get_args

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from steward.workflows import metrics as m
    from steward.workflows.contracts import RunState
    from steward.workflows.contracts.tasks import RunPhase
    from steward.workflows.policy.ramp import RampWindow
    from steward.workflows.policy.triage_model import AnomalyKind

PHASES: tuple[str, ...] = get_args(RunPhase)
KINDS: tuple[str, ...] = get_args(AnomalyKind)


def task_labels(state: RunState) -> dict[str, str]:
    """Task identifier -> its `task` label: its name, numbered where a run has two of a name."""
    names: dict[str, int] = {}
    for task in state.tasks:
        names[task.spec.name] = names.get(task.spec.name, 0) + 1
    labels: dict[str, str] = {}
    seen: dict[str, int] = {}
    for task in state.tasks:
        name = task.spec.name
        if names[name] > 1:
            seen[name] = seen.get(name, 0) + 1
            name = f"{name}#{seen[name]}"
        labels[task.spec.identifier] = name
    return labels


def budget_readings(state: RunState) -> list[tuple[str, str, float]]:
    """Every budget the run holds as (endpoint, unit, value): each connection budget (unit
    `connections`), and each rate limit its endpoints stated (`requests/min`, `tokens/min`)."""
    readings = [(e, "connections", float(b.limit)) for e, b in state.providers.items()]
    for limit in state.rate_limits:
        for unit, value in sorted(limit.limits.items()):
            readings.append((limit.endpoint, f"{unit}/min", float(value)))
    return readings


def show(state: RunState, run: str) -> None:
    """Set the run's gauges to its state as it is now."""
    labels = task_labels(state)
    for task in state.tasks:
        where = {"run": run, "task": labels[task.spec.identifier]}
        progress = task.progress
        m.record(m.SAMPLES_COMPLETED, progress.completed, **where)
        m.record(m.SAMPLES_ERRORED, progress.errored, **where)
        m.record(m.SAMPLES_IN_FLIGHT, progress.in_flight if task.worker_id else 0, **where)
        m.record(m.SAMPLES_PLANNED, task.spec.planned_samples, **where)
        m.record(m.SETPOINT, task.max_samples, **where)
    for endpoint, unit, value in budget_readings(state):
        m.record(m.PROVIDER_BUDGET, value, run=run, endpoint=endpoint, unit=unit)
    for endpoint, budget in state.providers.items():
        m.record(m.PROVIDER_PUSHBACK, budget.pushbacks, run=run, endpoint=endpoint)
    for limit in state.rate_limits:
        m.record(m.PROVIDER_429S, limit.pushbacks, run=run, endpoint=limit.endpoint)
    open_kinds = [d.kind for d in state.triage.open_decisions()]
    for kind in KINDS:
        m.record(m.DECISIONS_OPEN, open_kinds.count(kind), run=run, kind=kind)
    if state.cost.usd is not None:
        m.record(m.COST_USD, state.cost.usd, run=run)
    m.record(m.CAPACITY_GI_MINUTES, state.cost.gi_minutes, run=run)
    m.record(m.WORKERS, len(state.workers), run=run)
    for phase in PHASES:
        m.record(m.RUN_PHASE, int(state.phase == phase), run=run, phase=phase)


def count_windows(state: RunState, run: str, windows: dict[str, RampWindow]) -> None:
    """Count the rate-limit retries the tend's ramp windows saw (task identifier -> window)."""
    labels = task_labels(state)
    for identifier, window in windows.items():
        if identifier in labels:  # adding 0 starts the series: a rate reads 0, not nothing
            task = labels[identifier]
            m.record(m.RATE_LIMIT_RETRIES, window.rate_limit_retries, run=run, task=task)


def count_tend(run: str, started: datetime, now: datetime) -> None:
    """A tend ran to its end: count it and how long it took."""
    m.record(m.TENDS, 1, run=run)
    m.record(m.TEND_DURATION, max(0.0, (now - started).total_seconds()), run=run)
