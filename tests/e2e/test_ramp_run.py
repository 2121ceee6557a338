"""The ramp on a live run (offline model): it climbs while clean, holds on command, follows a
narrowed range, applies setpoints to running workers, and leaves a pinned max_samples alone."""

from __future__ import annotations

from inspect_ai.log import read_eval_log

from harness.helpers import RAMP_STEP_TIMEOUT_S, make_workspace, ramp_seen, read_journal, wait_for


def _tend_until(steward, workspace, predicate, what: str):
    return wait_for(
        lambda: steward.ok("tend", cwd=workspace) and predicate(steward.task(workspace, "wide")),
        timeout=RAMP_STEP_TIMEOUT_S,
        interval=0.5,
        what=what,
        describe=lambda: ramp_seen(steward, workspace, "wide"),
    )


def test_ramp_climbs_holds_narrows_and_applies_live(steward, workspace_root):
    workspace = make_workspace(
        steward,
        workspace_root,
        {"wide": 3000},
        options="samples_ramp: [2, 60]\ntend_interval: 1h\n",
        dotenv="STEWARD_OFFLINE_DELAY=5\n",
    )
    launched = steward.ok("launch", cwd=workspace)
    assert launched["state"]["tasks"][0]["max_samples"] == 2

    _tend_until(steward, workspace, lambda t: t["max_samples"] == 22, "a first +20 step")
    _tend_until(steward, workspace, lambda t: t["max_samples"] == 42, "a second step")

    # Hold: the climb stops where it is (42, or 60 when a tend of the run's own — one after a
    # continue-as-new hand-over — took another step first)...
    steward.ok("ramp", "hold", "--reason", "provider looks unhappy", cwd=workspace)
    assert steward.status(workspace)["state"]["ramp_hold_reason"] == "provider looks unhappy"
    held = steward.task(workspace, "wide")["max_samples"]
    assert held in (42, 60)
    for _ in range(4):
        steward.ok("tend", cwd=workspace)
    task = steward.task(workspace, "wide")
    assert task["max_samples"] == held
    # ...and the setpoint reached the running worker without a restart.
    assert task["ramp_baseline"]["setpoint"] == held and task["attempts"] == 1
    steward.ok("ramp", "resume", cwd=workspace)
    _tend_until(steward, workspace, lambda t: t["max_samples"] == 60, "the climb to the ceiling")

    # Narrowing the range on the live run brings the task down at the next tend.
    with open(workspace / "_steward.yaml", "a") as handle:
        handle.write("samples_ramp: [2, 30]\n")
    summary = steward.ok("tend", cwd=workspace)
    assert summary["phase"] == "running"
    assert steward.task(workspace, "wide")["max_samples"] == 30
    events = [e["event"] for e in read_journal(workspace)]
    for event in ("ramp up", "ramp hold", "ramp resumed", "ramp range changed", "ramp narrow"):
        assert event in events, event
    assert "setpoint | attempts" in (workspace / "status.md").read_text()

    steward.ok("cancel", cwd=workspace)
    (log,) = (workspace / "logs").glob("*.eval")
    updates = read_eval_log(str(log), header_only=True).config_updates or []
    # Each retune is in the log with its provenance: who, why, from what to what.
    applied = [
        (c.previous, c.value)
        for u in updates
        if u.provenance.author == "steward"
        for c in u.changes
        if c.name == "max_samples"
    ]
    assert applied[:2] == [(2, 22), (22, 42)] and (60, 30) in applied
    # The rest are the connection budget's ceilings, said as such.
    assert all(u.provenance.reason.startswith(("ramp ", "connection budget ")) for u in updates)


def test_explicit_max_samples_is_honoured_and_never_ramps(steward, workspace_root):
    workspace = make_workspace(
        steward,
        workspace_root,
        {"wide": 200},
        options="samples_ramp: [2, 60]\ntend_interval: 1h\n",
        dotenv="STEWARD_OFFLINE_DELAY=1\n",
        eval_set_args=", max_samples=5",
    )
    launched = steward.ok("launch", cwd=workspace)
    assert (
        launched["state"]["tasks"][0]["max_samples"] == 5
        and launched["state"]["tasks"][0]["pinned"]
    )
    for _ in range(5):
        steward.ok("tend", cwd=workspace)
    task = steward.task(workspace, "wide")
    assert task["max_samples"] == 5 and task["progress"]["in_flight"] <= 5
    assert not [e for e in read_journal(workspace) if e["event"].startswith("ramp")]
    steward.ok("cancel", cwd=workspace)
