"""The sandbox budget on a live run: sandboxed tasks start at their share of the definition's
max_sandboxes and the ramp never grows their sum past it; unsandboxed tasks climb freely."""

from __future__ import annotations

import json

from harness.helpers import make_workspace, wait_for


def test_sandboxed_tasks_share_the_budget_and_the_ramp_respects_it(steward, workspace_root):
    workspace = make_workspace(
        steward,
        workspace_root,
        {"boxed_a": 400, "boxed_b": 400, "free": 400},
        options="samples_ramp: [20, 100]\ntend_interval: 1h\n",
        dotenv="STEWARD_OFFLINE_DELAY=3\n",
        sandbox={"boxed_a": "local", "boxed_b": "local"},
        eval_set_args=", max_sandboxes=30",
    )

    listed = {t["name"]: t["sandbox"] for t in steward.ok("tasks", cwd=workspace)["tasks"]}
    assert listed == {"boxed_a": "local", "boxed_b": "local", "free": None}

    launched = steward.ok("launch", cwd=workspace)
    assert launched["state"]["sandbox_budget"] == 30
    assert [t["max_samples"] for t in launched["state"]["tasks"]] == [15, 15, 20]

    def setpoints():
        steward.ok("tend", cwd=workspace)
        return {t["spec"]["name"]: t["max_samples"] for t in steward.state(workspace)["tasks"]}

    def clamps() -> list[dict]:
        lines = (workspace / "journal.jsonl").read_text().splitlines()
        return [e for e in map(json.loads, lines) if e["event"] == "budget clamp"]

    # Each boxed task is clamped at its first clean window; on a loaded machine those come late.
    wait_for(
        lambda: (
            setpoints()["free"] >= 60 and {e["task"] for e in clamps()} >= {"boxed_a", "boxed_b"}
        ),
        timeout=300,
        interval=1,
        what="the free task to climb and both boxed tasks to meet the budget",
    )
    final = setpoints()
    assert final["boxed_a"] + final["boxed_b"] <= 30
    clamps = clamps()
    assert {e["task"] for e in clamps} == {"boxed_a", "boxed_b"} and all(
        e["budget"] == 30 for e in clamps
    )
    assert "Sandbox budget: 30" in (workspace / "status.md").read_text()
    steward.ok("cancel", cwd=workspace)
