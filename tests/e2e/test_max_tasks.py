"""The definition's max_tasks bounds how many tasks run at once; the rest wait their turn,
in definition order."""

from __future__ import annotations

import json

from harness.helpers import Steward, make_workspace
from workflows.contracts import RunState, TaskSpec
from workflows.policy import plan_spawns


def test_max_tasks_policy_keeps_definition_order():
    from workflows.contracts import RunSettings, TaskState

    tasks = [TaskState(spec=TaskSpec(name=n, model="m", identifier=n, samples=1)) for n in "abcd"]
    state = RunState(phase="running", tasks=tasks, max_tasks=2)
    assert [[t.spec.name for t in g] for g in plan_spawns(state, RunSettings())] == [["a"], ["b"]]
    tasks[0].phase = "running"
    assert [[t.spec.name for t in g] for g in plan_spawns(state, RunSettings())] == [["b"]]
    state.max_tasks = None
    assert len(plan_spawns(state, RunSettings())) == 3  # unset: all at once


def test_max_tasks_one_runs_tasks_one_at_a_time_in_order(steward: Steward, workspace_root):
    workspace = make_workspace(
        steward,
        workspace_root,
        {"first": 3, "second": 3, "third": 3},
        options="max_workers: 3\n",
        eval_set_args=", max_tasks=1",
    )
    steward.ok("launch", cwd=workspace)
    steward.wait_phase(workspace, {"finished"}, tend=True)
    journal = [json.loads(line) for line in (workspace / "journal.jsonl").read_text().splitlines()]
    order = [(e["event"], e["tasks"] if "tasks" in e else e.get("task")) for e in journal]
    spawned = [tasks for event, tasks in order if event == "spawned"]
    assert spawned == [["first"], ["second"], ["third"]]
    # Each task was spawned only after the one before it completed.
    events = [(e["event"], e.get("task") or e.get("tasks")) for e in journal]
    assert events.index(("task complete", "first")) < events.index(("spawned", ["second"]))
    assert events.index(("task complete", "second")) < events.index(("spawned", ["third"]))
