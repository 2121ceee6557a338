"""The `.eval` logs of a log dir, by the task each belongs to, with each log's status.

The logs are the truth about whether a task is complete. Reading a header costs milliseconds and
a tend of a big fleet would pay it for every log every time, so what was read is kept per path
and read again only when the file changed and the caller needs a fresh status.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from steward.activities.logs.paths import local_path


@dataclass
class LogInfo:
    path: str
    identifier: str  # a log file never changes task
    stamp: tuple[float, int]  # (mtime, size) when `status` was read
    status: str


_logs: dict[str, LogInfo] = {}  # path -> what we last read of it


def log_info(location: str, fresh_status: bool = True) -> LogInfo | None:
    """What a log is (its task identifier) and, when `fresh_status`, its current status.
    None while it cannot be read yet (being created or replaced)."""
    from inspect_ai._eval.evalset import task_identifier
    from inspect_ai.log import read_eval_log

    path = local_path(location)
    try:
        stat = Path(path).stat()
    except OSError:
        return None
    stamp = (stat.st_mtime, stat.st_size)
    known = _logs.get(path)
    if known is not None and (known.stamp == stamp or not fresh_status):
        return known
    try:
        header = read_eval_log(path, header_only=True)
    except Exception:  # a log being replaced mid-read: try again next tend
        return known
    # A success log with invalidated samples (a re-run ruling) is not complete: its task resumes.
    status = "invalidated" if header.status == "success" and header.invalidated else header.status
    _logs[path] = LogInfo(path, task_identifier(header, None), stamp, status)
    return _logs[path]


def logs_by_identifier(log_dir: str, fresh_status: bool = False) -> dict[str, list[LogInfo]]:
    """identifier -> its logs, oldest first (log names start with their start time)."""
    found: dict[str, list[LogInfo]] = {}
    directory = Path(log_dir)
    if not directory.is_dir():
        return found
    present = sorted(str(p) for p in directory.glob("*.eval"))
    for gone in [p for p in _logs if Path(p).parent == directory and p not in present]:
        _logs.pop(gone, None)  # a watch may list the same dir at once
    for path in sorted(present, key=lambda p: Path(p).name):
        info = log_info(path, fresh_status)
        if info is not None:
            found.setdefault(info.identifier, []).append(info)
    return found
