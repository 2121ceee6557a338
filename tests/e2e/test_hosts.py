"""Many hosts, for real on one machine: a second Steward worker with its own STEWARD_HOST_ID
and data directory on the session's dev server is a second host. A run with `hosts: any` and
a shared log directory places its tasks across both; kill -9 of the second host's Steward
worker and task workers moves their tasks to the first, which resumes them from their logs;
the second host coming back adopts and writes nothing of the run's."""

from __future__ import annotations

import os
import shutil
import signal
import tempfile
import time
from pathlib import Path

import psutil
import pytest
from inspect_ai.log import read_eval_log_sample_summaries

from harness.helpers import (
    Steward,
    assert_each_sample_once,
    make_workspace,
    pid_alive,
    read_journal,
    reap_leftovers,
    wait_for,
)
from harness.receiver import Receiver
from steward.activities.processes.control_socket import socket_path

TASKS = {"t1": 60, "t2": 60, "t3": 60, "t4": 60}
OPTIONS = "samples_ramp: [2, 2]\nshared_storage: true\nhosts: any\nhost_timeout: 20s\n"
SLOW = "STEWARD_OFFLINE_DELAY=0.6\n"


@pytest.fixture
def second_host(steward: Steward):
    """Host "second": its own Steward worker on the session's server."""
    data_dir = Path(tempfile.mkdtemp(prefix="steward-test-second-"))
    host = Steward({**steward.env, "STEWARD_DATA_DIR": str(data_dir), "STEWARD_HOST_ID": "second"})
    host.ok("worker", "start")
    yield host
    host("worker", "stop")
    reap_leftovers(data_dir)  # what it left running
    shutil.rmtree(data_dir, ignore_errors=True)


@pytest.fixture
def receiver():
    with Receiver() as listening:
        yield listening


def _task_workers_of(host: Steward) -> list[int]:
    """Live task workers the host started: its processes with an Inspect control socket."""
    found = []
    for process in psutil.process_iter(["pid", "environ"]):
        try:
            env = process.info["environ"] or {}
        except psutil.Error:
            continue
        mine = env.get("STEWARD_DATA_DIR") == host.env["STEWARD_DATA_DIR"]
        if mine and Path(socket_path(process.pid)).exists():
            found.append(process.pid)
    return found


def _hosts(steward: Steward) -> dict[str, dict]:
    return {h["host_id"]: h for h in steward.ok("hosts")["hosts"]}


def _workers_on(steward: Steward, workspace: Path, host: str) -> list[dict]:
    workers = steward.state(workspace)["workers"].values()
    return [w for w in workers if w.get("host", "") == host]


def _done(steward: Steward, workspace: Path, names: set[str]) -> int:
    tasks = steward.state(workspace)["tasks"]
    return min(t["progress"]["completed"] for t in tasks if t["spec"]["identifier"] in names)


def test_a_run_spreads_over_two_hosts_and_survives_losing_one(
    steward, second_host, workspace_root, receiver
):
    wait_for(
        lambda: _hosts(steward).get("second", {}).get("state") == "live",
        what="the second host in `steward hosts`",
        describe=lambda: _hosts(steward),
    )
    workspace = make_workspace(
        steward,
        workspace_root,
        TASKS,
        options=OPTIONS + "heartbeat: false\n",
        dotenv=SLOW + f"STEWARD_NOTIFICATION={receiver.url}\n",
    )
    steward.ok("launch", cwd=workspace)

    # Placed across both hosts, and shown so in `hosts` and `status`.
    remote = wait_for(
        lambda: _workers_on(steward, workspace, "second"),
        what="a task worker on the second host",
        describe=lambda: steward.state(workspace)["workers"],
    )
    assert _workers_on(steward, workspace, ""), "every task went to the second host"
    assert _hosts(steward)["second"]["task_workers"] == len(remote)
    moved = {i for w in remote for i in w["tasks"]}
    wait_for(lambda: _task_workers_of(second_host), what="the second host's task worker")
    shown = steward("status", cwd=workspace).stdout
    assert "on second" in shown and f"{len(remote)} worker(s) on second" in shown

    # Some of the second host's samples are done (and logged) before it goes.
    wait_for(lambda: _done(steward, workspace, moved) >= 6, what="progress on the second host")
    before = {
        t["spec"]["identifier"]: {
            s.uuid: (s.id, s.epoch) for s in read_eval_log_sample_summaries(t["log"]) if not s.error
        }
        for t in steward.state(workspace)["tasks"]
        if t["spec"]["identifier"] in moved and t["log"]
    }
    host_worker = second_host.service_pid("worker")
    os.kill(host_worker, signal.SIGKILL)
    for worker in remote:
        os.killpg(worker["pid"], signal.SIGKILL)
    wait_for(
        lambda: not pid_alive(host_worker) and not any(pid_alive(w["pid"]) for w in remote),
        what="the second host's processes to die",
    )

    status = steward.wait_phase(workspace, {"finished"}, timeout=300)
    journal = read_journal(workspace)
    [lost] = [e for e in journal if e["event"] == "host lost"]
    assert lost["host"] == "second" and set(lost["workers"]) == {w["worker_id"] for w in remote}
    respawned = [
        e for e in journal if e["event"] == "spawned" and set(e["tasks"]) & set(lost["tasks"])
    ]
    assert respawned and all("host" not in e for e in respawned[-len(lost["tasks"]) :])
    assert all(t["phase"] == "complete" for t in status["state"]["tasks"])
    wait_for(lambda: "Host second has been silent" in receiver.text(), what="the operator told")
    assert "a host was lost" in " ".join(receiver.titles())

    # Every (id, epoch) once; what the second host completed kept its uuid (not run again).
    assert_each_sample_once(workspace, TASKS)
    for task in status["state"]["tasks"]:
        identifier = task["spec"]["identifier"]
        if identifier in before:
            after = {s.uuid: (s.id, s.epoch) for s in read_eval_log_sample_summaries(task["log"])}
            assert before[identifier].items() <= after.items()

    # The second host comes back: it adopts nothing and writes none of the run's logs.
    written = {p: p.stat().st_mtime_ns for p in (workspace / "logs").glob("*.eval")}
    second_host.ok("worker", "start")
    wait_for(lambda: _hosts(steward)["second"]["state"] == "live", what="the host back")
    time.sleep(5)
    assert {p: p.stat().st_mtime_ns for p in (workspace / "logs").glob("*.eval")} == written
    assert not _task_workers_of(second_host)
    assert steward.ok("signoff", "--by", "norah", cwd=workspace)["by"] == "norah"
