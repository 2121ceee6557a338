"""What a dead worker died of, as pure functions: an operating-system error in its log mapped
to its cause and fix, a SIGKILL's likely cause, and the stalled task's question (the cause,
the last worker's exit code or signal, and the last lines of its log)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from steward.workflows.policy import decisions
from steward.workflows.policy.decisions import Anomaly, StandingRules, Triage
from steward.workflows.policy.exit_causes import os_cause, signal_cause, stalled_detail

LOGS = "/runs/ws/logs"
INSPECT_ENOSPC = (
    "Task 'filling' encountered an error while starting or writing its log: "
    "[Errno 28] No space left on device"
)


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        # Inspect's own logged error (the worker then exits 0): no path, so the log dir
        (
            INSPECT_ENOSPC,
            f"no space left on device under {LOGS}: free space there (or move log_dir) "
            "and retry the task",
        ),
        # a traceback's last line naming the file: the directory it is in
        (
            "OSError: [Errno 28] No space left on device: '/data/logs/x.eval'",
            "no space left on device under /data/logs: free space there",
        ),
        (
            "Recovery failed for file:///scratch/logs/a_b.eval: [Errno 28] No space left on device",
            "no space left on device under /scratch/logs:",
        ),
        ("OSError: [Errno 122] Disk quota exceeded", f"disk quota exceeded under {LOGS}:"),
        (
            "PermissionError: [Errno 13] Permission denied: '/data/logs/x.eval'",
            "permission denied on /data/logs/x.eval: let the user the Steward worker runs as "
            "write there",
        ),
        (
            "OSError: [Errno 30] Read-only file system: '/mnt/ro/logs'",
            "read-only file system at /mnt/ro/logs: remount it read-write",
        ),
        ("OSError: [Errno 24] Too many open files", "too many open files: raise the open-files "),
        ("OSError: [Errno 23] Too many open files in system", "too many open files on the host"),
        ("MemoryError", "out of memory (MemoryError): free memory on the host"),
        ("OSError: [Errno 12] Cannot allocate memory", "out of memory (ENOMEM):"),
        ("failed: ENOSPC while flushing", f"no space left on device under {LOGS}:"),
    ],
)
def test_an_os_error_becomes_its_cause_and_fix(line, expected):
    cause = os_cause(line, log_dir=LOGS)
    assert cause is not None and cause.startswith(expected), cause
    assert cause.endswith("retry the task")


def test_an_ulimit_is_the_fix_for_too_many_open_files():
    cause = os_cause("OSError: [Errno 24] Too many open files", log_dir=LOGS)
    assert "ulimit -n" in cause and "LimitNOFILE=" in cause


@pytest.mark.parametrize(
    "line",
    [
        "FileNotFoundError: [Errno 2] No such file or directory: '/proc/forbidden/settings.json'",
        "ValueError: boom",
        "RuntimeError: the model said no",
        "KeyboardInterrupt",
    ],
)
def test_what_is_not_the_machine_has_no_os_cause(line):
    assert os_cause(line, log_dir=LOGS) is None


def test_sigkill_is_the_oom_killer_when_the_kernel_says_so_and_a_question_otherwise():
    assert signal_cause(9, "SIGKILL", oom_killed=True).startswith(
        "killed by the kernel's OOM killer (out of memory): free memory on the host"
    )
    for unknown in (False, None):
        assert signal_cause(9, "SIGKILL", oom_killed=unknown).startswith(
            "killed by signal 9 (SIGKILL; out of memory?)"
        )
    assert signal_cause(15, "SIGTERM", oom_killed=None) is None  # the detail names it


def test_the_stalled_detail_carries_the_exit_and_the_logs_last_lines():
    tail = [
        "WARNING Recovery failed for file:///runs/ws/logs/a.eval: [Errno 28] No space left",
        f"ERROR {INSPECT_ENOSPC}",
    ]
    detail = stalled_detail(3, "worker w0004 (pid 22830) exited with code 0", tail)
    assert detail == (
        "3 worker deaths without progress; the last: worker w0004 (pid 22830) exited with "
        f"code 0; its log ends: {tail[0]} | {tail[1]}"
    )
    assert stalled_detail(3, None, []) == "3 worker deaths without progress"
    long = stalled_detail(1, "worker w1 (pid 1) was killed by SIGKILL", ["x " * 300])
    assert "was killed by SIGKILL" in long and long.endswith("…") and len(long) < 300


def _stall(attempt: int, cause: str | None, detail: str) -> Anomaly:
    return Anomaly(
        kind="stalled_task",
        task="t-id",
        task_name="filling",
        uuid=f"attempt-{attempt}",
        cause=cause,
        detail=detail,
    )


def test_the_stalled_question_names_the_cause_the_exit_and_the_log():
    triage = Triage()
    now = datetime.now(UTC)
    cause = os_cause(INSPECT_ENOSPC, log_dir=LOGS)
    detail = stalled_detail(
        3, "worker w0004 (pid 22830) exited with code 0", [f"ERROR {INSPECT_ENOSPC}"]
    )
    outcome = decisions.absorb(triage, [_stall(4, cause, detail)], StandingRules(), now=now, tend=1)
    [decision] = [triage.find_decision(d) for d in outcome.raised]
    assert decision.question == (f"Decide: filling: its workers die with {cause}. {detail}.")
    assert "exited with code 0" in decision.question and "[Errno 28]" in decision.question

    # retried, it stalls again of something else: the new question says so, not the first's
    decision.answer = decisions.Ruling(verdict="retry", by="op", at=now)
    cls = triage.find_class(decision.class_id)
    cls.ruling, cls.state = decision.answer, "resolved"
    killed = stalled_detail(3, "worker w0009 (pid 3120) was killed by SIGKILL", [])
    oom = signal_cause(9, "SIGKILL", oom_killed=None)
    outcome = decisions.absorb(triage, [_stall(8, oom, killed)], StandingRules(), now=now, tend=2)
    [again] = [triage.find_decision(d) for d in outcome.raised]
    assert again.question == f"Decide: filling: its workers die with {oom}. {killed}."
