"""The workspace's files a run keeps: status.md (rewritten atomically) and journal.jsonl
(appended in whole lines, each event once), written at each tend with analysis.md's facts and
the mirror beside the logs.

A file that cannot be written fails the write, after a few tries, with one sentence naming it
("cannot write status.md: permission denied"); the workflow records the reason and keeps its
journal queued until a later write succeeds."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import time
from collections.abc import Iterator
from pathlib import Path

import structlog
from temporalio import activity
from temporalio.exceptions import ApplicationError

from steward.activities.logs.paths import write_atomic
from steward.activities.logs.sync import sync_workspace
from steward.activities.workspace.analysis import write_analysis
from steward.activities.workspace.options import OptionsError, load_options
from steward.workflows.activity_io import WorkspaceWrite
from steward.workflows.contracts import JournalEvent
from steward.workflows.names import Activity
from steward.workflows.views.status_view import render_status_markdown

log = structlog.get_logger("steward.workspace")

JOURNAL = "journal.jsonl"
STATUS = "status.md"
# Which state status.md shows: (the run's start, its journal seq). A write the workflow gave up
# on (cancelled while it ran) can land after a newer one; it must not put an older state back.
STATUS_VERSION = ".steward/status-version.json"
WRITE_LOCK = ".steward/write.lock"


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


WRITE_TRIES = 3  # a workspace that cannot be written is tried this often, 1 s then 2 s apart


@activity.defn(name=Activity.WRITE_WORKSPACE)
def write_workspace(request: WorkspaceWrite) -> int:
    """Write the workspace, trying a few times; then fail for good (non-retryable: the workflow
    records the reason and goes on). Any other failure — the worker dying mid-write, a
    timeout — is retried by Temporal until it succeeds, as every activity of the run is."""
    for attempt in range(1, WRITE_TRIES + 1):
        try:
            return _write_once(request)
        except ApplicationError:
            if attempt == WRITE_TRIES:
                raise
            time.sleep(attempt)
    raise AssertionError("unreachable")


@contextlib.contextmanager
def _one_writer(workspace: Path) -> Iterator[None]:
    """Writes to one workspace one at a time (a cancelled write may still be running beside
    the next). A workspace where the lock cannot be made is written unlocked: the write itself
    then says what cannot be written."""
    try:
        (workspace / WRITE_LOCK).parent.mkdir(parents=True, exist_ok=True)
        handle = open(workspace / WRITE_LOCK, "a")  # noqa: SIM115
    except OSError:
        yield
        return
    with handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield


def _status_version(request: WorkspaceWrite) -> list:
    state = request.status.state
    return [state.started_at.isoformat() if state.started_at else "", state.journal_seq]


def _is_older_than_written(workspace: Path, version: list) -> bool:
    try:
        written = json.loads((workspace / STATUS_VERSION).read_text())
    except (OSError, ValueError):
        return False
    return isinstance(written, list) and version < written


def _write_once(request: WorkspaceWrite) -> int:
    workspace = Path(request.workspace)
    with _one_writer(workspace):
        return _write_locked(workspace, request)


def _write_locked(workspace: Path, request: WorkspaceWrite) -> int:
    written, problems = 0, list[str]()
    version = _status_version(request)
    stale = _is_older_than_written(workspace, version)
    if not stale:
        try:
            write_atomic(workspace / STATUS, render_status_markdown(request.status))
        except OSError as err:
            problems.append(unwritable(STATUS, err))
        else:
            with contextlib.suppress(OSError):
                write_atomic(workspace / STATUS_VERSION, json.dumps(version))
    try:
        # Tried even when status.md was not replaced: the journal is the record. An event
        # appended here is skipped when the write is retried.
        written = append_journal(workspace, request.journal)
    except OSError as err:
        problems.append(unwritable(JOURNAL, err))
    if problems:
        log.warning("workspace not written", workspace=str(workspace), problems=problems)
        raise ApplicationError("; ".join(problems), type="WorkspaceUnwritable", non_retryable=True)
    if not stale:
        _write_analysis(workspace, request.status)
        _sync(workspace, request.status.state.log_dir)
    return written


def unwritable(name: str, err: OSError) -> str:
    """One sentence naming the file, never a traceback: "cannot write status.md: permission
    denied"."""
    return f"cannot write {name}: {(err.strerror or str(err)).lower()}"


def _write_analysis(workspace: Path, status) -> None:
    """analysis.md's facts follow the status; a failure there never fails the tend."""
    try:
        write_analysis(workspace, status)
    except Exception as err:  # noqa: BLE001
        log.warning("analysis.md not updated", problem=str(err))


def _sync(workspace: Path, log_dir: str) -> None:
    """Mirror the workspace's files to `sync` (default: the log dir). A mirror that cannot be
    written never fails the tend: the workspace itself is the record."""
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
