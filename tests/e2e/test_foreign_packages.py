"""A workspace with its own `worker`, `cli`, `workflows` and `activities` packages, the generic
names Steward once installed at the top level (and then shadowed them or was shadowed by them:
Inspect's `worker.inspect_plugins` entry point failed, and Steward's approver and offline model
went unregistered). Its definition imports all four; the run launches, asks for a tool-call
approval through the `steward` approver, is answered through `steward rule`, and finishes on
`steward/offline`. Plain Inspect in that directory still finds Steward's plugin."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from harness.helpers import wait_for

# package -> (module, its source): each package's module defines a value the definition uses.
OWN_PACKAGES = {
    "worker": ("targets", 'TARGET = "staging-of-the-users-worker"\n'),
    "cli": ("words", 'WORD = "word-of-the-users-cli"\n'),
    "workflows": ("words", 'WORD = "word-of-the-users-workflows"\n'),
    "activities": ("words", 'WORD = "word-of-the-users-activities"\n'),
}

DEFINITION = '''from inspect_ai import Task, eval_set, task
from inspect_ai.dataset import Sample
from inspect_ai.model import ChatMessageAssistant, execute_tools
from inspect_ai.scorer import match
from inspect_ai.solver import solver
from inspect_ai.tool import ToolCall, tool

import activities.words
import cli.words
import workflows.words
from worker.targets import TARGET


@tool
def deploy():
    async def execute(target: str) -> str:
        """Deploy the build.

        Args:
            target: Where to deploy.
        """
        return f"deployed to {target}"

    return execute


@solver
def deploy_then_answer():
    async def solve(state, generate):
        if state.sample_id == 1:  # one approval to answer, not one per sample
            call = ToolCall(id="call-deploy-1", function="deploy", arguments={"target": TARGET})
            message = ChatMessageAssistant(content="deploying", tool_calls=[call])
            state.messages.append(message)
            result = await execute_tools([message], [deploy()])
            state.messages.extend(result.messages)
        return await generate(state)

    return solve


@task
def own_packages():
    words = [cli.words.WORD, workflows.words.WORD, activities.words.WORD]
    return Task(
        dataset=[Sample(id=i, input=f"Reply with: {w}", target=w) for i, w in enumerate(words, 1)],
        solver=deploy_then_answer(),
        scorer=match(),
        approval="steward",
    )


eval_set(tasks=[own_packages()], model="steward/offline")
'''

# Run in the workspace, so its packages come first on sys.path ("" is the cwd), as they do for
# a user's own script there. Inspect loads entry points when a model is not registered yet.
PLUGIN_CHECK = """
import asyncio, json
import activities, cli, workflows, worker
from inspect_ai import Task
from inspect_ai.dataset import Sample
from inspect_ai.model import get_model

model = get_model("steward/offline")
output = asyncio.run(model.generate("Reply with: plugin-loaded"))
task = Task(dataset=[Sample(input="x")], approval="steward")
print(json.dumps({
    "packages": {m.__name__: m.__file__ for m in (activities, cli, workflows, worker)},
    "model_api": type(model.api).__module__,
    "completion": output.completion,
    "approver": [f"{p.approver.__module__}:{p.approver.__qualname__}" for p in task.approval],
}))
"""


def _write_own_packages(workspace: Path) -> None:
    for package, (module, source) in OWN_PACKAGES.items():
        (workspace / package).mkdir()
        (workspace / package / "__init__.py").write_text("")
        (workspace / package / f"{module}.py").write_text(source)


def _plain_environment() -> dict[str, str]:
    """The environment of a user's shell: none of Steward's worker settings."""
    return {k: v for k, v in os.environ.items() if not k.startswith(("STEWARD_", "INSPECT_"))}


def _open_approval(steward, workspace: Path) -> dict:
    def find():
        steward("tend", cwd=workspace)
        view = steward.ok("collect", cwd=workspace)
        return next((d for d in view["decisions"] if d["kind"] == "approval"), None)

    return wait_for(find, timeout=120, interval=1.0, what="an approval decision")


def test_workspace_with_its_own_worker_cli_workflows_activities(steward, workspace_root):
    workspace = workspace_root / "ws"
    steward.ok("init", str(workspace))
    _write_own_packages(workspace)
    (workspace / "evalset.py").write_text(DEFINITION)
    with open(workspace / "_steward.yaml", "a") as handle:
        handle.write("\ntend_interval: 1h\n")
    launched = steward.ok("launch", cwd=workspace)
    assert [t["spec"]["name"] for t in launched["state"]["tasks"]] == ["own_packages"]

    decision = _open_approval(steward, workspace)
    assert decision["instances"][0]["tool"] == "deploy"
    assert "staging-of-the-users-worker" in decision["instances"][0]["detail"]
    steward.ok("rule", decision["id"], "approve", "--by", "norah", cwd=workspace)
    status = steward.wait_phase(workspace, {"finished"}, tend=True)
    assert status["state"]["samples_done"] == 3
    assert status["state"]["tasks"][0]["progress"]["errored"] == 0

    from inspect_ai.log import read_eval_log

    [log_path] = (workspace / "logs").glob("*.eval")
    log = read_eval_log(str(log_path))
    assert log.status == "success" and log.eval.model == "steward/offline"
    samples = {s.id: s for s in log.samples}
    assert {i: s.output.completion for i, s in samples.items()} == {
        1: "word-of-the-users-cli",
        2: "word-of-the-users-workflows",
        3: "word-of-the-users-activities",
    }
    assert all(s.scores["match"].value == "C" for s in samples.values())
    tool_results = [m.text for m in samples[1].messages if m.role == "tool"]
    assert tool_results == ["deployed to staging-of-the-users-worker"]
    [approval] = [e for e in samples[1].events if e.event == "approval"]
    assert approval.approver == "steward" and approval.decision == "approve"

    # Plain Inspect in the workspace: listing tasks says nothing of entry points...
    listed = subprocess.run(
        [str(Path(sys.executable).parent / "inspect"), "list", "tasks"],
        cwd=workspace,
        env=_plain_environment(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    said = listed.stdout + listed.stderr
    assert listed.returncode == 0, said
    assert "Unexpected exception loading entrypoints" not in said and "Traceback" not in said
    assert listed.stdout.split() == ["evalset.py@own_packages"]

    # ...and a process that imports the user's packages first still gets Steward's plugin.
    checked = subprocess.run(
        [sys.executable, "-c", PLUGIN_CHECK],
        cwd=workspace,
        env=_plain_environment(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert checked.returncode == 0, checked.stderr[-3000:]
    assert "Unexpected exception loading entrypoints" not in checked.stderr, checked.stderr
    seen = json.loads(checked.stdout.strip().splitlines()[-1])
    assert seen["packages"] == {
        name: str(workspace / name / "__init__.py") for name in OWN_PACKAGES
    }
    assert seen["model_api"] == "steward.worker.offline_model"
    assert seen["completion"] == "plugin-loaded"
    assert [a.startswith("steward.worker.approver:") for a in seen["approver"]] == [True]
