"""Compact a scan's results from the tables it wrote, not by reading a thousand files back.

scout records each transcript's results in a parquet file of its own and, when the scan ends,
compacts them into one file per scanner (`scanner_table`), reading every file back: ~5 ms of
CPU a file here, so 4.8 s for a part of 1,000 transcripts, at the very end of the run, with
nothing else left to do. The child of a scan (activities/scan/scan_process.py) keeps the table of
each result it wrote (`_records_to_arrow` is what `RecorderBuffer.record` writes), and at the
final sync joins the tables of the files the buffer holds into one file and hands that one to
scout's own compaction, so the output is scout's (its schema rules, its writer) from one read.

Whenever it cannot be sure of that (a file it did not write, a prior output to merge, tables
that will not join, more than MAX_CACHED_BYTES held), scout compacts as it always does.
Applied in the scan's own process only; a scout whose private functions moved is left as is.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import structlog

log = structlog.get_logger("steward.scan")

MAX_CACHED_BYTES = 256 * 1024 * 1024  # past this the child holds no more tables

_tables: dict[tuple[str, str], Any] = {}  # (scanner, transcript id) -> the table written
_held = {"bytes": 0, "over": False, "installed": False}


def compact_from_memory() -> bool:
    """Install the table cache and the compaction that uses it; whether they could be."""
    try:
        from inspect_scout._recorder import buffer, file
    except ImportError:
        return False
    if not (
        callable(getattr(buffer, "_records_to_arrow", None))
        and callable(getattr(file, "scanner_table", None))
        and callable(getattr(buffer, "_sanitize_component", None))
    ):
        log.info("scout's result buffer moved; its compaction reads its files back")
        return False
    if _held["installed"]:
        return True
    to_arrow, compact = buffer._records_to_arrow, file.scanner_table

    def records_to_arrow(records: list[dict[str, Any]]) -> Any:
        table = to_arrow(records)
        keep(records, table)
        return table

    def scanner_table(buffer_dir: Any, scanner: str, output_file: str, **kwargs: Any) -> bool:
        if kwargs.get("extra_inputs"):  # a prior output to merge: scout's own rules
            return compact(buffer_dir, scanner, output_file, **kwargs)
        sdir = Path(buffer_dir.as_posix()) / f"scanner={buffer._sanitize_component(scanner)}"
        joined = joined_tables(scanner, [p.stem for p in sdir.glob("*.parquet")])
        if joined is None:
            return compact(buffer_dir, scanner, output_file, **kwargs)
        from upath import UPath

        with tempfile.TemporaryDirectory(prefix="steward-compact-") as scratch:
            one = Path(scratch) / sdir.name
            one.mkdir()
            write_one(joined, one / "joined.parquet")
            return compact(UPath(scratch), scanner, output_file, **kwargs)

    buffer._records_to_arrow = records_to_arrow
    file.scanner_table = scanner_table
    _held["installed"] = True
    return True


def keep(records: list[dict[str, Any]], table: Any) -> None:
    """Hold the table of one transcript's results for one scanner (what scout writes to
    `<transcript_id>.parquet`), within MAX_CACHED_BYTES."""
    if _held["over"] or not records:
        return
    key = (str(records[0].get("scanner_key")), str(records[0].get("transcript_id")))
    if any((str(r.get("scanner_key")), str(r.get("transcript_id"))) != key for r in records):
        return  # not one file's worth: the compaction will not find it and reads the files
    _held["bytes"] += table.nbytes
    if _held["bytes"] > MAX_CACHED_BYTES:
        _held["over"] = True
        _tables.clear()
        return
    _tables[key] = table


def joined_tables(scanner: str, transcript_ids: list[str]) -> Any | None:
    """The held tables of these transcripts joined into one, or None when one is missing or
    they will not join (the compaction then reads the files)."""
    import pyarrow as pa

    if _held["over"] or not transcript_ids:
        return None
    tables = [_tables.get((scanner, tid)) for tid in transcript_ids]
    if any(table is None for table in tables):
        return None
    try:
        return pa.concat_tables(tables, promote_options="permissive")
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
        return None


def write_one(table: Any, path: Path) -> None:
    import pyarrow.parquet as pq

    pq.write_table(table, str(path), compression="zstd", use_dictionary=True)
