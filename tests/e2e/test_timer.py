"""The run's own tend timer: status, disarm (the run then tends only when asked), arm
(idempotent, at a chosen interval), a changed tend_interval applied, and --no-timer."""

from __future__ import annotations

import time

from harness.helpers import Steward, make_workspace, wait_for


def _tends(steward: Steward, workspace) -> int:
    return steward.state(workspace)["tend_count"]


def _events(steward: Steward, workspace, name: str) -> list[dict]:
    """Journal events so far, including those the run holds until its next write."""
    events = steward.ok("collect", "--since", "0", cwd=workspace)["events"]
    return [e for e in events if e["event"] == name]


def test_timer_status_disarm_arm_and_interval_changes(steward: Steward, workspace_root):
    # Two samples at a time, two seconds each: the run keeps running (a finished run waiting
    # for signoff tends at most every 10 minutes) for the whole test, however loaded the
    # machine (600 samples: ten minutes); the test cancels it.
    workspace = make_workspace(
        steward,
        workspace_root,
        {"slow": 600},
        options="samples_ramp: [2, 2]\n",
        dotenv="STEWARD_OFFLINE_DELAY=2\n",
    )
    steward.ok("launch", cwd=workspace)
    timer = steward.ok("timer", "status", cwd=workspace)
    assert timer["armed"] and timer["interval"] == "2s" and not timer["differs"]

    steward.ok("timer", "disarm", cwd=workspace)
    assert steward.ok("timer", "status", cwd=workspace)["armed"] is False
    assert steward.status(workspace)["state"]["next_tend_at"] is None
    before = _tends(steward, workspace)
    time.sleep(6)  # three intervals: a disarmed run does not tend
    assert _tends(steward, workspace) == before
    steward.ok("tend", cwd=workspace)
    assert _tends(steward, workspace) == before + 1

    for _ in range(2):  # arming twice leaves one timer
        steward.ok("timer", "arm", "--interval", "3s", cwd=workspace)
    assert len(_events(steward, workspace, "timer armed")) == 1
    armed = steward.ok("timer", "status", cwd=workspace)
    assert armed["armed"] and armed["interval"] == "3s" and armed["differs"]
    ticking = _tends(steward, workspace)
    wait_for(lambda: _tends(steward, workspace) >= ticking + 2, what="scheduled tends again")

    # Back to the configured interval, then a changed tend_interval is applied at the next tend.
    steward.ok("timer", "arm", cwd=workspace)
    with open(workspace / "_steward.yaml", "a") as options:
        options.write("tend_interval: 1s\n")
    wait_for(
        lambda: _events(steward, workspace, "tend interval changed"),
        what="the new interval applied at a tend",
    )
    assert steward.status(workspace)["tend_interval"] == 1.0
    assert steward.ok("timer", "status", cwd=workspace)["interval"] == "1s"
    bad = steward("timer", "arm", "--interval", "soon", cwd=workspace)
    assert bad.code == 2 and "--interval" in bad.stderr
    steward.ok("cancel", cwd=workspace)


def test_launch_without_a_timer_tends_only_when_asked(steward: Steward, workspace_root):
    # Held, so no worker ends in the window either (a worker's exit is an event that tends).
    hold = workspace_root / "hold"
    workspace = make_workspace(
        steward, workspace_root, {"quick": 3}, dotenv=f"STEWARD_OFFLINE_HOLD={hold}\n"
    )
    hold.touch()
    launched = steward.ok("launch", "--no-timer", "--no-smoke", cwd=workspace)
    assert launched["state"]["timer"]["armed"] is False
    first = _tends(steward, workspace)
    time.sleep(5)
    assert _tends(steward, workspace) == first
    assert steward.status(workspace)["unsupervised"] is None  # no tends are expected
    hold.unlink()
    steward.wait_phase(workspace, {"finished"}, tend=True)
