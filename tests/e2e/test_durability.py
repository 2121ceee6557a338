"""The run survives kill -9 of everything around it: the Steward worker, a task worker and
the Temporal server. No completed sample is lost or needlessly re-run."""

from __future__ import annotations

import os
import signal

from inspect_ai.log import read_eval_log_sample_summaries

from harness.helpers import (
    assert_each_sample_once,
    make_workspace,
    pid_alive,
    tasks_by_name,
    wait_for,
)

SLOW = "STEWARD_OFFLINE_DELAY=0.6\n"


def _progress(steward, workspace) -> int:
    return steward.state(workspace)["samples_done"]


def test_kill_steward_worker_mid_run(steward, workspace_root):
    workspace = make_workspace(
        steward,
        workspace_root,
        {"one": 40, "two": 40},  # long enough to outlive the kill under load
        options="samples_ramp: [2, 2]\n",
        dotenv=SLOW,
    )
    steward.ok("launch", cwd=workspace)
    wait_for(lambda: _progress(steward, workspace) >= 4, what="some progress")
    task_pids = [w["pid"] for w in steward.status(workspace)["state"]["workers"].values()]

    worker_pid = steward.service_pid("worker")
    os.kill(worker_pid, signal.SIGKILL)
    wait_for(lambda: not pid_alive(worker_pid), what="the Steward worker to die")
    # The task workers are detached: they keep going without the Steward worker.
    assert all(pid_alive(pid) for pid in task_pids)

    steward.ok("worker", "start")
    status = steward.wait_phase(workspace, {"finished"})
    # Re-adopted, not respawned: each task ran in exactly one worker.
    assert [t["attempts"] for t in status["state"]["tasks"]] == [1, 1]
    assert_each_sample_once(workspace, {"one": 40, "two": 40})


def test_killed_task_worker_is_respawned_by_its_watch(steward, workspace_root):
    workspace = make_workspace(
        steward,
        workspace_root,
        {"victim": 150, "bystander": 8},
        options="samples_ramp: [4, 4]\ntend_interval: 1h\n",
        dotenv=SLOW,
    )
    steward.ok("launch", cwd=workspace)

    def victim():
        return steward.task(workspace, "victim")

    # Wait until the log holds flushed samples (Inspect flushes every 10), so resume has work to reuse.
    wait_for(
        lambda: steward.ok("tend", cwd=workspace) and victim()["progress"]["completed"] >= 12,
        timeout=120,
        interval=1,
        what="victim progress",
    )
    state = steward.status(workspace)["state"]
    pid = state["workers"][victim()["worker_id"]]["pid"]
    os.kill(pid, signal.SIGKILL)
    wait_for(lambda: not pid_alive(pid), what="the task worker to die")
    killed_log = victim()["log"]
    logged_before = {s.uuid for s in read_eval_log_sample_summaries(killed_log) if not s.error}
    assert len(logged_before) >= 10

    # Its watch saw it die: the run respawned it without a tend command (the timer is 1h away).
    wait_for(lambda: victim()["attempts"] == 2, timeout=60, what="the respawn")
    status = steward.wait_phase(workspace, {"finished"})
    assert {t["spec"]["name"]: t["attempts"] for t in status["state"]["tasks"]} == {
        "victim": 2,
        "bystander": 1,
    }
    assert_each_sample_once(workspace, {"victim": 150, "bystander": 8})
    # Resume reused what the killed worker had logged: those samples keep their uuids (a re-run
    # sample would get a new one), and the killed worker's log was tidied away.
    final = next((workspace / "logs").glob("*victim*.eval"))
    assert str(final) != killed_log
    assert logged_before <= {s.uuid for s in read_eval_log_sample_summaries(str(final))}
    journal = (workspace / "journal.jsonl").read_text()
    assert journal.count('"event": "spawned"') == 3
    # The sample in flight at the kill is not a sample error (Inspect's recovery wrote it into
    # the killed log as cancelled; the resumed worker completed it): no class, nothing to rule
    # on, and signoff goes through once the scan has read the final logs.
    (recovered,) = (workspace / "logs-archive").glob("*victim*-recovered.eval")
    in_flight = [s for s in read_eval_log_sample_summaries(str(recovered)) if s.error]
    assert in_flight and all("CancelledError" in s.error for s in in_flight)
    assert steward.ok("collect", "--since", "0", cwd=workspace)["decisions"] == []
    assert '"event": "error class"' not in journal
    assert steward.ok("signoff", "--by", "norah", cwd=workspace)["by"] == "norah"
    assert logged_before <= {s.uuid for s in read_eval_log_sample_summaries(str(final))}


def test_restart_temporal_server_mid_run(steward, workspace_root):
    workspace = make_workspace(
        steward, workspace_root, {"steady": 20}, options="samples_ramp: [2, 2]\n", dotenv=SLOW
    )
    launched = steward.ok("launch", cwd=workspace)
    wait_for(lambda: _progress(steward, workspace) >= 2, what="some progress")

    server_pid = steward.service_pid("temporal")
    os.kill(server_pid, signal.SIGKILL)  # with its SQLite file left as it was
    wait_for(lambda: not pid_alive(server_pid), what="the server to die")
    steward.ok("server", "start")

    status = steward.wait_phase(workspace, {"finished"})
    assert status["workflow_id"] == launched["workflow_id"]
    assert status["state"]["tasks"][0]["attempts"] == 1
    assert_each_sample_once(workspace, {"steady": 20})


def test_task_that_crashes_every_time_is_reported_stalled(steward, workspace_root):
    workspace = make_workspace(
        steward,
        workspace_root,
        {"healthy": 4, "doomed": 4},
        crash={"doomed"},
        options="stall_after: 1\ntend_interval: 1h\n",
        dotenv="STEWARD_OFFLINE_CRASH=CRASH\n",
    )
    steward.ok("launch", cwd=workspace)
    status = steward.wait_phase(workspace, {"stalled"}, tend=True)
    tasks = tasks_by_name(status)
    assert tasks["healthy"]["phase"] == "complete"
    assert tasks["doomed"]["phase"] == "stalled"
    assert tasks["doomed"]["attempts"] == 2  # the first spawn and stall_after=1 respawn
    assert "doomed" in (workspace / "status.md").read_text().split("Needs you")[1]
    assert '"event": "task stalled"' in (workspace / "journal.jsonl").read_text()
    steward.ok("cancel", cwd=workspace)
