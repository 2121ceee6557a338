"""Why a task worker died, in words an operator can act on. Pure: the watch activity reads the
worker's own log and its exit (activities/processes/worker_exit.py) and asks these functions
what that means; the run asks them how to word a stalled task's question.

A worker that dies of the machine rather than of the eval says so in an operating-system error:
an exception line (`OSError: [Errno 28] No space left on device`) or an error Inspect logged
and carried on from (`Task 'x' encountered an error while starting or writing its log: [Errno
28] No space left on device`, after which the worker exits 0). `os_cause` turns such a line
into the cause and its fix; `signal_cause` does the same for a worker killed by SIGKILL, which
is what the kernel's OOM killer sends.

Errors are recognised by their message (`strerror`, the same words on Linux and macOS, whose
errno numbers differ) or by their errno name.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

LINE_LIMIT = 200  # characters of one log line a question quotes
RETRY = "retry the task"
MEMORY_FIX = (
    "free memory on the host or give the worker more, or lower max_samples / max_workers, "
    f"and {RETRY}"
)


@dataclass(frozen=True)
class OsError:
    """An operating-system error a worker's log named."""

    name: str  # ENOSPC, EACCES, ..., MemoryError
    path: str | None  # the file or directory it named, if any


# name -> how its message reads (lowercase), as Python writes it from strerror.
_MESSAGES: dict[str, tuple[str, ...]] = {
    "ENOSPC": ("no space left on device",),
    "EDQUOT": ("disk quota exceeded",),
    "EROFS": ("read-only file system",),
    "EACCES": ("permission denied",),
    "EPERM": ("operation not permitted",),
    "ENFILE": ("too many open files in system",),
    "EMFILE": ("too many open files",),
    "ENOMEM": ("cannot allocate memory",),
}
# "MemoryError" alone, or as an exception line's class ("builtins.MemoryError: ...").
_MEMORY_ERROR = re.compile(r"(?:^|[\s.(])MemoryError\b")
_ERRNO_NAME = re.compile(r"\b(" + "|".join(_MESSAGES) + r")\b")
# The path an OSError names after its message: "...: '/a/b'"; else a file URL or an absolute
# path anywhere in the line (Inspect's "Recovery failed for file:///a/b.eval: [Errno 28] ...").
_QUOTED_PATH = re.compile(r":\s*'(?P<path>/[^']*)'")
_URL_PATH = re.compile(r"file://(?P<path>/[^\s:'\"]+)")
_BARE_PATH = re.compile(r"(?:^|\s)(?P<path>/[^\s:'\"]+)")


def os_error_in(line: str) -> OsError | None:
    """The operating-system error `line` names, if it names one."""
    lowered = line.lower()
    name = None
    for candidate, messages in _MESSAGES.items():  # EMFILE's message is a prefix of ENFILE's
        if any(message in lowered for message in messages):
            name = candidate
            break
    if name is None:
        named = _ERRNO_NAME.search(line)
        name = named.group(1) if named else None
    if name is None and _MEMORY_ERROR.search(line):
        name = "MemoryError"
    if name is None:
        return None
    return OsError(name=name, path=_path_in(line))


def _path_in(line: str) -> str | None:
    for pattern in (_QUOTED_PATH, _URL_PATH, _BARE_PATH):
        found = pattern.search(line)
        if found:
            return found.group("path").rstrip(".,;)")
    return None


def _directory(path: str) -> str:
    """The directory a named file is in (a name without a suffix is taken as a directory)."""
    head, _, last = path.rstrip("/").rpartition("/")
    return (head or "/") if "." in last else path.rstrip("/") or "/"


def os_cause(line: str, *, log_dir: str) -> str | None:
    """The cause and its fix for the operating-system error `line` names (None: it names
    none). Where the error names no path, the run's log directory is the place it means."""
    error = os_error_in(line)
    if error is None:
        return None
    path = error.path or log_dir
    match error.name:
        case "ENOSPC":
            return (
                f"no space left on device under {_directory(path)}: free space there "
                f"(or move log_dir) and {RETRY}"
            )
        case "EDQUOT":
            return (
                f"disk quota exceeded under {_directory(path)}: free space there or raise the "
                f"quota (or move log_dir) and {RETRY}"
            )
        case "EROFS":
            return (
                f"read-only file system at {path}: remount it read-write (or move log_dir) "
                f"and {RETRY}"
            )
        case "EACCES" | "EPERM":
            return (
                f"permission denied on {path}: let the user the Steward worker runs as write "
                f"there (chown / chmod, or move log_dir) and {RETRY}"
            )
        case "EMFILE":
            return (
                "too many open files: raise the open-files limit (`ulimit -n`, or LimitNOFILE= "
                f"in the Steward worker's service unit), restart the Steward worker and {RETRY}"
            )
        case "ENFILE":
            return (
                "too many open files on the host: raise its limit (sysctl fs.file-max) or stop "
                f"what holds them, and {RETRY}"
            )
        case _:  # ENOMEM, MemoryError
            return f"out of memory ({error.name}): {MEMORY_FIX}"


def signal_cause(signum: int, name: str, *, oom_killed: bool | None) -> str | None:
    """What a worker killed by signal `signum` (`name`, e.g. SIGKILL) died of, when that says
    more than the signal: SIGKILL is what the kernel's OOM killer sends. `oom_killed`: the
    kernel said it killed this process (True), it said it did not or cannot be read (None)."""
    if signum != 9:
        return None
    if oom_killed:
        return f"killed by the kernel's OOM killer (out of memory): {MEMORY_FIX}"
    return (
        f"killed by signal 9 ({name}; out of memory?): if the kernel's OOM killer did it "
        f"(`dmesg`), {MEMORY_FIX}"
    )


def stalled_detail(deaths: int, last_exit: str | None, log_tail: list[str]) -> str:
    """What a stalled task's question says besides its cause: how many workers died without a
    completed sample, how the last one ended (its exit code or signal) and the last lines of
    its own log."""
    text = f"{deaths} worker deaths without progress"
    if last_exit:
        text += f"; the last: {last_exit}"
    if log_tail:
        quoted = " | ".join(_clip(line) for line in log_tail)
        text += f"; its log ends: {quoted}"
    return text


def _clip(line: str) -> str:
    line = " ".join(line.split())
    return line if len(line) <= LINE_LIMIT else line[: LINE_LIMIT - 1] + "…"
