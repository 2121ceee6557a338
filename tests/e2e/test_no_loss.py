"""Nothing lost, nothing silent: an errored sample that its task completes after a kill -9 and
resume heals (its class closes by itself, signoff needs no ruling, no healthy sample is re-run),
and workers that die at once say why in the journal, the decision and status."""

from __future__ import annotations

import os
import signal
from pathlib import Path

from inspect_ai.log import read_eval_log_sample_summaries

from harness.helpers import (
    assert_each_sample_once,
    fetch_history,
    make_workspace,
    pid_alive,
    read_journal,
    replay,
    wait_for,
)

# Sample 5 fails the first time a task worker runs it (a marker file remembers), as a flaky
# dependency would; capture and the smoke do not run as task workers (no STEWARD_WORKER).
FLAKY = """import os
from pathlib import Path

from inspect_ai import Task, eval_set, task
from inspect_ai.dataset import Sample
from inspect_ai.scorer import match
from inspect_ai.solver import solver

HERE = Path(__file__).parent


@solver
def flaky_once():
    async def solve(state, generate):
        marker = HERE / "flaky-seen"
        if os.environ.get("STEWARD_WORKER") == "1" and state.sample_id == 5 and not marker.exists():
            marker.write_text("failed once\\n")
            raise RuntimeError("the flaky dependency timed out")
        return await generate(state)

    return solve


@task
def steady():
    return Task(
        dataset=[Sample(id=i, input=f"Reply with: s-{i}", target=f"s-{i}") for i in range(1, 81)],
        solver=flaky_once(),
        scorer=match(),
    )


eval_set(tasks=[steady()], model="steward/offline")
"""

# Every task worker dies at once, before eval_set(): what it said must reach the operator.
BROKEN = """import json
import os

from inspect_ai import Task, eval_set, task
from inspect_ai.dataset import Sample
from inspect_ai.solver import generate

if os.environ.get("STEWARD_WORKER") == "1":
    json.loads(open("/proc/forbidden/settings.json").read())


@task
def doomed():
    return Task(dataset=[Sample(input="Reply with: x", target="x")], solver=generate())


eval_set(tasks=[doomed()], model="steward/offline")
"""


def _events(workspace: Path, name: str) -> list[dict]:
    return [e for e in read_journal(workspace) if e["event"] == name]


def _decisions(steward, workspace: Path) -> list[dict]:
    return steward.ok("collect", "--since", "0", cwd=workspace)["decisions"]


def test_a_sample_completed_after_kill_and_resume_heals_its_class(steward, workspace_root):
    workspace = make_workspace(
        steward,
        workspace_root,
        definition_text=FLAKY,
        tend_interval="1h",
        options="samples_ramp: [2, 2]\n",
        dotenv="STEWARD_OFFLINE_DELAY=0.5\n",
    )
    launched = steward.ok("launch", cwd=workspace)

    # The flaky sample's error is seen and raised (the run tends when asked, or on events).
    [decision] = wait_for(
        lambda: steward.ok("tend", cwd=workspace) and _decisions(steward, workspace),
        timeout=120,
        interval=1,
        what="the flaky sample's decision",
    )
    assert "RuntimeError" in decision["question"]
    [worker] = steward.state(workspace)["workers"].values()
    killed_log = steward.task(workspace, "steady")["log"]
    os.kill(worker["pid"], signal.SIGKILL)
    wait_for(lambda: not pid_alive(worker["pid"]), what="the task worker to die")
    logged_before = {
        s.uuid for s in read_eval_log_sample_summaries(killed_log) if not s.error
    }  # fmt: skip

    # The resumed worker runs the errored sample again and it passes: the class heals.
    status = steward.wait_phase(workspace, {"finished"})
    assert status["state"]["tasks"][0]["attempts"] == 2
    assert_each_sample_once(workspace, {"steady": 80})
    [healed] = _events(workspace, "healed")
    assert healed["closed"] and healed["samples"][0].endswith("#5@1")
    assert _decisions(steward, workspace) == []  # answered: nothing is left for anyone
    [final] = (workspace / "logs").glob("*.eval")
    summaries = read_eval_log_sample_summaries(str(final))
    assert not any(s.error for s in summaries)
    assert logged_before <= {s.uuid for s in summaries}  # nothing completed was run again
    assert not _events(workspace, "ruling applied")

    history = fetch_history(steward, launched["workflow_id"], status["run_id"])
    replay(history, record_as="eval_run_heal_v1_kill_resume")
    assert steward.ok("signoff", "--by", "norah", cwd=workspace)["by"] == "norah"


def test_workers_that_die_at_once_say_why(steward, workspace_root):
    workspace = make_workspace(
        steward,
        workspace_root,
        definition_text=BROKEN,
        tend_interval="1h",
        options="stall_after: 1\n",
    )
    steward.ok("launch", cwd=workspace)
    status = steward.wait_phase(workspace, {"stalled"})
    cause = (
        "FileNotFoundError: [Errno 2] No such file or directory: '/proc/forbidden/settings.json'"
    )
    # The stalling tend's workspace write lands just after the state says stalled.
    wait_for(
        lambda: any(e.get("phase") == "stalled" for e in _events(workspace, "tend")),
        what="the stalling tend's write",
    )

    exited = _events(workspace, "worker exited")
    assert len(exited) == 2 and all(e.get("cause") == cause for e in exited), exited
    [stalled] = _events(workspace, "task stalled")
    assert stalled["cause"] == cause
    [decision] = _decisions(steward, workspace)
    assert decision["kind"] == "stalled_task" and cause in decision["question"]
    assert status["state"]["tasks"][0]["exit_cause"] == cause
    assert cause in (workspace / "status.md").read_text().split("Needs you")[1]
    steward.ok("cancel", cwd=workspace)
