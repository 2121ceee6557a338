"""Issue 28 item 5: `status --wait` outside a terminal (a pipe, a log, CI) prints a line each time
the run's numbers change, as they change, not one line and then silence until the end."""

from __future__ import annotations

import itertools
import subprocess

from harness.helpers import STEWARD, make_workspace


def test_status_wait_through_a_pipe_prints_each_change_as_it_happens(steward, workspace_root):
    workspace = make_workspace(
        steward,
        workspace_root,
        {"slow": 30},
        tend_interval="1h",
        options="samples_ramp: [2, 2]\nheartbeat: false\n",
        dotenv="STEWARD_OFFLINE_DELAY=1\n",
    )
    steward.ok("launch", cwd=workspace)
    env = {k: v for k, v in steward.env.items() if k != "PYTHONUNBUFFERED"}  # as a shell has it
    waiting = subprocess.Popen(
        [STEWARD, "status", "--wait"],
        cwd=workspace,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines, running_when_read = [], []
    try:
        for line in waiting.stdout:
            lines.append(line.rstrip("\n"))
            # Still waiting when the line arrived: it reached the pipe when it was said.
            running_when_read.append(waiting.poll() is None)
            if line.startswith(("finished", "stalled")):
                break
        # What the loop's read-ahead holds is in the file object, which communicate() (two
        # pipes: it reads their descriptors) would skip: read the rest through it.
        rest = waiting.stdout.read()
        waiting.wait(timeout=120)
    finally:
        waiting.kill()
    assert waiting.returncode == 0, rest
    assert lines[0].startswith("Waiting until the run finishes, stalls or ends")
    progress = [line for line in lines if " samples, " in line]
    assert len(progress) >= 3, lines  # more than the first and the last
    assert all(running_when_read[: len(lines) - 1]), lines
    # A line each change: never the one before again. (The same numbers may come back later:
    # in flight drops as a sample ends and rises as the next starts, done unchanged between.)
    repeats = [a for a, b in itertools.pairwise(progress) if a == b]
    assert not repeats, f"a line repeats the one before: {repeats} in {lines}"
    assert progress[0].startswith("running: ") and " in flight (" in progress[0]
    assert progress[-1].startswith("finished: 30/30 samples, 0 error(s), 0 in flight")
    assert "state: finished" in rest
    steward.ok("signoff", "--by", "test", cwd=workspace)
