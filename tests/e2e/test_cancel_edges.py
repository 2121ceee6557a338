"""`cancel` always works, and counts what the run did: with `_steward.yaml` broken it still finds
and cancels the run (saying why the options could not be read), and the cancelled run's count
holds every sample its logs completed, not the count of its last tend."""

from __future__ import annotations

from pathlib import Path

from harness.helpers import fetch_history, make_workspace, replay, wait_for


def _in_logs(log_dir: Path) -> tuple[int, int]:
    """(completed, errored) samples over the .eval logs, read as Inspect reads them."""
    from inspect_ai.log import read_eval_log_sample_summaries

    completed = errored = 0
    for path in log_dir.glob("*.eval"):
        summaries = read_eval_log_sample_summaries(str(path))
        errored += sum(1 for s in summaries if s.error)
        completed += sum(1 for s in summaries if not s.error)
    return completed, errored


def test_cancel_with_broken_options_counts_every_completed_sample(steward, workspace_root):
    workspace = make_workspace(
        steward,
        workspace_root,
        {"slow": 400},
        # The launch's tend is the run's only one: its count says 0 samples until the end.
        tend_interval="1h",
        options="samples_ramp: [2, 2]\nheartbeat: false\n",
        dotenv="STEWARD_OFFLINE_DELAY=0.2\n",
    )
    launched = steward.ok("launch", cwd=workspace)
    log_dir = Path(launched["state"]["log_dir"])
    wait_for(
        lambda: _in_logs(log_dir)[0] >= 12,
        timeout=240,
        interval=1,
        what="samples completed in the log",
    )
    # The run's own count is its last tend's (status shows live progress from heartbeats,
    # which never enter the state): what a cancel ended with before it read the logs.
    assert steward.state(workspace)["samples_done"] < _in_logs(log_dir)[0]
    options = workspace / "_steward.yaml"
    kept = options.read_text()
    options.write_text("tend_interval: [\n")  # not YAML: every other command refuses

    cancelled = steward("cancel", "--json", cwd=workspace)
    assert cancelled.code == 0, cancelled.stdout + cancelled.stderr
    assert cancelled.json["state"]["phase"] == "cancelled"
    assert "not valid YAML" in cancelled.json["options_problem"]
    refused = steward("status", cwd=workspace)
    assert refused.code == 2 and "not valid YAML" in refused.stderr

    options.write_text(kept)
    state = steward.status(workspace)["state"]
    completed, errored = _in_logs(log_dir)
    assert state["phase"] == "cancelled" and completed >= 12
    assert state["tasks"][0]["progress"]["completed"] == completed
    assert state["samples_done"] == completed + errored
    assert f"Progress: {completed + errored} / 400 samples" in (workspace / "status.md").read_text()
    replay(fetch_history(steward, cancelled.json["workflow_id"]))  # the cancel's new read replays
