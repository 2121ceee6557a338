"""A scan's results compacted from the tables its process wrote are what scout's own
compaction makes of the files (row for row), and a file the process did not write, or tables
that will not join, leave the compaction to scout."""

from __future__ import annotations

import uuid
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from inspect_scout._recorder import buffer, file
from upath import UPath

from steward.activities.scan import scout_compaction

SCANNER = "scoring_integrity"


@pytest.fixture
def installed(monkeypatch):
    """Installed for the test only; scout's own functions returned after it."""
    original = file.scanner_table
    monkeypatch.setattr(buffer, "_records_to_arrow", buffer._records_to_arrow)
    monkeypatch.setattr(file, "scanner_table", file.scanner_table)
    monkeypatch.setattr(scout_compaction, "_tables", {})
    monkeypatch.setattr(scout_compaction, "_held", {"bytes": 0, "over": False, "installed": False})
    assert scout_compaction.compact_from_memory()
    return original


def _record(tid: str, value, explanation: str | None, **extra) -> dict:
    return {
        "transcript_id": tid,
        "transcript_task_id": f"s-{tid[:4]}",
        "transcript_task_repeat": 1,
        "transcript_metadata": {"target": "4", "score_match": "C"},
        "transcript_score": extra.pop("score", "C"),
        "scanner_key": SCANNER,
        "value": value,
        "explanation": explanation,
        **extra,
    }


def _write(buffer_dir: Path, records: list[dict]) -> None:
    """As scout's RecorderBuffer.record writes one transcript's results."""
    table = buffer._records_to_arrow(records)
    directory = buffer_dir / f"scanner={SCANNER}"
    directory.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, directory / f"{records[0]['transcript_id']}.parquet", compression="zstd")


def _rows(path: Path) -> list[dict]:
    return sorted(pq.read_table(path).to_pylist(), key=lambda r: (r["transcript_id"], str(r)))


def _transcripts(buffer_dir: Path, count: int) -> None:
    for i in range(count):
        tid = str(uuid.uuid4())
        records = [_record(tid, i % 7 == 0, f"judged {i}" if i % 3 else None)]
        if i == 5:  # two results for one transcript
            records.append(_record(tid, None, None, score=0.5))
        _write(buffer_dir, records)


def test_compacted_from_memory_as_scout_compacts_the_files(installed, tmp_path, monkeypatch):
    buffer_dir = tmp_path / "buffer"
    _transcripts(buffer_dir, 40)
    read_back = []
    monkeypatch.setattr(
        pq, "read_schema", lambda path, *a, **k: read_back.append(path) or PQ_READ_SCHEMA(path)
    )
    assert file.scanner_table(UPath(buffer_dir), SCANNER, str(tmp_path / "ours.parquet"))
    assert len(read_back) == 1  # one file read, not forty
    monkeypatch.setattr(pq, "read_schema", PQ_READ_SCHEMA)
    assert installed(UPath(buffer_dir), SCANNER, str(tmp_path / "scouts.parquet"))
    ours, scouts = _rows(tmp_path / "ours.parquet"), _rows(tmp_path / "scouts.parquet")
    assert len(ours) == 41
    assert ours == scouts


PQ_READ_SCHEMA = pq.read_schema


def test_a_file_it_did_not_write_leaves_the_compaction_to_scout(installed, tmp_path):
    buffer_dir = tmp_path / "buffer"
    _transcripts(buffer_dir, 5)
    stranger = str(uuid.uuid4())  # written by another process: no table here
    table = scout_compaction._tables.popitem()[1]
    pq.write_table(table, buffer_dir / f"scanner={SCANNER}" / f"{stranger}.parquet")
    assert file.scanner_table(UPath(buffer_dir), SCANNER, str(tmp_path / "out.parquet"))
    assert len(_rows(tmp_path / "out.parquet")) == 6


def test_tables_that_will_not_join_leave_the_compaction_to_scout(installed, tmp_path):
    buffer_dir = tmp_path / "buffer"
    _write(buffer_dir, [_record(str(uuid.uuid4()), True, "x", transcript_task_repeat=1)])
    _write(buffer_dir, [_record(str(uuid.uuid4()), "maybe", "y", transcript_task_repeat="1")])
    held = [transcript for _, transcript in scout_compaction._tables]
    assert scout_compaction.joined_tables(SCANNER, held) is None
    out = tmp_path / "out.parquet"
    assert file.scanner_table(UPath(buffer_dir), SCANNER, str(out))
    assert installed(UPath(buffer_dir), SCANNER, str(tmp_path / "scouts.parquet"))
    assert _rows(out) == _rows(tmp_path / "scouts.parquet")


def test_past_its_memory_bound_it_holds_nothing(installed, tmp_path, monkeypatch):
    monkeypatch.setattr(scout_compaction, "MAX_CACHED_BYTES", 1)
    _transcripts(tmp_path / "buffer", 3)
    assert scout_compaction._tables == {}
    out = tmp_path / "out.parquet"
    assert file.scanner_table(UPath(tmp_path / "buffer"), SCANNER, str(out))
    assert len(_rows(out)) == 3
