"""A run from `steward init` to finished, and the commands that steer it (real Temporal,
real Inspect workers, real processes)."""

from __future__ import annotations

import json
import os
import signal

from harness.helpers import (
    assert_each_sample_once,
    make_workspace,
    pid_alive,
    read_journal,
    read_logs,
    tasks_by_name,
    wait_for,
)


def test_init_launch_finished_three_tasks(steward, workspace_root):
    workspace = make_workspace(steward, workspace_root, {"alpha": 6, "beta": 5, "gamma": 4})
    launched = steward.ok("launch", cwd=workspace)
    assert launched["state"]["phase"] == "running"
    assert [t["spec"]["name"] for t in launched["state"]["tasks"]] == ["alpha", "beta", "gamma"]
    assert launched["web_ui"].startswith("http://127.0.0.1:")

    status = steward.wait_phase(workspace, {"finished"})
    assert status["state"]["samples_done"] == 15
    assert all(t["phase"] == "complete" and t["attempts"] == 1 for t in status["state"]["tasks"])

    logs = sorted((workspace / "logs").glob("*.eval"))
    assert len(logs) == 3
    samples = read_logs(workspace / "logs")
    assert {task: sorted(ids) for task, ids in samples.items()} == {
        "alpha": [(i, 1) for i in range(1, 7)],
        "beta": [(i, 1) for i in range(1, 6)],
        "gamma": [(i, 1) for i in range(1, 5)],
    }

    # The run writes status.md as its tend publishes, a moment after a query can see the phase.
    wait_for(
        lambda: (workspace / "status.md").read_text().startswith("# Run status: finished"),
        timeout=30,
        what="status.md to say finished",
    )
    journal = read_journal(workspace)
    assert [e["seq"] for e in journal] == list(range(1, len(journal) + 1))
    events = [e["event"] for e in journal]
    assert events[0] == "launched" and "finished" in events
    assert events.count("spawned") == 3

    def listed() -> list[dict]:  # Temporal's visibility store follows a moment behind
        runs = steward.ok("runs")["runs"]
        mine = [r for r in runs if r["workflow_id"] == status["workflow_id"]]
        return mine if mine and mine[0]["state"] == "finished" else []

    [mine] = wait_for(listed, timeout=30, what="the run listed as finished")
    assert mine["samples_done"] == 15
    assert mine["workspace"] == str(workspace)


def test_pause_stops_spawns_and_resume_restarts_them(steward, workspace_root):
    workspace = make_workspace(
        steward,
        workspace_root,
        {"first": 12, "second": 40},  # second runs ~14 s: still running when it is killed
        options="samples_ramp: [2, 2]\ntend_interval: 1h\n",
        dotenv="STEWARD_OFFLINE_DELAY=0.7\n",
    )
    steward.ok("launch", cwd=workspace)
    steward.ok("pause", "--reason", "provider maintenance", cwd=workspace)
    status = steward.status(workspace)
    assert status["state"]["paused"] is True
    assert status["state"]["pause_reason"] == "provider maintenance"
    workers = {w["tasks"][0]: w for w in status["state"]["workers"].values()}
    second_id = next(
        t["spec"]["identifier"] for t in status["state"]["tasks"] if t["spec"]["name"] == "second"
    )

    # A worker that dies while paused is not replaced...
    os.kill(workers[second_id]["pid"], signal.SIGKILL)
    summary = steward.ok("tend", cwd=workspace)
    assert summary["paused"] is True and summary["spawned"] == []
    tasks = tasks_by_name(steward.status(workspace))
    assert tasks["second"]["phase"] == "pending" and tasks["second"]["attempts"] == 1
    assert "Paused" in (workspace / "status.md").read_text()
    # ...while the running worker finishes its task.
    wait_for(
        lambda: (
            steward.ok("tend", cwd=workspace)["completed"] == ["first"]
            or steward.task(workspace, "first")["phase"] == "complete"
        ),
        timeout=120,
        interval=1,
        what="the first task to finish while paused",
    )
    assert steward.status(workspace)["state"]["phase"] == "running"

    # Resuming wakes the run: it respawns the task at once, without waiting for a timer.
    steward.ok("resume", cwd=workspace)
    wait_for(
        lambda: steward.task(workspace, "second")["attempts"] == 2,
        what="the second task to be respawned after resume",
    )
    status = steward.wait_phase(workspace, {"finished"}, tend=True)
    assert {t["spec"]["name"]: t["attempts"] for t in status["state"]["tasks"]} == {
        "first": 1,
        "second": 2,
    }
    assert_each_sample_once(
        workspace,
        {
            "first": 12,
            "second": 40,
        },
    )


