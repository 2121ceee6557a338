"""The human/agent loop end to end on the embedded default: error classes proposed by an agent,
ruled by the operator, applied to the logs with provenance, collect cursors, invalid rulings
refused, Apprise notifications over loopback, and signoff refused then accepted."""

from __future__ import annotations

import math
from pathlib import Path

from harness.helpers import fetch_history, make_workspace, read_journal, replay, wait_for
from harness.receiver import Receiver

DEFINITION = """from inspect_ai import Task, eval_set, task
from inspect_ai.dataset import Sample
from inspect_ai.scorer import match
from inspect_ai.solver import generate, solver


def samples(prefix, count):
    return [
        Sample(id=i, input=f"Reply with: {prefix}-{i}", target=f"{prefix}-{i}")
        for i in range(1, count + 1)
    ]


@solver
def picky():
    async def solve(state, generate):
        if "buggy-3" in state.input_text:
            raise ValueError("picky cannot handle this sample")
        return await generate(state)

    return solve


@task
def flaky():
    return Task(dataset=samples("flaky", 4), solver=generate(), scorer=match())


@task
def buggy():
    return Task(dataset=samples("buggy", 4), solver=picky(), scorer=match())


eval_set(tasks=[flaky(), buggy()], model="steward/offline")
"""


def _samples(log: Path) -> dict:
    from inspect_ai.log import read_eval_log

    return {s.id: s for s in read_eval_log(str(log)).samples or []}


def _log_of(workspace: Path, task: str) -> Path:
    from inspect_ai.log import read_eval_log

    found = [
        p
        for p in sorted((workspace / "logs").glob("*.eval"))
        if read_eval_log(str(p), header_only=True).eval.task == task
    ]
    assert len(found) == 1, f"{task}: {found}"
    return found[0]


