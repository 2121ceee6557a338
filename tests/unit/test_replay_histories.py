"""Determinism and the upgrade window: EvalRun replays the recorded histories of every run this
release continues, and refuses older runs with a clear message (no server).

`tests/histories/*.json` are histories recorded from real runs by the e2e tests that call
`replay(..., record_as=...)` (regenerate them with STEWARD_RECORD_HISTORY=1 pytest tests/e2e): a
change to the workflow that would break runs already in flight fails here first.
`tests/histories/refused/` keeps histories of runs started before the previous release
(workflows/run/eval_run_versions.py): their retired flags' old branches are gone, and they must
stop at their first workflow task with the refusal, never with a non-determinism error halfway.
"""

from __future__ import annotations

import asyncio
import gc
import re
import warnings
from pathlib import Path

import pytest
from temporalio.client import WorkflowHistory
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.worker import Replayer

from harness.helpers import HISTORIES, replay
from steward.workflows.run import eval_run_versions as versions

REFUSED = HISTORIES / "refused"


@pytest.mark.parametrize("path", sorted(HISTORIES.glob("*.json")), ids=lambda p: p.stem)
def test_recorded_history_replays(path: Path):
    replay(WorkflowHistory.from_json(path.stem, path.read_text()))


def test_recorded_histories_exist():
    assert list(HISTORIES.glob("eval_run_*.json")), "record one with STEWARD_RECORD_HISTORY=1"
    assert list(REFUSED.glob("eval_run_*.json"))


def _replay_failure(path: Path) -> str | None:
    """What the replay of a refused history fails with (None: it replayed)."""
    from steward.worker.temporal_worker import WORKFLOWS, workflow_runner

    replayer = Replayer(
        workflows=WORKFLOWS,
        data_converter=pydantic_data_converter,
        workflow_runner=workflow_runner(),
    )
    history = WorkflowHistory.from_json(path.stem, path.read_text())
    # The refusal is raised in EvalRun's __init__ (before any command, by design), after the SDK
    # made the coroutine that would have run `run()`: never awaited, it warns when collected.
    # Expected of a refused run, so said here and collected here, not in a later test.
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=NEVER_RUN, category=RuntimeWarning)
        result = asyncio.run(replayer.replay_workflow(history, raise_on_replay_failure=False))
        failure = None if result.replay_failure is None else str(result.replay_failure)
        del result, replayer
        gc.collect()
    return failure


NEVER_RUN = r"coroutine '_WorkflowInstanceImpl\._apply_initialize_workflow\.<locals>\.run_workflow'"


@pytest.mark.parametrize("path", sorted(REFUSED.glob("*.json")), ids=lambda p: p.stem)
def test_a_run_older_than_the_previous_release_is_refused_with_the_reason(path: Path):
    failure = _replay_failure(path)
    assert failure is not None, f"{path.name} replayed: move it back to tests/histories"
    # The workflow task fails with the refusal itself (the run is kept, not failed): its text
    # says which releases continue it and how to end it without losing samples.
    assert versions.refusal(path.stem) in str(failure), failure


def test_the_refusal_names_the_releases_and_the_way_out():
    text = versions.refusal("run-1")
    assert versions.PREVIOUS_RELEASE in text and versions.RELEASE in text
    assert "temporal workflow terminate --workflow-id run-1" in text
    assert "steward launch" in text


def test_every_retired_flag_has_a_date_and_none_is_read_as_a_branch():
    flags = [*versions.AT_START, versions.AT_FIRST_TEND]
    assert len({f.id for f in flags}) == len(flags)
    assert all(f.may_go > versions.RELEASE_DATE for f in flags)
    # Every flag still read as a branch is listed with the date its old branch goes.
    live = {f.id for f in versions.LIVE}
    assert all(f.old_branch_goes > versions.RELEASE_DATE for f in versions.LIVE)
    source = (
        Path(__file__).resolve().parents[2] / "workflows/run/eval_run_versions.py"
    ).read_text()
    patched = set(re.findall(r"workflow\.patched\(([A-Z_]+)\)", source))
    named = {getattr(versions, name) for name in patched} - {
        versions.SUPPORTED_SINCE,
        versions.RELEASE_MARKER,
    }
    assert named == live, named ^ live
    # Old branches are deleted: nothing in the workflows reads `workflow.patched` but the
    # versions module (a new flag is added there, with its date).
    root = Path(__file__).resolve().parents[2] / "workflows"
    readers = [
        p.relative_to(root).as_posix()
        for p in root.rglob("*.py")
        if "workflow.patched(" in p.read_text() or "deprecate_patch(" in p.read_text()
    ]
    assert readers == ["run/eval_run_versions.py"], readers
