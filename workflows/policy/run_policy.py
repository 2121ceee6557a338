"""The run's pure policy: what an observation means and what to spawn. No I/O, no clocks."""

from __future__ import annotations

from pydantic import BaseModel, Field

from steward.workflows.contracts import (
    ENDING_PHASES,
    Capture,
    Observation,
    RunPhase,
    RunSettings,
    RunState,
    TaskState,
)
from steward.workflows.policy import capacity, cost, ramp
from steward.workflows.policy.capacity import Backend, BackendChoice, Footprint, SandboxSize


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
    if observation.rate_limits:
        state.rate_limits = observation.rate_limits
    for task in open_tasks(state):
        seen = observation.tasks.get(task.spec.identifier)
        if seen is None:
            continue
        if task.extending is not None:
            if seen.log in (None, task.extending):
                continue  # the log it grows from says nothing yet of the new work
            task.extending = None
        if seen.progress is not None:
            task.progress = seen.progress
        if seen.log is not None:
            task.log, task.log_status = seen.log, seen.log_status
        if seen.usage is not None:
            task.usage = seen.usage
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
    if state.max_tasks is not None:
        # The definition's max_tasks: the rest wait their turn, in definition order.
        running = sum(1 for t in state.tasks if t.phase == "running")
        pending = pending[: max(0, state.max_tasks - running)]
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
    if state.phase in ENDING_PHASES:
        return state.phase
    if open_tasks(state):
        return "running"
    if all(t.phase in ("complete", "given_up") for t in state.tasks):
        return "finished"
    return "stalled"


# ---------------------------------------------------------------- capacity
def _counted(state: RunState, choice: BackendChoice) -> tuple[Backend, list[TaskState]]:
    """The run's capacity backend (its first sandboxed task's) and the open tasks it counts."""
    for task in state.tasks:
        backend = capacity.backend_for(task.spec.sandbox, choice)
        if backend != "local":
            counted = [
                t
                for t in open_tasks(state)
                if capacity.backend_for(t.spec.sandbox, choice) == backend
            ]
            return backend, counted
    return "local", []


def run_footprint(
    state: RunState, choice: BackendChoice, wanted: dict[str, int] | None = None
) -> tuple[Backend, Footprint]:
    """What the run's open tasks start (or would, at the `wanted` setpoints)."""
    backend, counted = _counted(state, choice)
    wanted = wanted or {}
    return backend, capacity.footprint(
        [
            (wanted.get(t.spec.identifier, t.max_samples), t.spec.sandbox_size or SandboxSize())
            for t in counted
        ],
        backend,
    )


def _held_key(backend: Backend) -> str:
    return "sandboxes" if backend == "docker" else "pods"


def reservation_budget(state: RunState, choice: BackendChoice) -> int | None:
    """The summed setpoints the run's reservation allows its counted tasks (None: no bound)."""
    backend, counted = _counted(state, choice)
    key = _held_key(backend)
    if not counted or not state.capacity.admitted or key not in state.capacity.held:
        return None
    per_sample = max((t.spec.sandbox_size or SandboxSize()).sandboxes for t in counted)
    return max(len(counted), int(state.capacity.held[key] // per_sample))


def fit_to_grant(state: RunState, choice: BackendChoice) -> list[str]:
    """Scale the counted tasks' setpoints down to what was granted (a run bigger than its whole
    domain gets the domain); returns the names of the tasks that were cut."""
    budget = reservation_budget(state, choice)
    _, counted = _counted(state, choice)
    if budget is None or sum(t.max_samples for t in counted) <= budget:
        return []
    share = ramp.budget_share(budget, len(counted), max(t.max_samples for t in counted))
    cut = []
    for task in counted:
        if task.max_samples > share:
            task.max_samples = share
            cut.append(task.spec.name)
    return cut


# ---------------------------------------------------------------- cost
def llm_cost(state: RunState) -> cost.LlmCost:
    """The run's LLM usage: each task's newest log, summed per model."""
    return cost.merge({t.spec.identifier: t.usage for t in state.tasks if t.usage})


def held_memory_gi(state: RunState) -> float:
    """Memory the run's reservation holds (its footprint's, scaled to what was granted)."""
    cap = state.capacity
    if not cap.admitted or cap.footprint.empty:
        return 0.0
    key = _held_key(cap.backend)
    wanted = cap.footprint.resources.get(key, 0.0)
    share = min(1.0, cap.held.get(key, 0.0) / wanted) if wanted else 0.0
    return cap.footprint.memory_gi * share


def settled_logs(state: RunState) -> dict[str, str]:
    """task identifier -> its final log, for tasks no process is writing to."""
    return {
        t.spec.identifier: t.log
        for t in state.tasks
        if t.log
        and t.worker_id not in state.workers
        and t.phase in ("complete", "stalled", "given_up")
    }


def unscanned_logs(state: RunState) -> list[str]:
    """Complete tasks' logs the scoring-integrity scan has not read yet."""
    return [
        t.log
        for t in state.tasks
        if t.phase == "complete" and t.log and t.log not in state.scanned_logs
    ]
