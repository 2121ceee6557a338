"""The ramp's setpoint plan for one tend (workflows/policy/setpoint_plan.py), without Temporal: moves
become journal events and control-socket retunes; a sandbox budget clamps and says so once."""

from __future__ import annotations

from harness.helpers import fake_worker
from steward.workflows.contracts import (
    Capture,
    Observation,
    RunSettings,
    RunState,
    TaskObservation,
    TaskSpec,
)
from steward.workflows.policy import run_policy as policy
from steward.workflows.policy.ramp import RampCounters, RampReading
from steward.workflows.policy.setpoint_plan import plan_setpoints

SETTINGS = RunSettings(samples_ramp=(10, 100))


def _running(names: list[str], sandbox: str | None = None, budget: int | None = None) -> RunState:
    specs = [
        TaskSpec(name=n, model="m", identifier=f"id-{n}", samples=500, sandbox=sandbox)
        for n in names
    ]
    state = RunState(phase="running", sandbox_budget=budget)
    state.tasks = policy.initial_tasks(Capture(tasks=specs), SETTINGS)
    for task in state.tasks:
        task.phase, task.worker_id = "running", f"w-{task.spec.name}"
        state.workers[task.worker_id] = fake_worker(
            task.worker_id, [task.spec.identifier], f"/sock/{task.spec.name}"
        )
    return state


def _reading(state: RunState, name: str, finished: int, rate_limited: int = 0) -> TaskObservation:
    task = state.task(f"id-{name}")
    return TaskObservation(
        identifier=task.spec.identifier,
        ramp=RampReading(
            worker_id=task.worker_id,
            task_id=f"inspect-{name}",
            counters=RampCounters(finished=finished, rate_limit_retries=rate_limited),
            in_flight=task.max_samples,  # saturated: the setpoint is what limits it
            setpoint=task.max_samples,
        ),
    )


def _observe(state: RunState, **finished: int) -> Observation:
    return Observation(tasks={f"id-{n}": _reading(state, n, f) for n, f in finished.items()})


def test_a_clean_saturated_window_climbs_and_retunes_the_live_worker():
    state = _running(["a"])
    first = plan_setpoints(state, _observe(state, a=0), SETTINGS, capacity=False)
    assert first.changes == [] and first.events == []  # a baseline only: no window yet
    start = state.task("id-a").max_samples

    plan = plan_setpoints(state, _observe(state, a=40), SETTINGS, capacity=False)

    task = state.task("id-a")
    assert task.max_samples > start
    assert [e.event for e in plan.events] == ["ramp up"]
    assert plan.events[0].data["previous"] == start
    [change] = plan.changes
    assert (change.socket, change.task_id, change.max_samples) == (
        "/sock/a",
        "inspect-a",
        task.max_samples,
    )


def test_a_sandbox_budget_clamps_the_climb_and_journals_each_task_once():
    state = _running(["a", "b"], sandbox="docker", budget=20)
    plans = [
        plan_setpoints(state, _observe(state, a=30 * n, b=30 * n), SETTINGS, capacity=False)
        for n in range(5)
    ]

    assert sum(t.max_samples for t in state.tasks) == 20  # climbed into the budget, no further
    clamps = [e.data["task"] for plan in plans for e in plan.events if e.event == "budget clamp"]
    assert sorted(clamps) == ["a", "b"]  # each clamped task is journalled once, not every tend
    assert all(t.budget_clamped for t in state.tasks)
    assert plans[-1].changes == []  # nothing moved: no live retune


def test_no_reading_no_move_and_no_retune():
    state = _running(["a"])
    plan = plan_setpoints(state, Observation(), SETTINGS, capacity=False)
    assert plan.events == [] and plan.changes == [] and plan.wanted == {}
