"""The runs this host supervises and where each is notified, as last seen, kept in Steward's data
directory for the watchdog (`steward doctor --notify`): when the Steward worker or Temporal is
down, nothing else can say which runs are left unsupervised or whom to tell.

Written by the notify activity (the destinations it just read) and by the watchdog whenever
Temporal answers (the live runs, read afresh from their workspaces). The destinations are
Apprise URLs that may hold tokens: the file is created 0600, replaced atomically, and never
logged or printed; a run that is no longer live leaves it at the watchdog's next check.
"""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

from pydantic import BaseModel, Field

from steward.workflows.policy.outage import WatchedRun

RECORD = "supervised-runs.json"
# Runs the notify activity records and no watchdog check has tidied (it keeps only live runs)
# stop at the most recently seen this many.
KEPT_RUNS = 200


class RecordedRun(BaseModel):
    workflow_id: str
    workspace: str
    state: str = "running"
    destinations: list[str] = Field(default_factory=list)
    seen_at: datetime | None = None

    def watched(self) -> WatchedRun:
        return WatchedRun(workflow_id=self.workflow_id, workspace=self.workspace, state=self.state)


def steward_data_dir() -> Path:
    """Steward's data directory as worker/connect.py decides it (STEWARD_DATA_DIR, else the
    platform's), for the activity that has no import of the worker."""
    if os.environ.get("STEWARD_DATA_DIR"):
        return Path(os.environ["STEWARD_DATA_DIR"]).expanduser()
    from platformdirs import user_data_path

    return user_data_path("steward")


def write_private(path: Path, text: str) -> None:
    """Replace `path` atomically with a file only its owner may read (0600 from its creation)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    descriptor = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.fchmod(descriptor, 0o600)  # an umask or a leftover file must not widen it
        with os.fdopen(descriptor, "w") as handle:
            handle.write(text)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    os.replace(tmp, path)


@contextmanager
def locked(data: Path, name: str = RECORD) -> Iterator[None]:
    """One writer at a time (the activity and a watchdog check may meet)."""
    data.mkdir(parents=True, exist_ok=True)
    with open(data / f".{name}.lock", "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def read(data: Path) -> dict[str, RecordedRun]:
    """workspace -> its record (empty when there is none or it cannot be read)."""
    try:
        raw = json.loads((data / RECORD).read_text())
        return {r["workspace"]: RecordedRun.model_validate(r) for r in raw.get("runs", [])}
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return {}


def _write(data: Path, runs: dict[str, RecordedRun]) -> None:
    document = {"runs": [run.model_dump(mode="json") for run in runs.values()]}
    write_private(data / RECORD, json.dumps(document, indent=1))


def remember(data: Path, workflow_id: str, workspace: str, destinations: list[str]) -> None:
    """The notify activity's update: this run is live and notified here."""
    with locked(data):
        runs = read(data)
        previous = runs.get(workspace)
        runs[workspace] = RecordedRun(
            workflow_id=workflow_id,
            workspace=workspace,
            state=previous.state if previous else "running",
            destinations=destinations,
            seen_at=datetime.now(UTC),
        )
        if len(runs) > KEPT_RUNS:
            newest = sorted(
                runs.values(), key=lambda r: r.seen_at or datetime.min.replace(tzinfo=UTC)
            )
            runs = {r.workspace: r for r in newest[-KEPT_RUNS:]}
        _write(data, runs)


def replace(data: Path, live: list[tuple[WatchedRun, list[str] | None]]) -> dict[str, RecordedRun]:
    """The watchdog's update while Temporal answers: exactly the live runs, each with its
    destinations as just read (None: its options could not be read, so the recorded ones are
    kept). Returns the record as it was (a "back" goes to whoever heard of the outage)."""
    with locked(data):
        before = read(data)
        now = datetime.now(UTC)
        runs = {}
        for run, destinations in live:
            kept = before.get(run.workspace)
            runs[run.workspace] = RecordedRun(
                **run.model_dump(),
                destinations=destinations
                if destinations is not None
                else (kept.destinations if kept else []),
                seen_at=now,
            )
        _write(data, runs)
    return before
