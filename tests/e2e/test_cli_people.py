"""What a person at a terminal sees: a spinner naming the step while a command works (never
with --json or when piped), links and paths that are never broken at 80 columns, short task
identifiers in tables, the live table of `status --wait`, and `--version`."""

from __future__ import annotations

import json
import os
import pty
import re
import select
import subprocess
import time

from harness.helpers import STEWARD, make_workspace
from steward.cli.render import short_ids

ANSI = re.compile(r"\x1b\[[0-9;?]*[a-zA-Z]")


def _at_a_terminal(steward, *args: str, cwd, timeout: float = 120) -> tuple[int, str]:
    """Run the `steward` script with a pseudo-terminal for stdout and stderr, 80 columns."""
    leader, follower = pty.openpty()
    process = subprocess.Popen(
        [STEWARD, *args],
        cwd=cwd,
        env={**steward.env, "COLUMNS": "80", "LINES": "40", "TERM": "xterm"},
        stdin=subprocess.DEVNULL,
        stdout=follower,
        stderr=follower,
    )
    os.close(follower)
    chunks, deadline = [], time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([leader], [], [], 0.5)
        if ready:
            try:
                data = os.read(leader, 65536)
            except OSError:  # the follower side closed: the command is done
                break
            if not data:
                break
            chunks.append(data)
        elif process.poll() is not None:
            break
    os.close(leader)
    code = process.wait(timeout=10)
    return code, b"".join(chunks).decode(errors="replace")


def test_a_spinner_names_the_step_at_a_terminal_and_json_stays_clean(steward, workspace_root):
    workspace = make_workspace(steward, workspace_root, {"alpha": 2})
    code, seen = _at_a_terminal(steward, "tasks", cwd=workspace)
    assert code == 0, seen
    assert "resolving evalset.py" in ANSI.sub("", seen)
    identifier = steward.ok("tasks", cwd=workspace)["tasks"][0]["identifier"]
    [short] = short_ids([identifier])  # name#args-hash·config-hash, told apart, on one line
    assert identifier not in seen and short in ANSI.sub("", seen)

    code, seen = _at_a_terminal(steward, "tasks", "--json", cwd=workspace)
    assert code == 0 and "resolving" not in seen
    assert json.loads(seen)["tasks"][0]["identifier"] == identifier  # whole in --json
    piped = steward("tasks", cwd=workspace)
    assert piped.code == 0 and "resolving" not in piped.stdout  # stdout is the result alone
    # Off a terminal no spinner: at most plain lines, said only when the step took over
    # step_progress.QUIET_S (a loaded machine), never frames or escape codes.
    assert "\r" not in piped.stderr and not ANSI.search(piped.stderr), piped.stderr
    assert all(
        line.startswith("resolving evalset.py (capture)") for line in piped.stderr.splitlines()
    ), piped.stderr


def test_links_and_paths_are_never_broken_at_80_columns(steward, workspace_root):
    workspace = make_workspace(
        steward, workspace_root / ("deep-" * 12), {"alpha": 6}, dotenv="STEWARD_OFFLINE_DELAY=1\n"
    )
    steward.ok("launch", cwd=workspace)
    # status --wait at a terminal keeps the per-task table on screen while the run goes on,
    # then prints the final status.
    code, seen = _at_a_terminal(steward, "status", "--wait", cwd=workspace)
    plain = ANSI.sub("", seen)
    assert code == 0 and "waiting until it finishes" in plain and "alpha" in plain, plain
    assert "state: finished" in plain
    narrow = {"COLUMNS": "80"}
    assert len(str(workspace)) > 80
    status = steward("status", cwd=workspace, env=narrow)
    web_ui = steward.ok("status", cwd=workspace)["web_ui"]
    assert web_ui in status.stdout.splitlines() or f"web UI: {web_ui}" in status.stdout
    runs = steward("runs", env=narrow)
    assert runs.code == 0 and str(workspace) in runs.stdout.splitlines()

    version = steward("--version")
    assert version.code == 0 and re.fullmatch(r"steward \d+\.\d+\.\S+\n", version.stdout)


def test_help_lists_commands_in_the_order_a_user_meets_them_with_examples(steward):
    listing = steward("--help", env={"COLUMNS": "100"}).stdout
    order = [re.search(rf"│ {name} ", listing) for name in ("init", "tasks", "launch", "status")]
    assert all(order) and [m.start() for m in order] == sorted(m.start() for m in order)
    assert listing.index("│ signoff ") < listing.index("│ server ") < listing.index("│ service ")
    for command in (["signoff"], ["launch"], ["ramp", "hold"], ["service", "install"]):
        shown = steward(*command, "--help", env={"COLUMNS": "100"}).stdout
        assert "Example: steward " + " ".join(command) in shown, shown
