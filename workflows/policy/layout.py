"""Where a run's files lie, as plain strings: the archive beside the log dir, the mirror of the
workspace beside its logs, and the workspace's own `.steward/` state.

The workflow names these places and the activities and the worker write to them, so each rule
is written once, here. Pure string work (no I/O), safe in the workflow sandbox. A location may
be a local path or an fsspec URL: the rules only ever append to it, so its form is kept.
"""

from __future__ import annotations

STATE_DIR = ".steward"  # the workspace's own state: never synced, never published
MIRROR_DIR = "_steward"  # in a sync target (the log dir by default): the workspace's files


def archive_dir_of(log_dir: str) -> str:
    """Where superseded logs go (never deleted): `logs-archive` beside `logs`."""
    return log_dir.rstrip("/") + "-archive"


def state_dir_of(workspace: str) -> str:
    return f"{workspace.rstrip('/')}/{STATE_DIR}"


def workspace_record_of(workspace: str) -> str:
    """The workspace's stable id, made on first use."""
    return f"{state_dir_of(workspace)}/workspace.json"


def workers_dir_of(workspace: str) -> str:
    """Each spawned worker's record, selection and output."""
    return f"{state_dir_of(workspace)}/workers"


def approvals_dir_of(workspace: str) -> str:
    """Tool-call approval requests and their answers (worker/approver.py's file protocol)."""
    return f"{state_dir_of(workspace)}/approvals"


def smoke_dir_of(workspace: str) -> str:
    """The smoke runs, one directory each, apart from the run's logs."""
    return f"{state_dir_of(workspace)}/smoke"


def scans_dir_of(workspace: str) -> str:
    """The scoring-integrity scans' results."""
    return f"{state_dir_of(workspace)}/scans"


def triage_ledger_of(workspace: str, run_key: str) -> str:
    """Every instance of the run's sample error classes (workflows/policy/triage_ledger.py),
    one file per run (`run_key`: its first execution's run id, kept across continue-as-new)."""
    return f"{state_dir_of(workspace)}/triage/{run_key}.jsonl"
