"""What a host must see before it takes a run's task workers (host-check-v1): the definition,
readable, and the log storage, writable; else one sentence naming the path and the fix."""

from __future__ import annotations

import os

import pytest

from steward.activities.capacity.hosts import storage_problem
from steward.workflows.activity_io import HostStorageRequest


@pytest.fixture
def workspace(tmp_path, monkeypatch):
    monkeypatch.setenv("STEWARD_HOST_ID", "h9")
    (tmp_path / "evalset.py").write_text("# a definition\n")
    (tmp_path / "logs").mkdir()
    return tmp_path


def ask(workspace, definition="evalset.py", log_dir=None):
    return storage_problem(
        HostStorageRequest(
            workspace=str(workspace),
            definition=definition,
            log_dir=log_dir or str(workspace / "logs"),
        )
    )


def test_a_host_that_sees_both_is_fit(workspace):
    assert ask(workspace) is None
    assert ask(workspace, log_dir=str(workspace / "logs" / "not-yet-made")) is None


def test_a_missing_definition_is_named_with_the_fix(workspace):
    problem = ask(workspace, definition="other.py")
    assert problem == (
        f"host h9 cannot read the definition {workspace / 'other.py'}: mount the workspace at "
        "the same path there (shared_storage), or leave the host out of `hosts`"
    )


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes anywhere")
def test_an_unwritable_log_dir_is_named(workspace):
    (workspace / "logs").chmod(0o500)
    try:
        problem = ask(workspace)
    finally:
        (workspace / "logs").chmod(0o700)
    assert problem and f"cannot write the log directory {workspace / 'logs'}" in problem


def test_a_log_dir_whose_parent_is_missing_is_named(workspace):
    problem = ask(workspace, log_dir=str(workspace / "nowhere" / "logs"))
    assert problem and "host h9 cannot write the log directory" in problem
