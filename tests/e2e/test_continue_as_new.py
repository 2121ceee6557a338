"""Long runs continue-as-new when Temporal suggests it, carrying their whole state.

The test server suggests it after 150 history events (conftest), about eight tends. A handover
that comes between tends does not tend on arrival: every manual tend is one tend."""

from __future__ import annotations

from harness.helpers import (
    assert_each_sample_once,
    fetch_history,
    make_workspace,
    read_journal,
    replay,
)


def test_state_survives_continue_as_new(steward, workspace_root):
    # Held: no worker ends while the test tends (an exit is an event that tends by itself).
    hold = workspace_root / "hold"
    hold.touch()
    workspace = make_workspace(
        steward,
        workspace_root,
        {"long": 30},
        options="samples_ramp: [2, 2]\ntend_interval: 1h\n",
        dotenv=f"STEWARD_OFFLINE_DELAY=0.2\nSTEWARD_OFFLINE_HOLD={hold}\n",
    )
    first = steward.ok("launch", cwd=workspace)
    steward.ok("pause", "--reason", "kept across continue-as-new", cwd=workspace)
    numbers = [steward.ok("tend", cwd=workspace)["tend"] for _ in range(14)]
    # The handovers came between these tends, with no tend due: none tended on arrival.
    assert numbers == list(range(numbers[0], numbers[0] + 14))
    status = steward.status(workspace)
    # A run id never comes back: one other than the launch's means the run continued as new.
    assert status["run_id"] != first["run_id"], "the run never continued as new"

    carried = status["state"]
    assert carried["paused"] is True and carried["pause_reason"] == "kept across continue-as-new"
    assert carried["tend_count"] >= 15 and carried["tasks"][0]["attempts"] == 1
    hold.unlink()
    steward.ok("resume", cwd=workspace)
    steward.wait_phase(workspace, {"finished"}, tend=True)

    journal = read_journal(workspace)
    assert [e["seq"] for e in journal] == list(range(1, len(journal) + 1))
    assert_each_sample_once(workspace, {"long": 30})
    listed = [r for r in steward.ok("runs")["runs"] if r["workflow_id"] == first["workflow_id"]]
    assert len(listed) == 1 and listed[0]["state"] == "finished"
    # The continued run that began between tends (waiting, not tending) replays.
    replay(
        fetch_history(steward, first["workflow_id"], status["run_id"]),
        record_as="eval_run_handover_v1_between_tends",
    )
    # Signed off as soon as it says finished: the signoff waits for the scan of the last log.
    signing = steward.status(workspace)["run_id"]
    assert steward.ok("signoff", "--by", "carla", cwd=workspace)["by"] == "carla"
    replay(
        fetch_history(steward, first["workflow_id"], signing),
        record_as="eval_run_settle_v1_signoff",
    )