def test_two_error_classes_proposed_ruled_applied_and_signed_off(steward, workspace_root):
    with Receiver() as receiver:
        workspace = make_workspace(
            steward,
            workspace_root,
            definition_text=DEFINITION,
            tend_interval="1h",
            dotenv=f"STEWARD_OFFLINE_FAIL=flaky-2\nSTEWARD_NOTIFICATION={receiver.url}\n",
        )
        steward.ok("launch", cwd=workspace)
        status = steward.wait_phase(workspace, {"finished"}, tend=True)
        workflow_id = status["workflow_id"]

        first = steward.ok("collect", "--since", "0", cwd=workspace)
        by_title = {d["question"]: d for d in first["decisions"]}
        assert len(first["decisions"]) == 2, first["decisions"]
        assert all(d["owner"] == "agent" for d in first["decisions"])
        model_error = next(d for q, d in by_title.items() if "OfflineSampleFailure" in q)
        solver_error = next(d for q, d in by_title.items() if "ValueError" in q)
        assert "OfflineSampleFailure in worker/offline_model.py:" in model_error["question"]
        assert "evalset.py:solve" in solver_error["question"]
        assert [i["sample_id"] for i in model_error["instances"]] == ["2"]
        assert [i["sample_id"] for i in solver_error["instances"]] == ["3"]
        assert first["cursor"] > 0
        assert [e["seq"] for e in first["events"]] == list(range(1, len(first["events"]) + 1))
        # Reading consumed nothing: the same decisions are there again.
        again = steward.ok("collect", "--since", str(first["cursor"]), cwd=workspace)
        assert {d["id"] for d in again["decisions"]} == {d["id"] for d in first["decisions"]}
        assert all(e["seq"] > first["cursor"] for e in again["events"])

        flaky_before = _samples(_log_of(workspace, "flaky"))
        assert flaky_before[2].error is not None

        # Invalid rulings are refused with one sentence and change nothing.
        unknown = steward("rule", "d-99", "rerun", cwd=workspace)
        assert unknown.code == 2 and "No decision 'd-99'" in unknown.stderr
        wrong = steward("rule", model_error["id"], "approve", cwd=workspace)
        assert wrong.code == 2 and "not a verdict" in wrong.stderr

        # The agent proposes; each proposal raises the operator's decision.
        proposed = steward.ok(
            "rule", model_error["id"], "rerun", "--agent", "--by", "claude",
            "--reason", "transient provider failure", cwd=workspace,
        )  # fmt: skip
        assert proposed["effect"] == "proposed" and proposed["raised"]
        excluded = steward.ok(
            "rule", solver_error["id"], "exclude", "--agent", "--by", "claude",
            "--reason", "solver bug on this sample", cwd=workspace,
        )  # fmt: skip
        agent_again = steward("rule", proposed["raised"], "rerun", "--agent", cwd=workspace)
        assert agent_again.code == 2 and "operator's to rule" in agent_again.stderr
        answered = steward("rule", model_error["id"], "exclude", cwd=workspace)
        assert answered.code == 2 and "already answered" in answered.stderr

        # The operator hears of the decisions that are now theirs, once, at the next tend.
        # (A ruling wakes the run, so each may come in a message of its own.)
        steward.ok("tend", cwd=workspace)
        raised = [proposed["raised"], excluded["raised"]]
        wait_for(lambda: all(f"{d}:" in receiver.text() for d in raised), what="decision mail")
        steward.ok("tend", cwd=workspace)
        for decision_id in raised:
            assert receiver.text().count(f"- {decision_id}:") == 1
        assert any("decision(s) need you" in t for t in receiver.titles())

        nameless = steward("signoff", cwd=workspace)
        assert nameless.code == 2 and "Missing option '--by'" in nameless.stderr
        unpublishable = steward("signoff", "--by", "norah", "--publish", cwd=workspace)
        assert unpublishable.code == 2 and "log store" in unpublishable.stderr

        refused = steward("signoff", "--by", "norah", cwd=workspace)
        assert refused.code == 2
        assert "error classes not ruled" in refused.stderr
        assert "decisions open" in refused.stderr

        # The operator rules; the transient failure is gone before the re-run.
        (workspace / ".env").write_text(f"STEWARD_NOTIFICATION={receiver.url}\n")
        steward.ok("rule", proposed["raised"], "rerun", "--by", "norah", cwd=workspace)
        steward.ok(
            "rule", excluded["raised"], "exclude", "--by", "norah", "--reason", "solver bug",
            cwd=workspace,
        )  # fmt: skip

        def settled() -> dict | None:
            steward("tend", cwd=workspace)
            view = steward.ok("collect", "--since", "0", cwd=workspace)
            states = {c["state"] for c in view["classes"]}
            phase = steward.status(workspace)["state"]["phase"]
            return view if phase == "finished" and states == {"resolved"} else None

        view = wait_for(settled, timeout=180, interval=1.0, what="both rulings applied")
        assert view["decisions"] == []

        # Exactly the ruled sample re-ran; the others were reused, not re-run.
        flaky_after = _samples(_log_of(workspace, "flaky"))
        assert flaky_after[2].error is None and flaky_after[2].uuid != flaky_before[2].uuid
        for sample_id in (1, 3, 4):
            assert flaky_after[sample_id].uuid == flaky_before[sample_id].uuid
        archived = list((workspace / "logs-archive").glob("*.eval"))
        assert len(archived) == 1

        # The exclusion is an unscored value with its provenance; nothing else was touched.
        buggy = _samples(_log_of(workspace, "buggy"))
        score = next(iter(buggy[3].scores.values()))
        assert math.isnan(score.value)
        assert score.history and score.history[-1].provenance.author == "norah"
        for sample_id in (1, 2, 4):
            untouched = next(iter(buggy[sample_id].scores.values()))
            assert untouched.value == "C" and not untouched.history

        events = [e["event"] for e in view["events"]]
        for expected in ("error class", "decision raised", "proposed", "ruled", "ruling applied"):
            assert expected in events, expected
        assert "rerun queued" in events

        signed = steward.ok("signoff", "--by", "norah", cwd=workspace)
        assert signed["by"] == "norah" and len(signed["logs"]) == 2
        final = steward.status(workspace)
        assert final["state"]["phase"] == "signed_off"
        assert "Signed off" in (workspace / "status.md").read_text()
        journal = read_journal(workspace)
        assert journal[-1]["event"] in ("signed off", "notified")

        # Apprise delivered to the loopback receiver: decisions, finished, signed off.
        wait_for(lambda: any("signed off" in t for t in receiver.titles()), what="signoff mail")
        assert any("finished" in t for t in receiver.titles())
        # The destination (a secret in real life) is never written down.
        port = receiver.url.split(":")[2].split("/")[0]
        for text in (
            (workspace / "journal.jsonl").read_text(),
            (workspace / "status.md").read_text(),
            fetch_history(steward, workflow_id).to_json(),
            (steward.data_dir() / "worker.log").read_text(),
        ):
            assert receiver.url not in text and f"127.0.0.1:{port}" not in text
        # Rulings, collect and signoff replay deterministically (and are kept as a fixture).
        replay(fetch_history(steward, workflow_id), record_as="eval_run_decisions_v1_rule_signoff")


def test_runbook_and_agent_files_point_to_it(steward, workspace_root):
    text = steward.ok("runbook")["runbook"]
    assert "steward collect --by YOUR-NAME" in text and "--agent" in text
    assert "steward wait --by YOUR-NAME" in text and "steward mcp" in text
    workspace = workspace_root / "ws"
    steward.ok("init", str(workspace))
    for name in ("AGENTS.md", "CLAUDE.md"):
        assert "steward runbook" in (workspace / name).read_text()
