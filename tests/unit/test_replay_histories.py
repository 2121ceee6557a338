"""Determinism: EvalRun replays recorded histories without a non-determinism error (no server).

`tests/histories/*.json` are histories recorded from real runs by the e2e tests that call
`replay(..., record_as=...)` (regenerate them with STEWARD_RECORD_HISTORY=1 pytest tests/e2e): a
change to the workflow that would break runs already in flight fails here first.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from temporalio.client import WorkflowHistory

from harness.helpers import HISTORIES, replay


@pytest.mark.parametrize("path", sorted(HISTORIES.glob("*.json")), ids=lambda p: p.stem)
def test_recorded_history_replays(path: Path):
    replay(WorkflowHistory.from_json(path.stem, path.read_text()))


def test_recorded_histories_exist():
    assert list(HISTORIES.glob("*.json")), "record one with STEWARD_RECORD_HISTORY=1"
