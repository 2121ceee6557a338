"""Determinism: a fresh run's history, with commands, replays against today's EvalRun; with
STEWARD_RECORD_HISTORY=1 it is kept in tests/histories, which tests/unit/test_replay_histories.py
replays without a server."""

from __future__ import annotations

from harness.helpers import fetch_history, make_workspace, replay


def test_fresh_history_with_commands_replays(steward, workspace_root):
    hold = workspace_root / "hold"
    hold.write_text("held until the commands are in\n")
    workspace = make_workspace(
        steward,
        workspace_root,
        {"a": 4, "b": 3},
        dotenv=f"STEWARD_OFFLINE_DELAY=3\nSTEWARD_OFFLINE_HOLD={hold}\n",
    )
    launched = steward.ok("launch", cwd=workspace)
    steward.ok("pause", "--reason", "replay", cwd=workspace)
    steward.ok("tend", cwd=workspace)
    steward.ok("resume", cwd=workspace)
    hold.unlink()  # a run that finished first would refuse the pause
    steward.wait_phase(workspace, {"finished"}, tend=True)

    replay(
        fetch_history(steward, launched["workflow_id"]),
        record_as="eval_run_ramp_v1_pause_tend_resume",
    )
