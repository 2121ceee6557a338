"""The run's pure policy: what an observation means and what to spawn. No I/O, no clocks."""

from __future__ import annotations

from pydantic import BaseModel, Field

from . import ramp
from .contracts import Capture, Observation, RunPhase, RunSettings, RunState, TaskState


class ObservationOutcome(BaseModel):
    completed: list[str] = Field(default_factory=list)  # task identifiers
    stalled: list[str] = Field(default_factory=list)
    restart: list[str] = Field(default_factory=list)
    exited_workers: list[str] = Field(default_factory=list)


def initial_tasks(capture: Capture, settings: RunSettings) -> list[TaskState]:
    """Tasks start at the ramp's floor (50) — sandboxed ones at their share of the sandbox
    budget when that is less — or exactly at the definition's own max_samples, which is then
    pinned: honoured as set and never ramped."""
    if capture.max_samples is not None:
        return [
            TaskState(spec=s, max_samples=capture.max_samples, pinned=True) for s in capture.tasks
        ]
    budget = sandbox_budget_of(capture)
    sandboxed = sum(1 for s in capture.tasks if s.sandbox)
    tasks = []
    for spec in capture.tasks:
        start = ramp.starting_setpoint(settings.samples_ramp, spec.planned_samples)
        if spec.sandbox:
            start = ramp.budget_share(budget, sandboxed, start)
        tasks.append(TaskState(spec=spec, max_samples=start))
    return tasks


def sandbox_budget_of(capture: Capture) -> int | None:
    return ramp.sandbox_budget(
        capture.max_sandboxes, [t.sandbox for t in capture.tasks], capture.cpus
    )


def sandboxed_setpoints(state: RunState, besides: TaskState) -> int:
    """The summed setpoints of the other open sandboxed tasks (what the budget already holds)."""
    return sum(t.max_samples for t in open_tasks(state) if t.spec.sandbox and t is not besides)


def open_tasks(state: RunState) -> list[TaskState]:
    return [t for t in state.tasks if t.phase in ("pending", "running")]


def apply_observation(
    state: RunState, observation: Observation, stall_after: int
) -> ObservationOutcome:
    """Fold an observation into the state (in place) and say what changed.

    A task whose newest log is `success` is complete. A worker that died takes its unfinished
    tasks back to pending, unless they have died `stall_after` times in a row without
    completing a sample since their last spawn: then they are given up (stalled).
    """
    outcome = ObservationOutcome()
    for task in open_tasks(state):
        seen = observation.tasks.get(task.spec.identifier)
        if seen is None:
            continue
        if seen.progress is not None:
            task.progress = seen.progress
        if seen.log is not None:
            task.log, task.log_status = seen.log, seen.log_status
        if seen.log_status == "success":
            task.phase = "complete"
            task.fruitless = 0
            outcome.completed.append(task.spec.identifier)

    for worker_id in list(state.workers):
        # A worker we heard nothing about is presumed alive: no news is not death.
        if observation.alive.get(worker_id, True):
            continue
        worker = state.workers.pop(worker_id)
        outcome.exited_workers.append(worker_id)
        for identifier in worker.tasks:
            task = state.task(identifier)
            if task.phase != "running" or task.worker_id != worker_id:
                continue
            task.worker_id = None
            if task.progress.completed > task.completed_at_spawn:
                task.fruitless = 0
            else:
                task.fruitless += 1
            if task.fruitless > stall_after:
                task.phase = "stalled"
                outcome.stalled.append(identifier)
            else:
                task.phase = "pending"
                outcome.restart.append(identifier)
    return outcome


def plan_spawns(state: RunState, settings: RunSettings) -> list[list[TaskState]]:
    """Group the pending tasks into new worker processes.

    One process per task unless `max_workers` packs them: then at most that many processes
    live at once, and the pending tasks are dealt round-robin into the free slots.
    """
    if state.paused or state.phase not in ("running", "stalled"):
        return []
    pending = [t for t in state.tasks if t.phase == "pending"]
    if not pending:
        return []
    if settings.max_workers is None:
        return [[task] for task in pending]
    slots = min(max(0, settings.max_workers - len(state.workers)), len(pending))
    groups: list[list[TaskState]] = [[] for _ in range(slots)]
    for index, task in enumerate(pending):
        if slots:
            groups[index % slots].append(task)
    return [group for group in groups if group]


def run_phase(state: RunState) -> RunPhase:
    """running while anything is open; finished when every task is complete or given up;
    else stalled (a task waits on a decision)."""
    if state.phase in ("cancelling", "cancelled", "failed", "signed_off"):
        return state.phase
    if open_tasks(state):
        return "running"
    if all(t.phase in ("complete", "given_up") for t in state.tasks):
        return "finished"
    return "stalled"
