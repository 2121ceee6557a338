"""The other decision kinds on the embedded default: a tool-call approval answered through
`steward rule`, a stalled task retried then given up, scan findings ruled, and the
notification side (heartbeat, undelivered retried, a tend problem told once, routing)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from harness.helpers import make_workspace, read_journal, temporal_client, wait_for
from harness.receiver import Receiver

APPROVAL_DEFINITION = """from inspect_ai import Task, eval_set, task
from inspect_ai.dataset import Sample
from inspect_ai.model import ChatMessageAssistant, execute_tools
from inspect_ai.scorer import match
from inspect_ai.solver import solver
from inspect_ai.tool import ToolCall, tool


@tool
def deploy():
    async def execute(target: str) -> str:
        \"\"\"Deploy the build.

        Args:
            target: Where to deploy.
        \"\"\"
        return f"deployed to {target}"

    return execute


@solver
def risky():
    async def solve(state, generate):
        call = ToolCall(id="call-deploy-1", function="deploy", arguments={"target": "prod"})
        message = ChatMessageAssistant(content="deploying", tool_calls=[call])
        state.messages.append(message)
        result = await execute_tools([message], [deploy()])
        state.messages.extend(result.messages)
        return await generate(state)

    return solve


@task
def gated():
    return Task(
        dataset=[Sample(id=1, input="Reply with: shipped", target="shipped")],
        solver=risky(),
        scorer=match(),
        approval="human",
    )


