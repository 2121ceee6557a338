"""Every task worker is watched: a run reacts to exits, hangs and lingering workers by itself,
with the tend timer an hour away and no `steward tend` — kill -9 of a worker (respawned from its
log), a worker hung before eval_set() (a decision; `restart` respawns it), one whose event loop
is blocked (a decision; `wait` lets it recover), one lingering after its success log (stopped;
a ruling waiting for it is applied as it exits, and named while it waits), and signoff that
never leaves a worker behind. Status shows live progress from the watches' heartbeats."""

from __future__ import annotations

import os
import signal
from pathlib import Path

from harness.helpers import (
    assert_each_sample_once,
    fetch_history,
    make_workspace,
    pid_alive,
    read_journal,
    replay,
    wait_for,
)

# Files in the workspace that hold a task worker (and only a task worker: capture does not
# set STEWARD_WORKER) at one point: before eval_set() runs, inside a sample with the event loop
# blocked, and after eval_set() returned.
DEFINITION = """import asyncio
import os
import time
from pathlib import Path

from inspect_ai import Task, eval_set, task
from inspect_ai.dataset import Sample
from inspect_ai.scorer import match
from inspect_ai.solver import solver

WORKER = os.environ.get("STEWARD_WORKER") == "1"
HERE = Path(__file__).parent


def hold(name):
    while WORKER and (HERE / name).exists():
        time.sleep(0.2)  # blocking on purpose: no event loop turns meanwhile


hold("hang-before")


@solver
def careful():
    async def solve(state, generate):
        if "BLOCK" in state.input_text:
            await asyncio.sleep(3)  # the control socket and the log show life first
            hold("block-loop")
        return await generate(state)

    return solve


@task
def steady():
    return Task(
        dataset=[
            Sample(id=i, input=f"Reply with: s-{{i}}{{' BLOCK' if i == 1 else ''}}",
                   target=f"s-{{i}}{{' BLOCK' if i == 1 else ''}}")
            for i in range(1, {samples} + 1)
        ],
        solver=careful(),
        scorer=match(),
    )


eval_set(tasks=[steady()], model="steward/offline")
hold("linger")
"""


def _decision(steward, workspace: Path, kind: str) -> dict | None:
    found = steward.ok("collect", "--since", "0", cwd=workspace)["decisions"]
    return next((d for d in found if d["kind"] == kind), None)


def _wait_decision(steward, workspace: Path, kind: str, timeout: float) -> dict:
    return wait_for(
        lambda: _decision(steward, workspace, kind),
        timeout=timeout,
        interval=1.0,
        what=f"a {kind} decision",
    )


def _events(workspace: Path, name: str) -> list[dict]:
    return [e for e in read_journal(workspace) if e["event"] == name]


def test_killed_worker_respawns_by_itself_and_status_is_live(steward, workspace_root):
    workspace = make_workspace(
        steward,
        workspace_root,
        definition_text=DEFINITION.format(samples=40),
        tend_interval="1h",
        options="samples_ramp: [2, 2]\n",
        dotenv="STEWARD_OFFLINE_DELAY=0.6\n",
    )
    launched = steward.ok("launch", cwd=workspace)

    # Progress shows in status from the watch's heartbeats, newer than the run's last tend.
    status = wait_for(
        lambda: (found := steward.status(workspace))["state"]["samples_done"] >= 3 and found,
        timeout=120,
        interval=1.0,
        what="live progress",
    )
    [pulse] = status["live"]
    [identifier] = pulse["progress"]
    assert status["progress_at"][identifier] == pulse["at"] > status["state"]["last_tend_at"]
    assert status["state"]["tasks"][0]["progress"] == {
        **pulse["progress"][identifier],
        "total": 40,
    }

    [worker] = status["state"]["workers"].values()
    os.kill(worker["pid"], signal.SIGKILL)
    wait_for(
        lambda: any(
            w["pid"] != worker["pid"] for w in steward.state(workspace)["workers"].values()
        ),
        timeout=60,
        what="a respawn without any command",
    )
    status = steward.wait_phase(workspace, {"finished"})
    assert status["state"]["tasks"][0]["attempts"] == 2
    assert_each_sample_once(workspace, {"steady": 40})
    exited = [e for e in _events(workspace, "worker exited") if e["worker"] == worker["worker_id"]]
    assert exited and "SIGKILL" in exited[0]["how"], exited
    assert not any(e["event"] == "tend" and e.get("by") for e in read_journal(workspace))

    history = fetch_history(steward, launched["workflow_id"], status["run_id"])
    replay(history, record_as="eval_run_watch_v1_kill_respawn")
    steward.ok("signoff", "--by", "tester", cwd=workspace)


