"""The runs `steward runs delete` deleted, as this machine's CLI remembers them.

Temporal deletes a workflow execution asynchronously: for some 30 s after the delete both the
list (visibility) and `describe` still return it, so `runs` and `status` would show a run the
user was just told is gone. The delete therefore leaves a tombstone here, one per execution
(workflow id + run id), and the CLI reads past tombstoned executions: `runs` does not list them,
`status` and the other run commands treat the workspace's run as deleted, `launch` starts a
new one. A run id is never reused, so a tombstone can never hide a run launched since (a new
run of the same workspace has the same workflow id but a new run id). Tombstones are kept a
day, long after Temporal has caught up, and then forgotten.

Why a local record and not another query: no Temporal query tells a deleted execution from a
live one until the deletion has gone through (`describe` answers COMPLETED meanwhile), and a
wait in `runs delete` would make every delete take half a minute. Another machine's CLI does
not see these tombstones; it sees the run until Temporal has deleted it.
"""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime, timedelta
from pathlib import Path

from steward.worker.connect import data_dir

RECORD = "deleted-runs.json"
KEPT_FOR = timedelta(days=1)


def _path() -> Path:
    return data_dir() / RECORD


def read() -> dict[str, dict]:
    """run id -> {workflow_id, at}: the tombstones still kept (empty when none or unreadable)."""
    try:
        raw = json.loads(_path().read_text())
        entries = {str(k): dict(v) for k, v in raw.get("runs", {}).items()}
    except (OSError, ValueError, TypeError, AttributeError):
        return {}
    horizon = datetime.now(UTC) - KEPT_FOR
    kept = {}
    for run_id, entry in entries.items():
        try:
            at = datetime.fromisoformat(entry["at"])
        except (KeyError, TypeError, ValueError):
            continue
        if at >= horizon:
            kept[run_id] = entry
    return kept


def remember(workflow_id: str, run_ids: list[str]) -> None:
    """Tombstone the executions just deleted (written atomically; a lost race with another
    delete loses at most that delete's tombstones, and the run then lingers ~30 s as before)."""
    entries = read()
    at = datetime.now(UTC).isoformat()
    for run_id in run_ids:
        entries[run_id] = {"workflow_id": workflow_id, "at": at}
    path = _path()
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps({"runs": entries}, indent=1))
    os.replace(tmp, path)


def is_deleted(run_id: str | None) -> bool:
    return bool(run_id) and run_id in read()


def deleted_at(workflow_id: str) -> datetime | None:
    """When this machine last deleted an execution of `workflow_id` (None: it did not)."""
    times = [
        datetime.fromisoformat(entry["at"])
        for entry in read().values()
        if entry.get("workflow_id") == workflow_id
    ]
    return max(times) if times else None
