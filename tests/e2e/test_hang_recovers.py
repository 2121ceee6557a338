"""Hang and stuck decisions follow the facts: a hung worker that recovers by itself closes its
`hung_worker` decision (a journal line says why) and the run signs off without anyone ruling on
it; a hung worker that is killed closes its decision too, and the hang of the worker its task
respawned in is a new question naming that worker and its pid; a stuck sample that completes
closes its `stuck_sample` decision."""

from __future__ import annotations

import os
import signal
from pathlib import Path

from harness.helpers import (
    assert_each_sample_once,
    make_workspace,
    pid_alive,
    read_journal,
    wait_for,
)

# Sample 1 blocks its worker's event loop (no control-socket answer, no log write) while the
# "block-loop" file exists: a hang that ends when the test removes it. Capture does not set
# STEWARD_WORKER, so only task workers hold.
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


@solver
def careful():
    async def solve(state, generate):
        if "BLOCK" in state.input_text:
            await asyncio.sleep(3)  # the control socket and the log show life first
            while WORKER and (HERE / "block-loop").exists():
                time.sleep(0.2)  # blocking on purpose: no event loop turns meanwhile
            # Recovered, it lives on (answering) while "linger" exists: its watch sees it
            # answer again before it finishes and exits (which would close it as gone).
            while WORKER and (HERE / "linger").exists():
                await asyncio.sleep(0.2)
        return await generate(state)

    return solve


@task
def steady():
    return Task(
        dataset=[
            Sample(id=i, input=f"Reply with: s-{i}{' BLOCK' if i == 1 else ''}",
                   target=f"s-{i}{' BLOCK' if i == 1 else ''}")
            for i in range(1, 7)
        ],
        solver=careful(),
        scorer=match(),
    )


eval_set(tasks=[steady()], model="steward/offline")
"""


def _hung_workspace(steward, root: Path) -> Path:
    return make_workspace(
        steward,
        root,
        definition_text=DEFINITION,
        tend_interval="1h",  # the watches wake the run: no timer tend, no `steward tend`
        options="unresponsive_after: 4s\n",
        holds=["block-loop", "linger"],
    )


def _open_hang(steward, workspace: Path, exclude: set[str] = frozenset()) -> dict:
    def found() -> dict | None:
        decisions = steward.ok("collect", "--since", "0", cwd=workspace)["decisions"]
        return next(
            (d for d in decisions if d["kind"] == "hung_worker" and d["id"] not in exclude), None
        )

    return wait_for(found, timeout=120, interval=1.0, what="a hung_worker decision")


def _closed(workspace: Path, decision_id: str) -> dict | None:
    return next(
        (
            e
            for e in read_journal(workspace)
            if e["event"] == "decision closed" and e["decision"] == decision_id
        ),
        None,
    )


def _wait_closed(workspace: Path, decision_id: str) -> dict:
    return wait_for(
        lambda: _closed(workspace, decision_id),
        timeout=90,
        interval=1.0,
        what=f"{decision_id} closed by the run",
    )


def test_a_hung_worker_that_recovers_closes_its_decision_and_the_run_signs_off(
    steward, workspace_root
):
    workspace = _hung_workspace(steward, workspace_root)
    steward.ok("launch", cwd=workspace)
    decision = _open_hang(steward, workspace)
    [worker] = steward.state(workspace)["workers"].values()
    assert f"worker {worker['worker_id']} (pid {worker['pid']})" in decision["question"]
    refused = steward("signoff", "--by", "tester", cwd=workspace)
    assert refused.code == 2  # the run is not finished, and the decision is open

    (workspace / "block-loop").unlink()  # it recovers by itself: nobody rules
    closed = _wait_closed(workspace, decision["id"])
    assert closed["reason"] == f"worker {worker['worker_id']} (pid {worker['pid']}) answered again"
    # (its watch's report, or the tend's own look at its control socket, whichever is first)
    open_ids = {d["id"] for d in steward.ok("collect", "--since", "0", cwd=workspace)["decisions"]}
    assert decision["id"] not in open_ids

    late = steward("rule", decision["id"], "wait", "--by", "operator", cwd=workspace)
    assert late.code == 2 and "closed by steward" in late.stderr
    (workspace / "linger").unlink()  # now it may finish

    status = steward.wait_phase(workspace, {"finished"})
    assert status["state"]["tasks"][0]["attempts"] == 1  # the same worker finished
    assert_each_sample_once(workspace, {"steady": 6})
    steward.ok("signoff", "--by", "tester", cwd=workspace)  # not blocked by the hang


def test_a_killed_hung_worker_closes_its_decision_and_the_next_hang_names_the_new_worker(
    steward, workspace_root
):
    workspace = _hung_workspace(steward, workspace_root)
    steward.ok("launch", cwd=workspace)
    first = _open_hang(steward, workspace)
    [hung] = steward.state(workspace)["workers"].values()

    os.kill(hung["pid"], signal.SIGKILL)  # its task respawns; sample 1 blocks the new worker too
    closed = _wait_closed(workspace, first["id"])
    assert closed["reason"].startswith(f"worker {hung['worker_id']} is gone")

    second = _open_hang(steward, workspace, exclude={first["id"]})
    [current] = steward.state(workspace)["workers"].values()
    assert current["worker_id"] != hung["worker_id"] and current["pid"] != hung["pid"]
    question = second["question"]
    assert f"worker {current['worker_id']} (pid {current['pid']})" in question
    assert hung["worker_id"] not in question and str(hung["pid"]) not in question

    (workspace / "block-loop").unlink()
    (workspace / "linger").unlink()
    _wait_closed(workspace, second["id"])
    status = steward.wait_phase(workspace, {"finished"})
    assert not pid_alive(hung["pid"])
    assert status["state"]["tasks"][0]["attempts"] == 2
    assert_each_sample_once(workspace, {"steady": 6})
    steward.ok("signoff", "--by", "tester", cwd=workspace)


def test_a_stuck_sample_that_completes_closes_its_decision(steward, workspace_root):
    hold = workspace_root / "ws" / "hold"  # every generate waits while it exists
    workspace = make_workspace(
        steward,
        workspace_root,
        {"sleepy": 2},
        tend_interval="1h",
        options="stuck_after: 2s\nsamples_ramp: [2, 2]\n",
        dotenv=f"STEWARD_OFFLINE_HOLD={hold}\n",
        holds=["hold"],
    )
    steward.ok("launch", cwd=workspace)

    def stuck() -> dict | None:
        steward("tend", cwd=workspace)  # stuck samples are looked for at a tend
        decisions = steward.ok("collect", "--since", "0", cwd=workspace)["decisions"]
        return next((d for d in decisions if d["kind"] == "stuck_sample"), None)

    decision = wait_for(stuck, timeout=120, interval=1.0, what="a stuck_sample decision")
    hold.unlink()  # the samples go on and complete: nobody rules
    closed = _wait_closed(workspace, decision["id"])
    assert "of sleepy completed" in closed["reason"], closed
    steward.wait_phase(workspace, {"finished"})
    assert_each_sample_once(workspace, {"sleepy": 2})
    steward.ok("signoff", "--by", "tester", cwd=workspace)
