"""The workspace's files a run keeps: status.md (rewritten atomically) and journal.jsonl
(appended in whole lines, each event once), plus tidying superseded logs."""

from __future__ import annotations

import json
import os
from pathlib import Path

import structlog
from temporalio import activity

from workflows.contracts import (
    CurateRequest,
    CurateResult,
    JournalEvent,
    TidyRequest,
    WorkspaceWrite,
)
from workflows.names import Activity
from workflows.status_view import render_status_markdown

from .observe import logs_by_identifier
from .options import OptionsError, load_options

log = structlog.get_logger("steward.workspace")

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


def read_journal(workspace: Path, since: int = 0) -> list[dict]:
    """The journal's events numbered above `since` (a torn line is skipped)."""
    path = workspace / JOURNAL
    events = []
    if not path.is_file():
        return events
    for line in path.read_text().splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if isinstance(event, dict) and isinstance(event.get("seq"), int) and event["seq"] > since:
            events.append(event)
    return events


@activity.defn(name=Activity.WRITE_WORKSPACE)
def write_workspace(request: WorkspaceWrite) -> int:
    workspace = Path(request.workspace)
    write_atomic(workspace / STATUS, render_status_markdown(request.status))
    written = append_journal(workspace, request.journal)
    _write_analysis(workspace, request.status)
    _sync(workspace, request.status.state.log_dir)
    return written


def _write_analysis(workspace: Path, status) -> None:
    """analysis.md's facts follow the status; a failure there never fails the tend."""
    from .analysis import write_analysis

    try:
        write_analysis(workspace, status)
    except Exception as err:  # noqa: BLE001
        log.warning("analysis.md not updated", problem=str(err))


def _sync(workspace: Path, log_dir: str) -> None:
    """Mirror the workspace's files to `sync` (default: the log dir). A mirror that cannot be
    written never fails the tend: the workspace itself is the record."""
    from .sync import sync_workspace

    try:
        target = load_options(workspace).sync or log_dir
    except OptionsError:
        target = log_dir
    if not target:
        return
    try:
        sync_workspace(str(workspace), target)
    except Exception as err:  # noqa: BLE001
        log.warning("sync failed", target=target, problem=str(err))


def archive_dir(log_dir: str) -> Path:
    """Where superseded logs go: `logs-archive/` beside `logs/` (never deleted)."""
    directory = Path(log_dir)
    return directory.with_name(directory.name + "-archive")


def archive(path: str, log_dir: str) -> str:
    target = archive_dir(log_dir) / Path(path).name
    target.parent.mkdir(parents=True, exist_ok=True)
    os.replace(path, target)
    return str(target)


@activity.defn(name=Activity.TIDY_LOGS)
def tidy_logs(request: TidyRequest) -> list[str]:
    """Move logs superseded by a newer success log of the same task (what a resumed worker
    leaves behind) to the archive, so the log dir holds each sample exactly once."""
    moved = []
    logs = logs_by_identifier(request.log_dir, fresh_status=True)
    for identifier in request.identifiers:
        entries = logs.get(identifier, [])
        successes = [info.path for info in entries if info.status == "success"]
        if not successes:
            continue
        keep = successes[-1]
        for info in entries:
            if info.path != keep and Path(info.path).exists():
                archive(info.path, request.log_dir)
                moved.append(info.path)
    return moved


@activity.defn(name=Activity.CURATE_LOGS)
def curate_logs(request: CurateRequest) -> CurateResult:
    """At signoff: every log in the log dir that is not a task's final log goes to the archive;
    with `publish`, the final logs are copied into the configured log store."""
    result = CurateResult()
    keep = {str(Path(p)) for p in request.keep}
    directory = Path(request.log_dir)
    for path in sorted(directory.glob("*.eval")) if directory.is_dir() else []:
        if str(path) not in keep:
            result.archived.append(archive(str(path), request.log_dir))
    if request.publish:
        store = load_options(Path(request.workspace)).log_store
        if not store:
            result.problem = "no log_store is configured, so nothing was published"
            return result
        from .log_store import publish

        try:
            result.published = publish(sorted(keep), store)
        except ValueError as err:  # a Flow store without the flow extra: say so, don't retry
            result.problem = str(err)
    return result
