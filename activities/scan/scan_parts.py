"""How one scan is shared among processes: one process cannot keep a fast provider busy (scout
costs ~20 ms of CPU a transcript here), and a scan's end waits for its largest part.

A large scan's unit of work is a log while its logs split evenly (by bytes) over one process
each, up to MAX_SCAN_PROCESSES: three equal logs on two cores are three processes, not two with
one doing twice the other's work (a scan mostly waits on the provider, so a process more than
cores costs little, and each part's connections go to the others as it ends). A scan of fewer
logs than cores (the usual case: each task is scanned as soon as it is complete), or of logs
that do not split evenly, is split by transcript instead: every process reads the same logs
and scans every n-th of their transcripts (by sorted sample uuid), so the processes end
together; reading every log in every process costs a second or two at the start. A small scan
is split by log over the cores, or not at all.
"""

from __future__ import annotations

import os

MAX_SCAN_PROCESSES = 4
# Below this many bytes of logs a second process costs more than it saves.
SHARD_MIN_BYTES = 256 * 1024
UNEVEN = 1.1  # a split by log whose largest part has this much more than the mean is uneven

Shard = tuple[int, int]  # (this process's index, how many share the transcripts)


def scan_processes(logs: int) -> int:
    """Processes for a small scan split by log: one per core, never more than logs."""
    return max(1, min(logs, os.cpu_count() or 1, MAX_SCAN_PROCESSES))


def plan_parts(log_paths: list[str]) -> list[tuple[list[str], Shard | None]]:
    """The scan's parts: (logs, shard) per process; shard None scans all the logs' transcripts."""
    cores = max(1, min(os.cpu_count() or 1, MAX_SCAN_PROCESSES))
    total = sum(_size(p) for p in log_paths)
    if total < SHARD_MIN_BYTES:
        return [(part, None) for part in split_logs(log_paths, scan_processes(len(log_paths)))]
    if len(log_paths) >= cores:
        by_log = split_logs(log_paths, min(len(log_paths), MAX_SCAN_PROCESSES))
        if not _uneven(by_log, total):
            return [(part, None) for part in by_log]
    return [(list(log_paths), (index, cores)) for index in range(cores)]


def _uneven(parts: list[list[str]], total: int) -> bool:
    largest = max(sum(_size(p) for p in part) for part in parts)
    return largest > UNEVEN * total / len(parts)


def split_logs(log_paths: list[str], parts: int) -> list[list[str]]:
    """`log_paths` in `parts` groups of about equal bytes (largest first into the lightest)."""
    groups: list[tuple[int, list[str]]] = [(0, []) for _ in range(max(1, parts))]
    for path in sorted(log_paths, key=_size, reverse=True):
        size, members = min(groups, key=lambda g: g[0])
        groups.remove((size, members))
        groups.append((size + _size(path), [*members, path]))
    return [members for _, members in groups if members]


def shard_ids(log_paths: list[str], shard: Shard) -> list[str] | None:
    """The transcript ids (sample uuids) this shard scans; None when a sample has no uuid (an
    old log): the first shard then scans everything and the others nothing."""
    from inspect_ai.log import read_eval_log_sample_summaries

    uuids = []
    for path in log_paths:
        for summary in read_eval_log_sample_summaries(path):
            if not summary.uuid:
                return None
            uuids.append(summary.uuid)
    index, count = shard
    return sorted(uuids)[index::count]


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0
