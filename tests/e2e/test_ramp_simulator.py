"""The ramp against the provider simulator, through Inspect's real openai-api provider: it
climbs while the provider has headroom and backs off when the provider's limit drops mid-run,
without cancelling a sample."""

from __future__ import annotations

import time

import httpx

from harness.helpers import RAMP_STEP_TIMEOUT_S, make_workspace, ramp_seen, read_journal, wait_for

SIM_MODEL = "openai-api/sim/echo"


def test_ramp_climbs_with_headroom_and_backs_off_when_the_provider_pushes_back(
    steward, workspace_root, simulator
):
    workspace = make_workspace(
        steward,
        workspace_root,
        {"chat": 5000},
        options="samples_ramp: [10, 70]\ntend_interval: 1h\n",
        dotenv=f"SIM_BASE_URL={simulator}/v1\nSIM_API_KEY=test-key\n",
        model=SIM_MODEL,
    )
    steward.ok("launch", cwd=workspace)

    def tend_until(predicate, what):
        return wait_for(
            lambda: (
                steward.ok("tend", cwd=workspace) and predicate(steward.task(workspace, "chat"))
            ),
            timeout=RAMP_STEP_TIMEOUT_S,
            interval=1.0,
            what=what,
            describe=lambda: ramp_seen(steward, workspace, "chat"),
        )

    tend_until(lambda t: t["max_samples"] == 70, "the ramp to reach its ceiling")
    assert httpx.get(f"{simulator}/admin/stats").json()["rate_limited"] == 0

    # The provider's capacity drops: 429s with Retry-After past 20 in flight.
    httpx.post(f"{simulator}/admin/config", json={"concurrency": 20})
    tend_until(lambda t: t["max_samples"] < 70, "the ramp to back off")
    assert steward.task(workspace, "chat")["pushback_streak"] >= 2
    journal = read_journal(workspace)
    cuts = [e for e in journal if e["event"] == "ramp cut"]
    assert cuts and cuts[0]["previous"] == 70 and cuts[0]["setpoint"] == 50
    assert cuts[0]["connections"] is not None  # clamped to where Inspect's controller fell
    assert httpx.get(f"{simulator}/admin/stats").json()["rate_limited"] > 0

    time.sleep(2)
    steward.ok("tend", cwd=workspace)
    task = steward.task(workspace, "chat")
    assert task["progress"]["cancelled"] == 0 and task["progress"]["errored"] == 0
    assert task["attempts"] == 1
    steward.ok("cancel", cwd=workspace)


def test_explicit_max_samples_never_ramps_against_the_simulator(steward, workspace_root, simulator):
    workspace = make_workspace(
        steward,
        workspace_root,
        {"chat": 2000},
        options="samples_ramp: [10, 70]\ntend_interval: 1h\n",
        dotenv=f"SIM_BASE_URL={simulator}/v1\nSIM_API_KEY=test-key\n",
        model=SIM_MODEL,
        eval_set_args=", max_samples=8",
    )
    steward.ok("launch", cwd=workspace)
    for _ in range(6):
        steward.ok("tend", cwd=workspace)
        time.sleep(0.5)
    task = steward.task(workspace, "chat")
    assert task["pinned"] and task["max_samples"] == 8
    assert task["ramp_baseline"]["setpoint"] == 8 and task["progress"]["in_flight"] <= 8
    assert httpx.get(f"{simulator}/admin/stats").json()["peak_in_flight"] <= 8
    steward.ok("cancel", cwd=workspace)