eval_set(tasks=[gated()], model="steward/offline")
"""


def _tend_directly(steward, workflow_id: str) -> None:
    from temporalio.client import WorkflowUpdateFailedError

    from steward.workflows.run.eval_run import EvalRun

    async def go() -> None:
        # Steward's converter: the default one reads the update's pydantic answer through
        # pydantic's deprecated parse_obj (a warning in every run of this test).
        client = await temporal_client(steward)
        try:
            await client.get_workflow_handle(workflow_id).execute_update(EvalRun.tend)
        except WorkflowUpdateFailedError as err:
            raise AssertionError(f"tend refused: {err.cause}") from err

    asyncio.run(go())


def _open_decision(steward, workspace: Path, kind: str) -> dict:
    def find():
        steward("tend", cwd=workspace)
        view = steward.ok("collect", cwd=workspace)
        return next((d for d in view["decisions"] if d["kind"] == kind), None)

    return wait_for(find, timeout=120, interval=1.0, what=f"a {kind} decision")


def test_tool_approval_answered_through_rule(steward, workspace_root):
    workspace = workspace_root / "ws"
    steward.ok("init", str(workspace))
    (workspace / "evalset.py").write_text(APPROVAL_DEFINITION)
    with open(workspace / "_steward.yaml", "a") as handle:
        handle.write("\ntend_interval: 1h\n")
    steward.ok("launch", cwd=workspace)

    decision = _open_decision(steward, workspace, "approval")
    assert decision["owner"] == "operator"
    assert decision["instances"][0]["tool"] == "deploy"
    assert "prod" in decision["instances"][0]["detail"]
    refused = steward("rule", decision["id"], "approve", "--agent", cwd=workspace)
    assert refused.code == 2 and "operator's to rule" in refused.stderr

    steward.ok("rule", decision["id"], "approve", "--by", "norah", cwd=workspace)
    status = steward.wait_phase(workspace, {"finished"}, tend=True)
    assert status["state"]["tasks"][0]["progress"]["errored"] == 0

    from inspect_ai.log import read_eval_log

    [log_path] = (workspace / "logs").glob("*.eval")
    sample = read_eval_log(str(log_path)).samples[0]
    tool_results = [m.text for m in sample.messages if m.role == "tool"]
    assert tool_results == ["deployed to prod"]
    assert sample.scores["match"].value == "C"


def test_stalled_task_retried_then_given_up(steward, workspace_root):
    workspace = make_workspace(
        steward,
        workspace_root,
        {"steady": 3, "doomed": 3},
        crash={"doomed"},
        options="tend_interval: 1h\nstall_after: 0\n",
        dotenv="STEWARD_OFFLINE_CRASH=CRASH\n",
    )
    steward.ok("launch", cwd=workspace)
    first = _open_decision(steward, workspace, "stalled_task")
    assert first["owner"] == "operator" and set(first["verdicts"]) == {"retry", "give_up"}
    steward.wait_phase(workspace, {"stalled"}, tend=True)  # once the steady task is done

    steward.ok("rule", first["id"], "retry", "--by", "norah", cwd=workspace)
    second = _open_decision(steward, workspace, "stalled_task")
    assert second["id"] != first["id"]  # died again after the retry: asked again
    doomed = steward.task(workspace, "doomed")
    assert doomed["attempts"] == 2

    steward.ok("rule", second["id"], "give_up", "--by", "norah", cwd=workspace)
    status = steward.wait_phase(workspace, {"finished"}, tend=True)
    phases = {t["spec"]["name"]: t["phase"] for t in status["state"]["tasks"]}
    assert phases == {"steady": "complete", "doomed": "given_up"}
    # (The crashed attempts may leave errored samples: their class is a decision of its own.)
    left = steward.ok("collect", cwd=workspace)["decisions"]
    assert not [d for d in left if d["kind"] == "stalled_task"]


def test_scan_findings_become_a_class_that_is_ruled(steward, workspace_root):
    workspace = make_workspace(
        steward,
        workspace_root,
        {"graded": 3},
        options="tend_interval: 1h\n",
        dotenv="STEWARD_OFFLINE_FLAG=graded-2\n",
    )
    steward.ok("launch", cwd=workspace)
    decision = _open_decision(steward, workspace, "scan_finding")
    assert [i["sample_id"] for i in decision["instances"]] == ["2"]
    assert "scoring_integrity" in decision["question"]
    blocked = steward("signoff", "--by", "norah", cwd=workspace)
    assert blocked.code == 2 and "not ruled" in blocked.stderr

    proposed = steward.ok(
        "rule", decision["id"], "zero", "--agent", "--by", "claude", cwd=workspace
    )
    steward.ok("rule", proposed["raised"], "zero", "--by", "norah", "--reason", "grader fooled", cwd=workspace)  # fmt: skip

    def applied():
        steward("tend", cwd=workspace)
        view = steward.ok("collect", cwd=workspace)
        return all(c["state"] == "resolved" for c in view["classes"])

    wait_for(applied, timeout=90, interval=1.0, what="the zero ruling applied")
    from inspect_ai.log import read_eval_log

    [log_path] = (workspace / "logs").glob("*.eval")
    scores = {s.id: s.scores["match"] for s in read_eval_log(str(log_path)).samples}
    assert scores[2].value == 0 and scores[2].history[-1].provenance.author == "norah"
    assert scores[1].value == "C" and scores[3].value == "C"
    assert steward.ok("signoff", "--by", "norah", cwd=workspace)["by"] == "norah"


def test_heartbeat_undelivered_retried_tend_problem_once_and_routing(steward, workspace_root):
    with Receiver() as receiver:
        workspace = make_workspace(
            steward,
            workspace_root,
            {"slow": 30},
            options="tend_interval: 1h\nheartbeat: 1s\nsamples_ramp: [1, 1]\n",
            dotenv=f"STEWARD_OFFLINE_DELAY=0.5\nSTEWARD_OFFLINE_FAIL=slow-1$\n"
            f"STEWARD_NOTIFICATION={receiver.url}\n",
        )
        receiver.refuse = True
        steward.ok("launch", cwd=workspace)

        def heartbeat_kept() -> bool:
            steward("tend", cwd=workspace)
            return any(e["event"] == "notification not delivered" for e in read_journal(workspace))

        wait_for(heartbeat_kept, timeout=60, interval=1.0, what="an undelivered heartbeat")
        steward.ok("tend", cwd=workspace)
        assert receiver.messages == []
        undelivered = [
            e for e in read_journal(workspace) if e["event"] == "notification not delivered"
        ]
        assert len(undelivered) == 1  # journalled once, not every tend it keeps failing
        receiver.refuse = False
        steward.ok("tend", cwd=workspace)
        wait_for(lambda: receiver.messages, what="the kept message delivered")
        assert any("Heartbeat" in m["message"] for m in receiver.messages)

        # A tend that cannot read the options is told once per distinct reason.
        # (The CLI refuses to run on broken options, so tend through Temporal directly.)
        workflow_id = steward.status(workspace)["workflow_id"]
        options = workspace / "_steward.yaml"
        good = options.read_text()
        options.write_text(good + "\nsamples_ramp: [oops\n")
        for _ in range(3):
            _tend_directly(steward, workflow_id)
        problems = [m for m in receiver.messages if "A tend could not run" in m["message"]]
        assert len(problems) == 1 and "not valid YAML" in problems[0]["message"]
        # Nobody collected: once `route_after` has passed (live: re-read at the next tend)
        # the agent's item is the operator's too.
        options.write_text(good + "route_after: 2s\n")

        def routed():
            steward("tend", cwd=workspace)
            return "routed to you" in receiver.text()

        wait_for(routed, timeout=90, interval=1.0, what="the agent's item routed")
        events = [e["event"] for e in read_journal(workspace)]
        assert "routed to operator" in events
        steward.ok("cancel", "--reason", "test done", cwd=workspace)
        wait_for(lambda: "Cancelled by" in receiver.text(), what="the cancel notification")
        assert receiver.url not in (workspace / "journal.jsonl").read_text()


def test_stuck_sample_becomes_a_decision_and_is_cancelled(steward, workspace_root):
    workspace = make_workspace(
        steward,
        workspace_root,
        {"sleepy": 2},
        options="tend_interval: 1h\nstuck_after: 2s\nsamples_ramp: [2, 2]\n",
        # Long enough that a tend sees the sample stuck even on a loaded machine; the ruling
        # cancels it, and the run is cancelled, so nobody waits for it.
        dotenv="STEWARD_OFFLINE_DELAY=60\n",
    )
    steward.ok("launch", cwd=workspace)
    decision = _open_decision(steward, workspace, "stuck_sample")
    assert decision["owner"] == "operator"  # no stuck_cancel rule: not the agent's
    assert set(decision["verdicts"]) == {"cancel_tool", "retry", "cancel", "dismiss"}
    assert json.loads(decision["instances"][0]["detail"])["activity"] == "model"
    steward.ok("rule", decision["id"], "cancel", "--by", "norah", cwd=workspace)

    def cancelled():
        steward("tend", cwd=workspace)
        return any(
            e["event"] == "ruling applied" and e["verdict"] == "cancel"
            for e in read_journal(workspace)
        )

    wait_for(cancelled, timeout=60, interval=1.0, what="the stuck sample cancelled")
    steward.ok("cancel", "--reason", "test done", cwd=workspace)


def test_preauthorized_class_is_applied_without_asking(steward, workspace_root):
    workspace = make_workspace(
        steward,
        workspace_root,
        {"auto": 3},
        options='tend_interval: 1h\npreauthorized:\n  "*OfflineSampleFailure*": zero\n',
        dotenv="STEWARD_OFFLINE_FAIL=auto-2\n",
    )
    steward.ok("launch", cwd=workspace)

    def resolved():
        steward("tend", cwd=workspace)
        view = steward.ok("collect", cwd=workspace)
        return view if view["classes"] and view["classes"][0]["state"] == "resolved" else None

    view = wait_for(resolved, timeout=90, interval=1.0, what="the standing rule applied")
    assert view["decisions"] == [] and view["classes"][0]["ruling"]["standing"] == "preauthorized"
    from inspect_ai.log import read_eval_log

    [log_path] = (workspace / "logs").glob("*.eval")
    sample = next(s for s in read_eval_log(str(log_path)).samples if s.id == 2)
    assert sample.error is not None and sample.scores["match"].value == 0
    assert sample.scores["match"].history[-1].provenance.author == "standing rules"
    steward.wait_phase(workspace, {"finished"}, tend=True)
    assert steward.ok("signoff", "--by", "norah", cwd=workspace)["by"] == "norah"
