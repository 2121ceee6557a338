"""Determinism: EvalRun replays recorded histories without a non-determinism error.

`tests/histories/*.json` are histories recorded from real runs (regenerate one with
STEWARD_RECORD_HISTORY=1 pytest tests/test_replay.py): a change to the workflow that would
break runs already in flight fails here first.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest
from temporalio.client import Client, WorkflowHistory
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.worker import Replayer

from worker.temporal_worker import workflow_runner
from workflows.eval_run import EvalRun

from .helpers import make_workspace

HISTORIES = Path(__file__).parent / "histories"


def _replay(history: WorkflowHistory) -> None:
    replayer = Replayer(
        workflows=[EvalRun],
        data_converter=pydantic_data_converter,
        workflow_runner=workflow_runner(),
    )
    asyncio.run(replayer.replay_workflow(history))


@pytest.mark.parametrize("path", sorted(HISTORIES.glob("*.json")), ids=lambda p: p.stem)
def test_recorded_history_replays(path: Path):
    _replay(WorkflowHistory.from_json(path.stem, path.read_text()))


def test_recorded_histories_exist():
    assert list(HISTORIES.glob("*.json")), "record one with STEWARD_RECORD_HISTORY=1"


def test_fresh_history_with_commands_replays(steward, workspace_root):
    workspace = make_workspace(
        steward, workspace_root, {"a": 4, "b": 3}, dotenv="STEWARD_OFFLINE_DELAY=0.2\n"
    )
    launched = steward.ok("launch", cwd=workspace)
    steward.ok("pause", "--reason", "replay", cwd=workspace)
    steward.ok("tend", cwd=workspace)
    steward.ok("resume", cwd=workspace)
    steward.wait_phase(workspace, {"finished"}, tend=True)

    async def fetch() -> WorkflowHistory:
        client = await Client.connect(f"127.0.0.1:{steward.env['STEWARD_TEMPORAL_PORT']}")
        return await client.get_workflow_handle(launched["workflow_id"]).fetch_history()

    history = asyncio.run(fetch())
    _replay(history)
    if os.environ.get("STEWARD_RECORD_HISTORY"):
        (HISTORIES / "eval_run_ramp_v1_pause_tend_resume.json").write_text(history.to_json())