def test_worker_hung_before_eval_set_is_a_decision_and_restart_respawns_it(steward, workspace_root):
    workspace = make_workspace(
        steward,
        workspace_root,
        definition_text=DEFINITION.format(samples=6),
        tend_interval="1h",
        options="start_timeout: 3s\n",
        holds=["hang-before"],
    )
    steward.ok("launch", cwd=workspace)
    decision = _wait_decision(steward, workspace, "hung_worker", timeout=90)
    assert decision["owner"] == "operator" and decision["verdicts"] == ["restart", "wait"]
    assert "no log and no control socket 3s after spawn" in decision["question"]
    [hung] = steward.state(workspace)["workers"].values()

    # The next worker gets a start timeout it can meet (re-read live). The hold goes only once
    # the hung worker is gone: released earlier, it could finish its task before the restart.
    with open(workspace / "_steward.yaml", "a") as handle:
        handle.write("start_timeout: 10m\n")
    steward.ok("rule", decision["id"], "restart", "--by", "operator", cwd=workspace)
    wait_for(lambda: not pid_alive(hung["pid"]), timeout=60, what="the hung worker stopped")
    (workspace / "hang-before").unlink()

    status = steward.wait_phase(workspace, {"finished"})
    assert not pid_alive(hung["pid"])
    assert status["state"]["tasks"][0]["attempts"] == 2
    assert_each_sample_once(workspace, {"steady": 6})
    stopped = _events(workspace, "worker stopped")
    assert [e["reason"] for e in stopped] == ["restart ruled on a hung worker"]
    assert _events(workspace, "watch limits changed")


def test_blocked_event_loop_is_a_decision_wait_lets_it_recover_and_lingering_is_stopped(
    steward, workspace_root
):
    workspace = make_workspace(
        steward,
        workspace_root,
        definition_text=DEFINITION.format(samples=6),
        tend_interval="1h",
        options="unresponsive_after: 4s\nlinger_after: 5s\n",
        holds=["block-loop", "linger"],
    )
    steward.ok("launch", cwd=workspace)
    decision = _wait_decision(steward, workspace, "hung_worker", timeout=90)
    assert "no control-socket answer and no log write" in decision["question"]
    # Ruled while it still hangs: unblocked first, the run closes the decision by itself once
    # the worker answers again (tests/e2e/test_hang_recovers.py). A second 4 s hang a loaded
    # machine may see after the unblock is asked again, and closes itself the same way.
    steward.ok("rule", decision["id"], "wait", "--by", "operator", cwd=workspace)
    (workspace / "block-loop").unlink()

    status = steward.wait_phase(workspace, {"finished"})
    assert status["state"]["tasks"][0]["attempts"] == 1  # the same worker finished
    assert_each_sample_once(workspace, {"steady": 6})

    # After eval_set() returned it stays (the "linger" hold): linger_after later it is stopped.
    [stopped] = wait_for(
        lambda: _events(workspace, "worker stopped"), timeout=60, what="the lingering stop"
    )
    assert stopped["reason"].startswith("lingering: ") and "5s after" in stopped["reason"]
    steward.ok("signoff", "--by", "tester", cwd=workspace)


def test_ruling_waits_for_a_live_worker_and_is_applied_as_it_exits(steward, workspace_root):
    workspace = make_workspace(
        steward,
        workspace_root,
        definition_text=DEFINITION.format(samples=6),
        tend_interval="1h",
        options="linger_after: 10m\n",
        dotenv="STEWARD_OFFLINE_FAIL=s-2\n",
        holds=["linger"],
    )
    steward.ok("launch", cwd=workspace)
    status = steward.wait_phase(workspace, {"finished"})
    [worker] = status["state"]["workers"].values()  # its log is success; it has not exited
    decision = _wait_decision(steward, workspace, "sample_error", timeout=30)
    steward.ok("rule", decision["id"], "exclude", "--by", "operator", cwd=workspace)

    refused = steward("signoff", "--by", "tester", cwd=workspace)
    assert refused.code == 2
    assert f"waiting for worker {worker['worker_id']} of steady (pid {worker['pid']}" in (
        refused.stderr
    )
    assert f"worker {worker['worker_id']} of steady" in steward("status", cwd=workspace).stdout

    # The worker exits by itself; its watch wakes the run, which carries the ruling out.
    (workspace / "linger").unlink()
    wait_for(lambda: _events(workspace, "ruling applied"), timeout=60, what="the ruling applied")
    assert not pid_alive(worker["pid"])
    assert not _events(workspace, "worker stopped")
    steward.ok("signoff", "--by", "tester", cwd=workspace)


def test_signoff_stops_a_worker_lingering_after_its_success_log(steward, workspace_root):
    workspace = make_workspace(
        steward,
        workspace_root,
        definition_text=DEFINITION.format(samples=2),
        tend_interval="1h",
        holds=["linger"],
    )
    steward.ok("launch", cwd=workspace)
    status = steward.wait_phase(workspace, {"finished"})
    [worker] = status["state"]["workers"].values()
    # Signed off at once: the signoff waits for the integrity scan the finish started.
    steward.ok("signoff", "--by", "tester", cwd=workspace)
    assert not pid_alive(worker["pid"])
    [stopped] = _events(workspace, "worker stopped")
    assert stopped["reason"] == "signoff" and stopped["worker"] == worker["worker_id"]
