"""Starting a definition: one command line, and an environment in which only what the start
itself sets steers the run (activities/processes/runner_launch.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from steward.activities.processes.runner_launch import (
    APPROVALS_DIR_ENV,
    CAPTURE_ENV,
    OVERRIDES_ENV,
    SANDBOX_SIDECAR_ENV,
    SELECTION_ENV,
    SELECTION_VERSION,
    WORKER_ENV,
    capture_steering,
    runner_launch,
    selection_document,
    worker_steering,
)
from steward.workflows.activity_io import SelectedTask


@pytest.fixture(autouse=True)
def _stray_steering(monkeypatch: pytest.MonkeyPatch) -> None:
    """The Steward worker's own environment, left with every steering variable set."""
    for name in (CAPTURE_ENV, SELECTION_ENV, OVERRIDES_ENV, SANDBOX_SIDECAR_ENV, WORKER_ENV):
        monkeypatch.setenv(name, "/stray")
    monkeypatch.setenv(APPROVALS_DIR_ENV, "/stray")
    monkeypatch.setenv("INSPECT_EVAL_SET_NO_PRUNE", "1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")


def test_a_worker_is_steered_by_its_selection_alone(tmp_path: Path):
    command, env = runner_launch("evalset.py", worker_steering(tmp_path / "w.json", "/ws"))
    assert command == [sys.executable, "-m", "steward.worker.definition_runner", "evalset.py"]
    assert env[SELECTION_ENV] == str(tmp_path / "w.json")
    assert env[WORKER_ENV] == "1" and env[APPROVALS_DIR_ENV] == "/ws/.steward/approvals"
    assert CAPTURE_ENV not in env and OVERRIDES_ENV not in env and SANDBOX_SIDECAR_ENV not in env
    assert env["INSPECT_EVAL_SET_NO_PRUNE"] == "1" and env["OPENAI_API_KEY"] == "sk-test"


def test_capture_is_steered_by_its_manifest_alone(tmp_path: Path):
    _, env = runner_launch(
        "config.py", capture_steering(tmp_path / "capture.json", tmp_path / "sandboxes.json")
    )
    assert env[CAPTURE_ENV] == str(tmp_path / "capture.json")
    assert env[SANDBOX_SIDECAR_ENV] == str(tmp_path / "sandboxes.json")
    for name in (SELECTION_ENV, OVERRIDES_ENV, WORKER_ENV, APPROVALS_DIR_ENV):
        assert name not in env


def test_the_selection_document_names_only_what_is_set():
    tasks = [SelectedTask(identifier="a", args_hash="h"), SelectedTask(identifier="b", resume="x")]
    document = selection_document("set-1", tasks, {"log_dir": "/logs", "max_samples": 4})
    assert document == {
        "version": SELECTION_VERSION,
        "eval_set_id": "set-1",
        "tasks": [{"identifier": "a", "args_hash": "h"}, {"identifier": "b", "resume": "x"}],
        "overrides": {"log_dir": "/logs", "max_samples": 4},
    }
