"""Workspace files: the journal gets each event once, in whole lines; ids are stable."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

from activities.workspace import workflow_id_for, workspace_id
from activities.workspace_files import append_journal, last_journal_seq
from workflows.contracts import JournalEvent


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
