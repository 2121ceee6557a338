"""Workspace files: the journal gets each event once, in whole lines; ids are stable; a workspace
that cannot be written fails the write at once, naming the file."""

from __future__ import annotations

import json
import subprocess
import time
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

import pytest
from temporalio.exceptions import ApplicationError

from steward.activities.workspace.workspace import workflow_id_for, workspace_id
from steward.activities.workspace.workspace_files import (
    append_journal,
    last_journal_seq,
    write_workspace,
)
from steward.workflows.activity_io import WorkspaceWrite
from steward.workflows.contracts import JournalEvent, RunState, RunStatus
from steward.workflows.policy import notices


def _events(*seqs: int) -> list[JournalEvent]:
    return [JournalEvent(seq=s, at=datetime.now(UTC), event="tend", data={"n": s}) for s in seqs]


def test_a_retried_journal_write_adds_nothing_twice(tmp_path: Path):
    assert append_journal(tmp_path, _events(1, 2, 3)) == 3
    assert append_journal(tmp_path, _events(2, 3, 4)) == 1  # the retry of a half-acknowledged write
    lines = (tmp_path / "journal.jsonl").read_text().splitlines()
    assert [json.loads(line)["seq"] for line in lines] == [1, 2, 3, 4]
    assert last_journal_seq(tmp_path / "journal.jsonl") == 4


def test_last_seq_skips_a_torn_last_line(tmp_path: Path):
    journal = tmp_path / "journal.jsonl"
    append_journal(tmp_path, _events(1, 2))
    with open(journal, "a") as handle:
        handle.write('{"seq": 3, "at"')  # a crash mid-line elsewhere must not hide what was written
    assert last_journal_seq(journal) == 2
    append_journal(tmp_path, _events(3))
    lines = journal.read_text().splitlines()
    assert json.loads(lines[-1])["seq"] == 3 and lines[-2] == '{"seq": 3, "at"'


def test_workspace_id_is_stable(tmp_path: Path):
    (tmp_path / "My Evals").mkdir()
    workspace = tmp_path / "My Evals"
    first = workflow_id_for(workspace)
    assert first == workflow_id_for(workspace) and first.startswith("steward-my-evals-")
    assert first.endswith(workspace_id(workspace))


@contextmanager
def _immutable(*paths: Path):
    """`chattr +i` on `paths` (root ignores file modes; the immutable flag stops it too), undone
    on the way out whatever happens."""
    try:
        done = subprocess.run(["chattr", "+i", *map(str, paths)], capture_output=True, text=True)
    except FileNotFoundError:
        pytest.skip("no chattr here: cannot make a directory unwritable for root")
    try:
        if done.returncode != 0:
            pytest.skip(f"chattr +i does not work here: {done.stderr.strip()}")
        yield
    finally:
        subprocess.run(["chattr", "-i", *map(str, paths)], capture_output=True)


def _write(workspace: Path, *seqs: int) -> int:
    status = RunStatus(
        workflow_id="run-1", workspace=str(workspace), state=RunState(), tend_interval=600
    )
    return write_workspace(
        WorkspaceWrite(workspace=str(workspace), status=status, journal=_events(*seqs))
    )


def test_an_unwritable_workspace_fails_the_write_at_once_with_one_sentence(tmp_path: Path):
    assert _write(tmp_path, 1, 2) == 2
    journal = tmp_path / "journal.jsonl"
    before = journal.read_text()
    with _immutable(tmp_path, journal):
        started = time.monotonic()
        with pytest.raises(ApplicationError) as failed:
            _write(tmp_path, 1, 2, 3, 4)
        assert time.monotonic() - started < 5  # bounded: the workflow's retry decides the rest
    assert failed.value.message == (
        "cannot write status.md: operation not permitted; "
        "cannot write journal.jsonl: operation not permitted"
    )
    assert journal.read_text() == before and not (tmp_path / ".status.md.tmp").exists()
    assert _write(tmp_path, 1, 2, 3, 4) == 2  # writable again: what was kept, once
    assert [json.loads(line)["seq"] for line in journal.read_text().splitlines()] == [1, 2, 3, 4]


def test_a_journal_that_can_be_appended_is_even_when_status_md_cannot(tmp_path: Path):
    _write(tmp_path, 1)
    with _immutable(tmp_path):  # no new entries (status.md's temp file); files stay writable
        with pytest.raises(ApplicationError) as failed:
            _write(tmp_path, 1, 2)
    assert failed.value.message == "cannot write status.md: operation not permitted"
    assert last_journal_seq(tmp_path / "journal.jsonl") == 2
    assert _write(tmp_path, 1, 2, 3) == 1


def test_an_unwritable_workspace_is_told_once_per_episode():
    state = RunState()
    told = notices.workspace_notice(state, "cannot write status.md: permission denied")
    assert told is not None and "cannot write status.md: permission denied" in told.text
    state.workspace_problem = "cannot write status.md: permission denied"
    assert notices.workspace_notice(state, "cannot write journal.jsonl: disk full") is None
    assert notices.message("ws", [told])[0] == "Steward · ws: cannot write the workspace"
    other = notices.tend_problem_notice(state, "observing the run failed: boom")
    assert notices.message("ws", [told, other])[0] == "Steward · ws: cannot tend"
    state.workspace_problem = None  # written again: a later episode is told again
    assert notices.workspace_notice(state, "cannot write status.md: permission denied")


def _write_at(workspace: Path, journal_seq: int, *seqs: int, phase: str = "running") -> int:
    state = RunState(started_at=datetime(2026, 12, 4, tzinfo=UTC), journal_seq=journal_seq)
    state.phase = phase
    status = RunStatus(
        workflow_id="run-1", workspace=str(workspace), state=state, tend_interval=600
    )
    return write_workspace(
        WorkspaceWrite(workspace=str(workspace), status=status, journal=_events(*seqs))
    )


def test_a_write_that_lands_after_a_newer_one_puts_nothing_older_back(tmp_path: Path):
    """A write the workflow stopped waiting for (cancelled while it ran) can still finish after
    the next: it must neither append its events after newer ones nor restore an older status."""
    assert _write_at(tmp_path, 5, 4, 5, phase="cancelled") == 2  # the newer write, first
    assert _write_at(tmp_path, 4, 4, phase="running") == 0  # the older write, landing late
    journal = [json.loads(line) for line in (tmp_path / "journal.jsonl").read_text().splitlines()]
    assert [e["seq"] for e in journal] == [4, 5]
    assert "cancelled" in (tmp_path / "status.md").read_text()
    assert "running" not in (tmp_path / "status.md").read_text().splitlines()[0]
    # a later run in the same workspace starts its seqs again and is written
    later = RunState(started_at=datetime(2026, 12, 5, tzinfo=UTC), journal_seq=1)
    status = RunStatus(workflow_id="run-2", workspace=str(tmp_path), state=later, tend_interval=600)
    write_workspace(WorkspaceWrite(workspace=str(tmp_path), status=status, journal=[]))
    assert "run-2" in (tmp_path / "status.md").read_text()
