"""Where each agent got to in the journal: `steward collect --by NAME` remembers its cursor (and
the phase it saw) so that the next `collect` or `wait` of that name without `--since` starts
there.

A file per name under the workspace's `.steward/agents/`, not the run's state: it survives the
run's end, a relaunch and a continue-as-new, adds nothing to the run's history or its bounded
state, and needs no change to what a run in flight does. Written atomically (a reader never
sees half a file); two agents of one name are one reader, the later write winning.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

CURSOR_DIR = ".steward/agents"
_SAFE = re.compile(r"[^A-Za-z0-9._-]+")


def cursor_path(workspace: Path, name: str) -> Path:
    """The file of `name`: readable where the name is (a slug of it), unique by its hash."""
    slug = _SAFE.sub("-", name).strip(".-")[:40] or "agent"
    digest = hashlib.sha256(name.encode()).hexdigest()[:8]
    return workspace / CURSOR_DIR / f"{slug}-{digest}.json"


def read_cursor(workspace: Path, name: str) -> dict[str, Any] | None:
    """What `name` last collected: {"cursor": N, "phase": ..., "at": ...}, or None (never, or a
    file that cannot be read: the agent then starts from the beginning, which loses nothing)."""
    try:
        record = json.loads(cursor_path(workspace, name).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(record, dict) or not isinstance(record.get("cursor"), int):
        return None
    return record


def remember_cursor(workspace: Path, name: str, cursor: int, phase: str) -> None:
    path = cursor_path(workspace, name)
    path.parent.mkdir(parents=True, exist_ok=True)
    record = {
        "by": name,
        "cursor": cursor,
        "phase": phase,
        "at": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    handle, tmp = tempfile.mkstemp(dir=path.parent, prefix=".cursor-")
    try:
        with os.fdopen(handle, "w") as out:
            json.dump(record, out)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
