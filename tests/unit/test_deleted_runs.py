"""Issue 28 item 4, without Temporal: the runs this CLI deleted are tombstoned by run id (kept a
day), and a command that only reads says there is nothing without starting the embedded server
when that is known locally (no store at all, a run deleted here and nothing launched since, a
workspace that never journalled)."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime, timedelta

import pytest

from steward.cli.context import Context, nothing_there
from steward.worker import deleted_runs
from steward.worker.connect import target_for
from steward.workflows.options import StewardOptions


@pytest.fixture
def data(tmp_path, monkeypatch):
    path = tmp_path / "data"
    monkeypatch.setenv("STEWARD_DATA_DIR", str(path))
    for name in [k for k in os.environ if k.startswith("STEWARD_TEMPORAL")]:
        monkeypatch.delenv(name)
    return path


def test_tombstones_are_by_run_id_and_kept_a_day(data):
    deleted_runs.remember("steward-ws-1", ["run-a", "run-b"])
    assert deleted_runs.is_deleted("run-a") and not deleted_runs.is_deleted("run-c")
    assert not deleted_runs.is_deleted(None)
    assert deleted_runs.deleted_at("steward-ws-1") is not None
    assert deleted_runs.deleted_at("steward-other") is None
    record = json.loads((data / deleted_runs.RECORD).read_text())
    record["runs"]["run-a"]["at"] = (datetime.now(UTC) - timedelta(days=2)).isoformat()
    (data / deleted_runs.RECORD).write_text(json.dumps(record))
    assert not deleted_runs.is_deleted("run-a") and deleted_runs.is_deleted("run-b")
    (data / deleted_runs.RECORD).write_text("not json")
    assert deleted_runs.read() == {}


def test_nothing_there_is_said_without_the_server_only_when_known(data, tmp_path):
    workspace = tmp_path / "ws"
    workspace.mkdir()
    options = StewardOptions()
    ctx = Context(workspace, options, target_for(options), "steward-ws-1")
    assert ctx.target.embedded
    # No store: no run anywhere.
    assert "No run has been launched" in nothing_there(ctx)
    (data / "temporal.db").write_text("")
    # A store, but this workspace never journalled: never launched from here.
    (workspace / "journal.jsonl").write_text("")
    assert "No run has been launched" in nothing_there(ctx)
    (workspace / "journal.jsonl").write_text('{"event": "launched"}\n')
    assert nothing_there(ctx) is None  # it may have a run: ask Temporal
    deleted_runs.remember("steward-ws-1", ["run-a"])
    assert "was deleted from the list" in nothing_there(ctx)
    later = (datetime.now(UTC) + timedelta(seconds=5)).timestamp()
    os.utime(workspace / "journal.jsonl", (later, later))  # journalled since: launched again
    assert nothing_there(ctx) is None
