"""Determinism: EvalRun replays recorded histories without a non-determinism error.

`tests/histories/*.json` are histories recorded from real runs (regenerate one with
STEWARD_RECORD_HISTORY=1 pytest tests/e2e/test_replay.py): a change to the workflow that would
break runs already in flight fails here first.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from temporalio.client import WorkflowHistory

from harness.helpers import HISTORIES, fetch_history, make_workspace, replay


@pytest.mark.parametrize("path", sorted(HISTORIES.glob("*.json")), ids=lambda p: p.stem)
def test_recorded_history_replays(path: Path):
    replay(WorkflowHistory.from_json(path.stem, path.read_text()))


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

    replay(
        fetch_history(steward, launched["workflow_id"]),
        record_as="eval_run_ramp_v1_pause_tend_resume",
    )
