"""The `steward` approver: tool-call approvals answered through files, with real Inspect evals.

The model is Inspect's `mockllm/model` scripted to call the `record` tool once and then finish
(every output carries usage, so mockllm never reaches for tiktoken, which would download).
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from inspect_ai import Task, eval_async
from inspect_ai._control.state import _sample_summaries_from_active
from inspect_ai.approval import ApprovalPolicy
from inspect_ai.dataset import Sample
from inspect_ai.event import ApprovalEvent
from inspect_ai.log import EvalLog
from inspect_ai.model import ChatMessageTool, ModelOutput, ModelUsage, get_model
from inspect_ai.solver import generate, use_tools
from inspect_ai.tool import Tool, tool

from harness.approvals import answer, requests_in
from steward.worker.approver import steward_approver

CALL_ID = "call-record-1"
RAN: list[str] = []


@tool
def record() -> Tool:
    async def execute(note: str) -> str:
        """Record a note.

        Args:
            note: The note to record.
        """
        RAN.append(note)
        return f"recorded {note}"

    return execute


def scripted_outputs(input: Any, tools: Any, tool_choice: Any, config: Any) -> ModelOutput:
    """Call `record` once; once its result is in the conversation, finish."""
    if any(isinstance(message, ChatMessageTool) for message in input):
        output = ModelOutput.from_content("mockllm/model", "done")
    else:
        output = ModelOutput.for_tool_call(
            "mockllm/model",
            "record",
            {"note": "hi"},
            tool_call_id=CALL_ID,
            content="I will record a note.",
        )
    output.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)
    return output


@pytest.fixture
def approvals(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    directory = tmp_path / "approvals"
    monkeypatch.setenv("STEWARD_APPROVALS_DIR", str(directory))
    RAN.clear()
    return directory


def start_eval(log_dir: Path) -> asyncio.Task[list[EvalLog]]:
    task = Task(
        dataset=[Sample(id="s1", input="Record a note.")],
        solver=[use_tools(record()), generate()],
        name="approve_me",
    )
    model = get_model("mockllm/model", custom_outputs=scripted_outputs, memoize=False)
    return asyncio.create_task(
        eval_async(
            task,
            model=model,
            approval=[ApprovalPolicy(steward_approver(), "*")],
            log_dir=str(log_dir),
        )
    )


async def wait_for_request(
    directory: Path, eval_run: asyncio.Task | None = None, timeout: float = 20
) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if eval_run is not None and eval_run.done():
            raise AssertionError(f"eval finished without asking: {eval_run.result()}")
        found = requests_in(directory)
        if found:
            return json.loads(found[0].read_text())
        await asyncio.sleep(0.1)
    raise AssertionError(f"no approval request appeared in {directory}")


def approval_events(log: EvalLog) -> list[ApprovalEvent]:
    assert log.samples
    return [e for e in log.samples[0].events if isinstance(e, ApprovalEvent)]


def tool_messages(log: EvalLog) -> list[ChatMessageTool]:
    assert log.samples
    return [m for m in log.samples[0].messages if isinstance(m, ChatMessageTool)]


async def test_approve_runs_the_tool(approvals: Path, tmp_path: Path) -> None:
    run = start_eval(tmp_path / "logs")
    request = await wait_for_request(approvals, run)

    assert set(request) == {
        "id",
        "task",
        "sample_id",
        "epoch",
        "eval_id",
        "tool",
        "arguments",
        "message",
        "requested_at",
        "pid",
    }
    assert request["id"].startswith("appr-") and len(request["id"]) == 17
    assert (approvals / f"{request['id']}.json").is_file()
    assert request["task"] == "approve_me"
    assert request["sample_id"] == "s1"
    assert request["epoch"] == 1
    assert request["tool"] == "record"
    assert request["arguments"] == {"note": "hi"}
    assert request["message"] == "I will record a note."
    assert request["pid"] == os.getpid()
    requested_at = datetime.fromisoformat(request["requested_at"])
    assert requested_at.utcoffset() == timedelta(0)

    # it waits, and says so where Inspect's control channel reports sample activity
    await asyncio.sleep(1.2)
    assert not run.done() and RAN == []
    [row] = _sample_summaries_from_active(request["eval_id"])
    assert row["activity"]["type"] == "approval"
    assert row["activity"]["detail"] == "record"
    assert row["activity"]["count"] == 1

    answer(approvals, request["id"], "approve", "looks fine")
    [log] = await asyncio.wait_for(run, 30)

    assert log.status == "success"
    assert log.eval.eval_id == request["eval_id"]
    assert RAN == ["hi"]
    [result] = tool_messages(log)
    assert result.error is None and result.text == "recorded hi"
    [event] = approval_events(log)
    assert event.approver == "steward"
    assert event.decision == "approve"
    assert event.explanation == "looks fine"
    assert event.metadata == {"by": "tester"}
    # neither file is removed: Steward tidies them
    assert (approvals / f"{request['id']}.json").is_file()
    assert (approvals / f"{request['id']}.answer.json").is_file()


async def test_reject_does_not_run_the_tool(approvals: Path, tmp_path: Path) -> None:
    run = start_eval(tmp_path / "logs")
    request = await wait_for_request(approvals, run)

    # a malformed answer is "not answered yet"
    (approvals / f"{request['id']}.answer.json").write_text("{not json")
    await asyncio.sleep(1.2)
    assert not run.done()

    answer(approvals, request["id"], "reject", "not today")
    [log] = await asyncio.wait_for(run, 30)

    assert log.status == "success"
    assert RAN == []
    [result] = tool_messages(log)
    assert result.error is not None and result.error.type == "approval"
    assert "not today" in result.error.message
    [event] = approval_events(log)
    assert event.decision == "reject"


async def test_terminate_ends_the_sample(approvals: Path, tmp_path: Path) -> None:
    run = start_eval(tmp_path / "logs")
    request = await wait_for_request(approvals, run)
    answer(approvals, request["id"], "terminate")
    [log] = await asyncio.wait_for(run, 30)

    assert RAN == []
    assert log.samples
    sample = log.samples[0]
    # Inspect records an approver's termination as an operator limit on the sample
    assert sample.limit is not None and sample.limit.type == "operator"
    assert sample.error is None
    # the model was not asked again after the termination
    assert [m.text for m in sample.messages if m.role == "assistant"] == ["I will record a note."]
    [event] = approval_events(log)
    assert event.decision == "terminate"


async def test_restarted_wait_reuses_the_request(approvals: Path, tmp_path: Path) -> None:
    # the first attempt dies while waiting ...
    first = start_eval(tmp_path / "logs-1")
    request = await wait_for_request(approvals, first)
    first.cancel()
    with pytest.raises(asyncio.CancelledError):
        await first
    assert RAN == []

    # ... the operator answers meanwhile, and the restarted attempt (a new eval id) picks the
    # same request, and its answer, back up
    answer(approvals, request["id"], "approve")
    [log] = await asyncio.wait_for(start_eval(tmp_path / "logs-2"), 30)

    assert log.eval.eval_id != request["eval_id"]
    [again] = requests_in(approvals)
    restarted = json.loads(again.read_text())
    assert restarted["id"] == request["id"]
    assert restarted["eval_id"] == log.eval.eval_id
    assert restarted["requested_at"] == request["requested_at"]
    assert RAN == ["hi"]
