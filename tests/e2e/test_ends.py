"""Issue 28 item 4: ends read as ends. A cancelled run's `status` says its reason and shows no
task pending nor samples in flight (people, --json and status.md); after `runs delete` the run
is gone from `runs` and `status` on the very next call (Temporal deletes ~30 s later: the CLI
reads past its own tombstones); and read-only commands say there is nothing without starting
the embedded server and worker."""

from __future__ import annotations

from harness.helpers import make_workspace, private_steward


def test_a_cancelled_run_says_why_and_a_deleted_one_is_gone_at_once(steward, workspace_root):
    workspace = make_workspace(
        steward,
        workspace_root,
        {"slow": 40},
        tend_interval="1h",
        options="samples_ramp: [2, 2]\nheartbeat: false\n",
        dotenv="STEWARD_OFFLINE_DELAY=1\n",
    )
    workflow_id = steward.ok("launch", cwd=workspace)["workflow_id"]
    cancelled = steward("cancel", "--reason", "wrong model picked", cwd=workspace)
    assert cancelled.code == 0, cancelled.stdout + cancelled.stderr
    assert "Run cancelled: wrong model picked (" in cancelled.stdout

    shown = steward("status", cwd=workspace, env={"COLUMNS": "120"})
    assert shown.code == 0, shown.stderr
    assert "cancelled: wrong model picked" in shown.stdout
    assert "pending" not in shown.stdout and "next " not in shown.stdout
    view = steward.status(workspace)
    assert view["cancel_reason"] == "wrong model picked"
    assert [t["state"] for t in view["tasks"]] == ["cancelled"]
    assert view["tasks"][0]["in_flight"] == 0 and view["next_tend_at"] is None
    page = (workspace / "status.md").read_text()
    assert "- Cancelled: wrong model picked" in page and "| pending |" not in page
    assert "- Next tend: none: the run has ended" in page

    assert steward.ok("runs", "delete", str(workspace))["deleted"] == workflow_id
    # The very next calls: Temporal itself still lists and describes it for ~30 s.
    listed = {r["workflow_id"] for r in steward.ok("runs")["runs"]}
    assert workflow_id not in listed
    gone = steward("status", cwd=workspace)
    assert gone.code == 2 and "was deleted from the list" in gone.stderr, gone.stderr
    again = steward("runs", "delete", workflow_id)
    assert again.code == 2 and f"No run {workflow_id} is known" in again.stderr

    # A new launch from the workspace is a new run (same workflow id, new run id): shown.
    relaunched = steward.ok("launch", cwd=workspace)
    assert relaunched["workflow_id"] == workflow_id
    assert workflow_id in {r["workflow_id"] for r in steward.ok("runs")["runs"]}
    assert steward.status(workspace)["phase"] == "running"
    steward.ok("cancel", cwd=workspace)


def test_read_only_commands_start_nothing_to_say_there_is_nothing(steward, tmp_path):
    private = private_steward(steward, tmp_path)
    workspace = tmp_path / "fresh"
    private.ok("init", str(workspace))
    status = private("status", cwd=workspace)
    assert status.code == 2 and "No run has been launched from" in status.stderr
    assert private.ok("runs")["runs"] == [] and private.ok("hosts")["hosts"] == []
    for name in ("temporal", "worker"):
        assert not (private.data_dir() / f"{name}.pid").exists(), f"{name} was started"
    assert not (private.data_dir() / "temporal.db").exists()
