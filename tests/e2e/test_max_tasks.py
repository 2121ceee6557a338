"""The definition's max_tasks bounds how many tasks run at once; the rest wait their turn,
in definition order."""

from __future__ import annotations

from harness.helpers import Steward, make_workspace, read_journal


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
    journal = read_journal(workspace)
    order = [(e["event"], e["tasks"] if "tasks" in e else e.get("task")) for e in journal]
    spawned = [tasks for event, tasks in order if event == "spawned"]
    assert spawned == [["first"], ["second"], ["third"]]
    # Each task was spawned only after the one before it completed.
    events = [(e["event"], e.get("task") or e.get("tasks")) for e in journal]
    assert events.index(("task complete", "first")) < events.index(("spawned", ["second"]))
    assert events.index(("task complete", "second")) < events.index(("spawned", ["third"]))
