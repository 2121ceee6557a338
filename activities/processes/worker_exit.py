"""How a dead task worker ended, in its own words: the cause its log gives and the last lines
of that log (`.steward/workers/<id>.log`), and whether the kernel's OOM killer took it.

The cause is the last thing the log says went wrong: a Python exception line, or an error
Inspect logged and carried on from. The second matters: a task whose log cannot be written
(a full disk, a read-only mount) is recorded by Inspect as an errored task with one logged line
("Task 'x' encountered an error while starting or writing its log: [Errno 28] No space left on
device"), `eval_set()` returns, and the worker exits 0. An operating-system error is reworded
as its cause and fix (workflows/policy/exit_causes.py).

Inspect logs through Rich, which wraps a record over several lines of a fixed-width table
(time, level, message, the source file on the right); `logical_lines` joins each record back
into one line so a cause or a quoted line reads whole.
"""

from __future__ import annotations

import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

import psutil

from steward.workflows.policy.exit_causes import os_cause

TAIL_BYTES = 16_384  # of the worker's log read from its end
CAUSE_LIMIT = 300
TAIL_LINES = 5  # lines of its log a stalled task's question quotes
LINE_LIMIT = 200
FULL_BELOW_BYTES = 1 << 20  # a file system with less free is full, as far as a worker goes

# The line a Python traceback ends with ("FileNotFoundError: [Errno 2] ..."), also inside Rich's
# boxed tracebacks; a dotted module path before the class name is allowed.
_EXCEPTION_LINE = re.compile(
    r"^(?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?:Error|Exception|Exit|Interrupt|Failure)(?::\s.*)?$"
)
# The first line of a Rich log record: "[12/05/26 13:21:16] ERROR    message ...  run.py:675";
# the time is left blank when it repeats the previous record's.
_RECORD = re.compile(
    r"^(?:\[[^\]]*\])?\s*(?P<level>DEBUG|INFO|WARNING|ERROR|CRITICAL)\s+(?P<message>\S.*)$"
)
_SOURCE_COLUMN = re.compile(r"\s+(?P<source>[\w.-]+\.py:\d+)$")  # the record's right column
_BOX = "│|╭╮╰╯─┃━┏┓┗┛"
_FAILED_LEVELS = ("ERROR", "CRITICAL")


@dataclass(frozen=True)
class Line:
    text: str
    level: str | None = None  # a log record's level; None for any other line


