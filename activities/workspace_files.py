"""The workspace's files a run keeps: status.md (rewritten atomically) and journal.jsonl
(appended in whole lines, each event once), plus tidying superseded logs."""

from __future__ import annotations

import json
import os
from pathlib import Path

from temporalio import activity

from workflows.contracts import JournalEvent, TidyRequest, WorkspaceWrite
from workflows.status_view import render_status_markdown

from .observe import logs_by_identifier

JOURNAL = "journal.jsonl"
STATUS = "status.md"


def write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    with open(tmp, "w") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)


def last_journal_seq(path: Path) -> int:
    """The highest `seq` already in the journal (read from the end: journals grow long)."""
    if not path.is_file() or path.stat().st_size == 0:
        return 0
    with open(path, "rb") as handle:
        handle.seek(0, os.SEEK_END)
        end = handle.tell()
        handle.seek(max(0, end - 65536))
        tail = handle.read().decode("utf-8", errors="replace").splitlines()
    for line in reversed(tail):
        try:
            seq = json.loads(line).get("seq")
        except (ValueError, AttributeError):
            continue
        if isinstance(seq, int):
            return seq
    return 0


def _ends_with_newline(path: Path) -> bool:
    with open(path, "rb") as handle:
        handle.seek(-1, os.SEEK_END)
        return handle.read(1) == b"\n"


def journal_line(event: JournalEvent) -> str:
    return json.dumps(
        {"seq": event.seq, "at": event.at.isoformat(), "event": event.event, **event.data},
        default=str,
    )


def append_journal(workspace: Path, events: list[JournalEvent]) -> int:
    path = workspace / JOURNAL
    last = last_journal_seq(path)
    fresh = [e for e in events if e.seq > last]  # a retried write adds nothing twice
    if fresh:
        # A line torn by a crash mid-write stays its own (unparseable) line, not glued to ours.
        torn = path.is_file() and path.stat().st_size > 0 and not _ends_with_newline(path)
        with open(path, "a") as handle:
            handle.write(("\n" if torn else "") + "".join(journal_line(e) + "\n" for e in fresh))
            handle.flush()
            os.fsync(handle.fileno())
    return len(fresh)


@activity.defn(name="write_workspace")
def write_workspace(request: WorkspaceWrite) -> int:
    workspace = Path(request.workspace)
    write_atomic(workspace / STATUS, render_status_markdown(request.status))
    return append_journal(workspace, request.journal)


@activity.defn(name="tidy_logs")
def tidy_logs(request: TidyRequest) -> list[str]:
    """Remove logs superseded by a newer success log of the same task (what a resumed
    worker leaves behind), so the log dir holds each sample exactly once."""
    removed = []
    logs = logs_by_identifier(request.log_dir, fresh_status=True)
    for identifier in request.identifiers:
        entries = logs.get(identifier, [])
        successes = [info.path for info in entries if info.status == "success"]
        if not successes:
            continue
        keep = successes[-1]
        for info in entries:
            if info.path != keep:
                Path(info.path).unlink(missing_ok=True)
                removed.append(info.path)
    return removed
