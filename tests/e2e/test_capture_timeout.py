"""A definition that hangs at import: `steward tasks` and `steward launch` say they are resolving
it while they wait, stop at `capture_timeout` with where it was (file:line of the sleep, from
the capture process's Python stack), exit 1, and leave nothing behind: no run, no file written
in the workspace, no process of the definition (nor the child it started)."""

from __future__ import annotations

from pathlib import Path

import psutil

from harness.helpers import make_workspace

TIMEOUT = "15s"  # a fresh capture process (`tasks`) imports Inspect first: seconds on 2 cores
SLEEP_LINE = 11  # of HANGS below: where the definition was when it stopped answering
HANGS = """\
import subprocess
import time

from inspect_ai import eval_set

subprocess.Popen(["sleep", "3600"])  # a child of its own, which must go with it


def wait_for_the_dataset():
    # line 10
    time.sleep(3600)


wait_for_the_dataset()
eval_set(tasks=[], model="steward/offline")
"""


def _files(workspace: Path) -> dict[str, int]:
    return {str(p.relative_to(workspace)): p.stat().st_mtime_ns for p in workspace.rglob("*")}


def _left_in(workspace: Path) -> list[str]:
    """Processes still running in the workspace (the capture and what it started run there)."""
    left = []
    for process in psutil.process_iter(["pid", "cmdline"]):
        try:
            if Path(process.cwd()) == workspace and process.status() != psutil.STATUS_ZOMBIE:
                left.append(f"{process.pid}: {' '.join(process.info['cmdline'] or [])}")
        except (psutil.Error, OSError):
            pass
    return left


def _timed_out(result, workspace: Path) -> str:
    text = result.stdout + result.stderr
    assert result.code == 1, (result.code, text)
    assert "Traceback" not in text
    for needle in (
        f"did not finish resolving its tasks within {TIMEOUT}",
        f"evalset.py:{SLEEP_LINE} in wait_for_the_dataset (`time.sleep(3600)`)",
        "called from evalset.py:14 in <module>",
        "capture_timeout",
    ):
        assert needle in text, text
    assert _left_in(workspace) == []
    return text


def test_a_definition_that_hangs_is_stopped_at_capture_timeout(steward, workspace_root):
    workspace = make_workspace(
        steward, workspace_root, definition_text=HANGS, options=f"capture_timeout: {TIMEOUT}\n"
    ).resolve()
    before = _files(workspace)

    tasks = steward("tasks", cwd=workspace, timeout=120)
    assert "resolving evalset.py (capture)" in tasks.stderr  # the step, once it takes a while
    _timed_out(tasks, workspace)

    as_json = steward("tasks", "--json", cwd=workspace, timeout=120)
    assert as_json.code == 1 and as_json.json["exit_code"] == 1
    assert f"evalset.py:{SLEEP_LINE} in wait_for_the_dataset" in as_json.json["error"]
    assert "resolving" not in as_json.stderr  # --json: the document alone

    launch = steward("launch", cwd=workspace, timeout=180)
    assert "resolving evalset.py (capture)" in launch.stderr
    _timed_out(launch, workspace)

    assert _files(workspace) == before  # nothing written, nothing half-written
    status = steward("status", "--json", cwd=workspace)
    assert status.code == 2 and "No run has been launched" in status.json["error"]
    runs = steward.ok("runs")["runs"]
    assert not [r for r in runs if str(workspace) in str(r)], runs
