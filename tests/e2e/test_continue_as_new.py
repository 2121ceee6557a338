"""Long runs continue-as-new when Temporal suggests it, carrying their whole state.

The test server suggests it after 150 history events (conftest), about eight tends."""

from __future__ import annotations

from harness.helpers import assert_each_sample_once, make_workspace, read_journal


def test_state_survives_continue_as_new(steward, workspace_root):
    workspace = make_workspace(
        steward,
        workspace_root,
        {"long": 30},
        options="samples_ramp: [2, 2]\ntend_interval: 1h\n",
        dotenv="STEWARD_OFFLINE_DELAY=1.5\n",
    )
    first = steward.ok("launch", cwd=workspace)
    steward.ok("pause", "--reason", "kept across continue-as-new", cwd=workspace)
    for _ in range(14):
        steward.ok("tend", cwd=workspace)
    status = steward.status(workspace)
    # A run id never comes back: one other than the launch's means the run continued as new.
    assert status["run_id"] != first["run_id"], "the run never continued as new"

    carried = status["state"]
    assert carried["paused"] is True and carried["pause_reason"] == "kept across continue-as-new"
    assert carried["tend_count"] >= 15 and carried["tasks"][0]["attempts"] == 1
    steward.ok("resume", cwd=workspace)
    steward.wait_phase(workspace, {"finished"}, tend=True)

    journal = read_journal(workspace)
    assert [e["seq"] for e in journal] == list(range(1, len(journal) + 1))
    assert_each_sample_once(workspace, {"long": 30})
    listed = [r for r in steward.ok("runs")["runs"] if r["workflow_id"] == first["workflow_id"]]
    assert len(listed) == 1 and listed[0]["state"] == "finished"
