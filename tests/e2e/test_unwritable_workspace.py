"""A workspace that cannot be written (here: `chattr +i`, which stops root too): `steward tend`
returns within its timeout and says why, status carries the reason, the operator hears of it
once, the journal the run could not write is kept; once the workspace is writable again the
next tend writes everything and clears the reason by itself."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest

from harness.helpers import fetch_history, make_workspace, read_journal, replay, wait_for
from harness.receiver import Receiver

PROBLEM = (
    "cannot write status.md: operation not permitted; "
    "cannot write journal.jsonl: operation not permitted"
)
TOLD = "The workspace cannot be written"


def _chattr(flag: str, paths: list[Path]) -> subprocess.CompletedProcess:
    return subprocess.run(["chattr", flag, *map(str, paths)], capture_output=True, text=True)


def _timed_tend(steward, workspace: Path) -> tuple[dict, float]:
    started = time.monotonic()
    result = steward("tend", "--json", "--timeout", "60s", cwd=workspace, timeout=120)
    elapsed = time.monotonic() - started
    assert result.code == 0, result.stdout + result.stderr
    return result.json, elapsed


def test_unwritable_workspace_is_told_once_and_written_when_it_can_be(steward, workspace_root):
    with Receiver() as receiver:
        # One sample at a time, half a second each: the run keeps running through the test.
        workspace = make_workspace(
            steward,
            workspace_root,
            {"slow": 600},
            options="tend_interval: 1h\nheartbeat: false\nsamples_ramp: [1, 1]\n",
            dotenv=f"STEWARD_OFFLINE_DELAY=0.5\nSTEWARD_NOTIFICATION={receiver.url}\n",
        )
        steward.ok("launch", cwd=workspace)
        steward.ok("tend", cwd=workspace)
        journal = workspace / "journal.jsonl"
        written_before = journal.read_text()
        # The workspace takes no new files (status.md's temp file) and the journal no appends;
        # the logs below it stay writable.
        locked = [workspace, journal, workspace / "status.md"]
        try:
            frozen = _chattr("+i", locked)
            if frozen.returncode != 0:
                pytest.skip(f"chattr +i does not work here: {frozen.stderr.strip()}")
            for _ in range(2):
                summary, elapsed = _timed_tend(steward, workspace)
                assert summary["workspace_problem"] == PROBLEM
                assert elapsed < 60
            told = steward("tend", cwd=workspace)
            assert told.code == 0 and f"workspace not written: {PROBLEM}" in " ".join(
                told.stdout.split()
            )
            status = steward.status(workspace)
            assert status["state"]["workspace_problem"] == PROBLEM
            shown = steward("status", cwd=workspace)
            assert "workspace not written" in " ".join(shown.stdout.split())
            wait_for(lambda: TOLD in receiver.text(), what="the operator told")
            assert "cannot write the workspace" in receiver.titles()[-1]
            time.sleep(1)  # nothing more arrives about it
            assert sum(TOLD in m.get("message", "") for m in receiver.messages) == 1
            assert journal.read_text() == written_before
        finally:
            _chattr("-i", locked)

        summary, elapsed = _timed_tend(steward, workspace)
        assert summary["workspace_problem"] is None and elapsed < 60
        assert steward.status(workspace)["state"]["workspace_problem"] is None
        assert "Workspace not written" not in (workspace / "status.md").read_text()
        events = read_journal(workspace)
        assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
        names = [e["event"] for e in events]
        assert names.count("workspace not written") == 1  # one reason, told once
        assert names.index("workspace not written") < names.index("workspace writable again")
        tends = [e["tend"] for e in events if e["event"] == "tend"]
        assert tends == list(range(1, tends[-1] + 1))  # the tends made while locked are there
        assert sum(TOLD in m.get("message", "") for m in receiver.messages) == 1

        workflow_id = steward.status(workspace)["workflow_id"]
        steward.ok("cancel", cwd=workspace)
        _replay_every_run(steward, workflow_id)


def _replay_every_run(steward, workflow_id: str) -> None:
    """Each run of the chain (the test's tends fill a history: it continues as new) replays."""
    run_id = None
    while True:
        history = fetch_history(steward, workflow_id, run_id)
        replay(history)
        started = history.events[0].workflow_execution_started_event_attributes
        run_id = started.continued_execution_run_id
        if not run_id:
            return
