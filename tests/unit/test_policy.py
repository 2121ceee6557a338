"""The run's pure policy, without Temporal."""

from __future__ import annotations

from datetime import UTC, datetime

from steward.workflows.contracts import (
    Capture,
    Observation,
    Progress,
    RunSettings,
    RunState,
    TaskObservation,
    TaskSpec,
    WorkerProcess,
)
from steward.workflows.policy import run_policy as policy


def _spec(name: str, samples: int = 10) -> TaskSpec:
    return TaskSpec(name=name, model="steward/offline", identifier=f"id-{name}", samples=samples)


def _state(*names: str) -> RunState:
    state = RunState(phase="running")
    state.tasks = policy.initial_tasks(Capture(tasks=[_spec(n) for n in names]), RunSettings())
    return state


def _run(state: RunState, worker_id: str, *names: str) -> None:
    state.workers[worker_id] = WorkerProcess(
        worker_id=worker_id,
        tasks=[f"id-{n}" for n in names],
        pid=1,
        create_time=0.0,
        socket="s",
        output="o",
        started_at=datetime.now(UTC),
    )
    for name in names:
        task = state.task(f"id-{name}")
        task.phase, task.worker_id, task.completed_at_spawn = (
            "running",
            worker_id,
            task.progress.completed,
        )
        task.attempts += 1


def test_tasks_start_at_the_ramp_floor_unless_the_definition_pins_max_samples():
    capture = Capture(tasks=[_spec("a", 500), _spec("b", 12)])
    started = policy.initial_tasks(capture, RunSettings(samples_ramp=(40, 300)))
    assert [(t.max_samples, t.pinned) for t in started] == [(40, False), (12, False)]
    pinned = policy.initial_tasks(capture.model_copy(update={"max_samples": 7}), RunSettings())
    assert [(t.max_samples, t.pinned) for t in pinned] == [(7, True), (7, True)]


def test_sandboxed_tasks_start_at_a_share_of_the_budget():
    boxed = [_spec("a", 500).model_copy(update={"sandbox": "docker"}) for _ in range(2)]
    capture = Capture(tasks=[*boxed, _spec("free", 500)], cpus=8)  # Docker budget: 16
    started = policy.initial_tasks(capture, RunSettings())
    assert [t.max_samples for t in started] == [8, 8, 50]
    assert policy.sandbox_budget_of(capture) == 16
    assert policy.sandboxed_setpoints(RunState(tasks=started), besides=started[0]) == 8


def test_success_log_completes_a_task_and_the_run():
    state = _state("a")
    _run(state, "w1", "a")
    seen = Observation(
        tasks={
            "id-a": TaskObservation(
                identifier="id-a",
                log="l",
                log_status="success",
                progress=Progress(total=10, completed=10),
            )
        }
    )
    outcome = policy.apply_observation(state, seen, stall_after=2)
    assert outcome.completed == ["id-a"]
    assert policy.run_phase(state) == "finished"


def test_no_news_of_a_worker_is_not_death():
    state = _state("a")
    _run(state, "w1", "a")
    outcome = policy.apply_observation(state, Observation(), stall_after=2)
    assert outcome.exited_workers == [] and "w1" in state.workers


def test_dead_worker_with_progress_is_restarted_and_resets_the_count():
    state = _state("a")
    _run(state, "w1", "a")
    state.task("id-a").fruitless = 2
    seen = Observation(
        alive={"w1": False},
        tasks={
            "id-a": TaskObservation(identifier="id-a", progress=Progress(total=10, completed=4))
        },
    )
    outcome = policy.apply_observation(state, seen, stall_after=2)
    assert outcome.restart == ["id-a"] and state.task("id-a").fruitless == 0
    assert state.task("id-a").phase == "pending" and not state.workers


def test_fruitless_respawns_give_a_task_up_after_stall_after():
    state = _state("a")
    for attempt in range(1, 4):
        _run(state, f"w{attempt}", "a")
        outcome = policy.apply_observation(
            state, Observation(alive={f"w{attempt}": False}), stall_after=2
        )
        if attempt <= 2:
            assert outcome.restart == ["id-a"], attempt
        else:
            assert outcome.stalled == ["id-a"]
    assert state.task("id-a").phase == "stalled" and state.task("id-a").attempts == 3
    assert policy.run_phase(state) == "stalled"


def test_spawns_one_worker_per_task_by_default():
    state = _state("a", "b", "c")
    groups = policy.plan_spawns(state, RunSettings())
    assert [[t.spec.name for t in g] for g in groups] == [["a"], ["b"], ["c"]]


def test_max_workers_packs_tasks_into_free_slots():
    state = _state("a", "b", "c", "d", "e")
    groups = policy.plan_spawns(state, RunSettings(max_workers=2))
    assert [[t.spec.name for t in g] for g in groups] == [["a", "c", "e"], ["b", "d"]]
    _run(state, "w1", "a", "c", "e")
    state.task("id-b").phase = state.task("id-d").phase = "pending"
    assert [
        [t.spec.name for t in g] for g in policy.plan_spawns(state, RunSettings(max_workers=2))
    ] == [["b", "d"]]
    _run(state, "w2", "b", "d")
    assert policy.plan_spawns(state, RunSettings(max_workers=2)) == []


def test_paused_or_ended_runs_spawn_nothing():
    state = _state("a")
    state.paused = True
    assert policy.plan_spawns(state, RunSettings()) == []
    state.paused, state.phase = False, "cancelling"
    assert policy.plan_spawns(state, RunSettings()) == []


def test_max_tasks_policy_keeps_definition_order():
    from steward.workflows.contracts import TaskState

    tasks = [TaskState(spec=TaskSpec(name=n, model="m", identifier=n, samples=1)) for n in "abcd"]
    state = RunState(phase="running", tasks=tasks, max_tasks=2)
    assert [[t.spec.name for t in g] for g in policy.plan_spawns(state, RunSettings())] == [
        ["a"],
        ["b"],
    ]
    tasks[0].phase = "running"
    assert [[t.spec.name for t in g] for g in policy.plan_spawns(state, RunSettings())] == [["b"]]
    state.max_tasks = None
    assert len(policy.plan_spawns(state, RunSettings())) == 3  # unset: all at once


def test_scan_progress_counts_complete_tasks_scanned_and_scanning():
    from steward.workflows.views.status_view import scan_line

    state = _state("a", "b", "c")
    assert scan_line(state) is None  # nothing complete: nothing to scan yet
    for task, log in zip(state.tasks[:2], ("/logs/a.eval", "/logs/b.eval"), strict=True):
        task.phase, task.log = "complete", log
    state.scanned_logs, state.scanning_logs = ["/logs/a.eval"], ["/logs/b.eval"]
    assert scan_line(state) == "1 of 2 complete task(s) scanned, scanning 1"
    state.scanning_logs, state.scan_problem = [], "ScanFailed: the judge did not answer"
    assert scan_line(state) == (
        "1 of 2 complete task(s) scanned; last attempt failed: ScanFailed: the judge did not answer"
    )
