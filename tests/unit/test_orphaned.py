"""When a workspace is no longer its run's own (activities/observe.orphaned)."""

from __future__ import annotations

import json

from steward.activities.processes.observe import orphaned


def _workspace(tmp_path, ident: str):
    workspace = tmp_path / "ws"
    (workspace / ".steward").mkdir(parents=True)
    (workspace / ".steward" / "workspace.json").write_text(json.dumps({"id": ident}))
    return workspace


def test_its_own_workspace_is_not_orphaned(tmp_path):
    workspace = _workspace(tmp_path, "abc123")
    assert orphaned(str(workspace), "steward-ws-abc123") is None


def test_a_deleted_workspace_or_id_record_is_orphaned(tmp_path):
    workspace = _workspace(tmp_path, "abc123")
    (workspace / ".steward" / "workspace.json").unlink()
    assert "was replaced" in orphaned(str(workspace), "steward-ws-abc123")
    assert "no longer exists" in orphaned(str(tmp_path / "gone"), "steward-ws-abc123")


def test_a_workspace_that_another_run_took_over_is_orphaned(tmp_path):
    workspace = _workspace(tmp_path, "fff999")
    assert "another run (id fff999)" in orphaned(str(workspace), "steward-ws-abc123")


def test_an_unreadable_record_is_not_a_verdict(tmp_path):
    workspace = _workspace(tmp_path, "abc123")
    (workspace / ".steward" / "workspace.json").write_text("{not json")
    assert orphaned(str(workspace), "steward-ws-abc123") is None
