"""The `steward` approver in a real worker process: Inspect's `human` approval goes through
Steward's approval files (the approver in this process is in tests/unit/test_approver.py)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

from harness.approvals import answer, requests_in

DEFINITION = """
import sys

from inspect_ai import Task, eval, task
from inspect_ai.dataset import Sample
from inspect_ai.model import ChatMessageTool, ModelOutput, ModelUsage, get_model
from inspect_ai.solver import generate, use_tools
from inspect_ai.tool import tool


@tool
def record():
    async def execute(note: str) -> str:
        \"\"\"Record a note.

        Args:
            note: The note to record.
        \"\"\"
        with open("ran.txt", "a") as f:
            f.write(note + "\\n")
        return "recorded " + note

    return execute


def outputs(input, tools, tool_choice, config):
    if any(isinstance(m, ChatMessageTool) for m in input):
        out = ModelOutput.from_content("mockllm/model", "done")
    else:
        note = input[0].text
        out = ModelOutput.for_tool_call("mockllm/model", "record", {"note": note})
    out.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)
    return out


@task
def early():
    return Task(
        dataset=[Sample(id=1, input="early")],
        solver=[use_tools(record()), generate()],
        approval="human",
    )


@task
def late():
    return Task(dataset=[Sample(id=1, input="late")], solver=[use_tools(record()), generate()])


# built before Inspect loads its entry points (get_model() or eval() would), so it holds
# Inspect's own `human` approver
early_task = early()
assert "steward.worker.approver" not in sys.modules
model = get_model("mockllm/model", custom_outputs=outputs)
[one] = eval(early_task, model=model, log_dir="logs", display="none")
# resolved by name after they are loaded
[two] = eval(late, model=model, approval="human", log_dir="logs", display="none")
for log in (one, two):
    sample = log.samples[0]
    approvers = [e.approver for e in sample.events if e.event == "approval"]
    print(log.eval.task, log.status, sample.error and sample.error.message, approvers)
"""


async def test_human_goes_through_steward_in_a_worker(tmp_path: Path) -> None:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (workspace / "evalset.py").write_text(textwrap.dedent(DEFINITION))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("STEWARD_", "INSPECT_"))}
    env["STEWARD_WORKER"] = "1"
    process = subprocess.Popen(
        [sys.executable, "evalset.py"],
        cwd=workspace,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    directory = workspace / ".steward" / "approvals"  # the default, under the cwd
    try:
        answered: list[dict[str, Any]] = []
        deadline = time.monotonic() + 40
        while len(answered) < 2 and time.monotonic() < deadline:
            assert process.poll() is None, process.communicate()
            for path in requests_in(directory):
                request = json.loads(path.read_text())
                if request["id"] not in [r["id"] for r in answered]:
                    assert request["pid"] == process.pid
                    answer(directory, request["id"], "approve")
                    answered.append(request)
            await asyncio.sleep(0.1)
        stdout, stderr = await asyncio.to_thread(process.communicate, timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()

    assert process.returncode == 0, stderr
    assert [(r["task"], r["tool"], r["arguments"]) for r in answered] == [
        ("early", "record", {"note": "early"}),
        ("late", "record", {"note": "late"}),
    ]
    assert "EOFError" not in stdout + stderr
    assert stdout.splitlines() == [
        "early success None ['human']",
        "late success None ['human']",
    ]
    assert (workspace / "ran.txt").read_text() == "early\nlate\n"