def read_tail(output: str) -> str | None:
    """The end of the worker's log, or None when it cannot be read."""
    try:
        with open(output, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            handle.seek(max(0, handle.tell() - TAIL_BYTES))
            return handle.read().decode("utf-8", "replace")
    except OSError:
        return None


def logical_lines(text: str) -> list[Line]:
    """The log's lines with each Rich log record joined into one (level, message; its time
    and source column dropped), box drawing stripped, blank lines left out."""
    lines: list[Line] = []
    raw = text.splitlines()
    index = 0
    while index < len(raw):
        line = raw[index]
        index += 1
        record = _RECORD.match(line)
        if record is None:
            plain = " ".join(line.strip().strip(_BOX).split())
            if plain:
                lines.append(Line(plain))
            continue
        column = record.start("message")
        first = record["message"].rstrip()
        source = _SOURCE_COLUMN.search(first)
        width = len(line.rstrip("\n")) - column
        if source is not None:
            first = first[: source.start()].rstrip()
            width -= len(source["source"]) + 1
        parts = [first]
        hard_break = _folded(first, width)
        while index < len(raw) and raw[index][:column].strip() == "" and raw[index].strip():
            part = raw[index][column:].strip()
            parts[-1:] = [parts[-1] + part] if hard_break else [parts[-1], part]
            hard_break = _folded(part, width)
            index += 1
        lines.append(Line(f"{record['level']} {' '.join(parts)}", record["level"]))
    return lines


def _folded(part: str, width: int) -> bool:
    """Whether a record's line ends inside a word: Rich folds a word longer than the message
    column over whole lines of it, and wraps everything else at spaces. (A word that ends
    exactly at the column's edge reads the same; it is joined to the next.)"""
    return len(part) >= width and " " not in part


def said_cause(lines: list[Line]) -> str | None:
    """The last exception line or logged error, the cause in the worker's words."""
    for line in reversed(lines):
        if line.level in _FAILED_LEVELS:
            return line.text.split(" ", 1)[1][:CAUSE_LIMIT]
        if line.level is None and _EXCEPTION_LINE.match(line.text):
            return line.text[:CAUSE_LIMIT]
    return None


def tail_of(lines: list[Line]) -> list[str]:
    """The last lines a question quotes, each cut to a readable length."""
    return [
        line.text if len(line.text) <= LINE_LIMIT else line.text[: LINE_LIMIT - 1] + "…"
        for line in lines[-TAIL_LINES:]
    ]


def full_disk(paths: list[str]) -> str | None:
    """The first of `paths` (local directories) on a file system with almost no space left."""
    for path in paths:
        if "://" in path:
            continue  # fsspec storage: not ours to measure
        try:
            if shutil.disk_usage(path).free < FULL_BELOW_BYTES:
                return path
        except OSError:
            continue
    return None


def exit_report(output: str, log_dir: str) -> tuple[str | None, list[str]]:
    """A dead worker's cause (reworded with its fix when it is an OS error) and its log's last
    lines. When its log says nothing, a full disk under the log dir or the log itself is the
    cause: a worker that cannot write may not have managed to say so."""
    text = read_tail(output)
    lines = logical_lines(text) if text else []
    cause = said_cause(lines)
    if cause is not None:
        return os_cause(cause, log_dir=log_dir) or cause, tail_of(lines)
    full = full_disk([log_dir, str(Path(output).parent)])
    if full is not None:
        return os_cause("No space left on device", log_dir=full), tail_of(lines)
    return None, tail_of(lines)


# ---------------------------------------------------------------- the OOM killer
_KMSG = "/dev/kmsg"
KMSG_RECORDS = 100_000  # read at most this many kernel log records


def kernel_oom_killed(pid: int, create_time: float) -> bool | None:
    """Whether the kernel's log says its OOM killer killed `pid` (started at `create_time`,
    epoch seconds); None when the kernel's log cannot be read (not root, a container)."""
    try:
        fd = os.open(_KMSG, os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return None
    started = create_time - psutil.boot_time()  # seconds since boot, as the kernel counts
    mentions = (re.compile(rf"Killed process {pid}\b"), re.compile(rf"oom-kill:.*\bpid={pid}\b"))
    try:
        for _ in range(KMSG_RECORDS):
            try:
                record = os.read(fd, 8192).decode("utf-8", "replace")
            except BlockingIOError:
                return False  # read to the end
            except BrokenPipeError:
                continue  # records overwritten while reading: read on
            except OSError:
                return None
            head, _, message = record.partition(";")
            fields = head.split(",")
            if len(fields) < 3 or not fields[2].isdigit():
                continue
            if int(fields[2]) / 1e6 < started:
                continue  # before this process: another one with its pid
            if any(m.search(message) for m in mentions):
                return True
        return False
    finally:
        os.close(fd)


def oom_kill_counter(pid: int) -> str | None:
    """The file that counts OOM kills in `pid`'s memory cgroup (v2 `memory.events`, v1
    `memory.oom_control`), while it lives; None when there is none to read."""
    try:
        entries = Path(f"/proc/{pid}/cgroup").read_text().splitlines()
    except OSError:
        return None
    for entry in entries:
        _, controllers, path = entry.split(":", 2)
        relative = path.lstrip("/")
        if controllers == "":
            for root in ("/sys/fs/cgroup", "/sys/fs/cgroup/unified"):
                candidate = Path(root, relative, "memory.events")
                if candidate.is_file():
                    return str(candidate)
        elif "memory" in controllers.split(","):
            candidate = Path("/sys/fs/cgroup/memory", relative, "memory.oom_control")
            if candidate.is_file():
                return str(candidate)
    return None


def oom_kills(counter: str | None) -> int | None:
    """The OOM kills `counter` (from oom_kill_counter) has counted so far."""
    if counter is None:
        return None
    try:
        for line in Path(counter).read_text().splitlines():
            name, _, value = line.partition(" ")
            if name == "oom_kill" and value.strip().isdigit():
                return int(value)
    except OSError:
        return None
    return None


def oom_killed(
    pid: int, create_time: float, counter: str | None, kills_before: int | None
) -> bool | None:
    """Whether the OOM killer took a worker that died of SIGKILL: the kernel's log names it, or
    its memory cgroup counted a new OOM kill while it was watched. None: neither can be read."""
    said = kernel_oom_killed(pid, create_time)
    if said:
        return True
    kills_after = oom_kills(counter)
    if kills_before is not None and kills_after is not None:
        return kills_after > kills_before
    return said