def test_cancel_ends_cancelled_and_leaves_no_live_process(steward, workspace_root):
    workspace = make_workspace(
        steward,
        workspace_root,
        {"slow_a": 30, "slow_b": 30},
        options="samples_ramp: [1, 1]\n",
        dotenv="STEWARD_OFFLINE_DELAY=2\n",
    )
    steward.ok("launch", cwd=workspace)
    state = wait_for(
        lambda: (s := steward.state(workspace)) and len(s["workers"]) == 2 and s,
        what="two workers",
    )
    pids = [w["pid"] for w in state["workers"].values()]
    assert all(pid_alive(pid) for pid in pids)

    cancelled = steward.ok("cancel", "--reason", "wrong model", cwd=workspace)
    assert cancelled["state"]["phase"] == "cancelled"
    assert cancelled["state"]["cancel_reason"] == "wrong model"
    assert not any(pid_alive(pid) for pid in pids)

    again = steward.status(workspace)
    assert again["state"]["phase"] == "cancelled"
    runs = {r["workflow_id"]: r for r in steward.ok("runs")["runs"]}
    assert runs[again["workflow_id"]]["state"] == "cancelled"
    # A cancelled run takes no more commands, with one clear sentence.
    refused = steward("tend", cwd=workspace)
    assert refused.code == 2 and "already cancelled" in refused.stderr


def test_max_workers_packs_tasks_into_fewer_processes(steward, workspace_root):
    workspace = make_workspace(
        steward, workspace_root, {"p": 3, "q": 3, "r": 3}, options="max_workers: 1\n"
    )
    launched = steward.ok("launch", cwd=workspace)
    (worker,) = launched["state"]["workers"].values()
    assert len(worker["tasks"]) == 3
    selection = json.loads(
        (workspace / ".steward" / "workers" / f"{worker['worker_id']}.selection.json").read_text()
    )
    # Tasks start at the ramp's floor (50) or their own size when smaller: 3 here.
    assert len(selection["tasks"]) == 3 and selection["overrides"]["max_samples"] == 3
    status = steward.wait_phase(workspace, {"finished"})
    assert all(t["attempts"] == 1 for t in status["state"]["tasks"])
    assert_each_sample_once(
        workspace,
        {
            "p": 3,
            "q": 3,
            "r": 3,
        },
    )


def test_cancel_through_temporal_stops_workers_too(steward, workspace_root):
    """A cancel from the web UI (Temporal's own cancellation) is as orderly as `steward cancel`."""
    import asyncio

    from temporalio.client import Client

    workspace = make_workspace(
        steward,
        workspace_root,
        {"slow": 30},
        options="samples_ramp: [1, 1]\n",
        dotenv="STEWARD_OFFLINE_DELAY=2\n",
    )
    launched = steward.ok("launch", "--by", "norah", cwd=workspace)
    (pid,) = [w["pid"] for w in launched["state"]["workers"].values()]

    async def cancel() -> None:
        client = await Client.connect(f"127.0.0.1:{steward.env['STEWARD_TEMPORAL_PORT']}")
        await client.get_workflow_handle(launched["workflow_id"]).cancel()

    asyncio.run(cancel())
    status = steward.wait_phase(workspace, {"cancelled"})
    assert status["state"]["cancel_reason"] == "cancelled through Temporal"
    assert not pid_alive(pid)
    # The journal's last write lands just after the state says cancelled.
    wait_for(lambda: read_journal(workspace)[-1]["event"] == "cancelled", what="the last write")
    journal = read_journal(workspace)
    assert journal[0]["by"] == "norah"
