"""Admission on the embedded Temporal: three runs against a bound that fits one. The second
and third queue (positions 1 and 2), the first finishes and the ledger's pump starts the second
on its release (no tend, no poll: the queued runs tend hourly), the third is cancelled out of
the queue, and the second is cancelled while running (CANCELLED, capacity back, no process).
The queue survives kill -9 of the Temporal server and the Steward worker."""

from __future__ import annotations

import asyncio
import os
import signal
from datetime import datetime
from pathlib import Path

from harness.helpers import Steward, fetch_history, make_workspace, pid_alive, replay, wait_for
from steward.workflows.names import Signal


def _capacity_workspace(steward: Steward, root: Path, name: str, hold: Path) -> Path:
    workspace = make_workspace(
        steward,
        root / name,
        {f"boxed_{name}": 12},
        # Local sandboxes counted against the Docker bound: a Docker host's admission without
        # a Docker engine (the probe finds none and decides on the reservations alone).
        options="capacity_backend: docker\nmax_concurrent_sandboxes: 4\n",
        sandbox={f"boxed_{name}": "local"},
        eval_set_args=", max_samples=4",  # pinned: each run's footprint is the whole bound
        dotenv=f"STEWARD_OFFLINE_HOLD={hold}\n",
    )
    return workspace


def _journal(steward: Steward, workspace: Path) -> list[dict]:
    return steward.ok("collect", "--since", "0", cwd=workspace)["events"]


def _event(events: list[dict], name: str) -> dict:
    return next(e for e in events if e["event"] == name)


def _ledger(steward: Steward, domain_id: str) -> dict:
    from temporalio.client import Client
    from temporalio.contrib.pydantic import pydantic_data_converter

    from steward.workflows.ledgers.capacity_ledger import CapacityLedger
    from steward.workflows.policy.capacity_contracts import LedgerView

    async def go() -> LedgerView:
        client = await Client.connect(
            f"127.0.0.1:{steward.env['STEWARD_TEMPORAL_PORT']}",
            data_converter=pydantic_data_converter,
        )
        return await client.get_workflow_handle(domain_id).query(CapacityLedger.view)

    return asyncio.run(go()).model_dump(mode="json")


def test_three_runs_queue_pump_and_cancel(steward, workspace_root):
    holds = {name: workspace_root / f"hold-{name}" for name in "abc"}
    for hold in holds.values():
        hold.write_text("the run's samples wait while this file exists\n")
    first, second, third = (
        _capacity_workspace(steward, workspace_root, name, holds[name]) for name in "abc"
    )
    for later in (second, third):
        with open(later / "_steward.yaml", "a") as handle:
            handle.write("tend_interval: 1h\n")  # only the ledger's signal can start them

    launched = steward.ok("launch", cwd=first)
    assert launched["state"]["phase"] == "running"
    assert launched["state"]["capacity"]["held"] == {"sandboxes": 4}
    domain = launched["state"]["capacity"]["domain_id"]

    queued = steward.ok("launch", cwd=second)
    assert queued["state"]["phase"] == "queued"
    assert queued["state"]["capacity"]["position"] == 1
    assert queued["state"]["capacity"]["reason"] == "needs 4 sandboxes, 0 free of 4"
    behind = steward.ok("launch", cwd=third)
    assert behind["state"]["capacity"]["position"] == 2
    assert "1 run(s) ahead" in behind["state"]["capacity"]["reason"]
    human = steward("status", cwd=third)
    assert "queued · pos 2" in human.stdout

    # Launching a queued run again adds no second entry.
    again = steward.ok("launch", cwd=second)
    assert again["state"]["capacity"]["position"] == 1
    rows = {r["workspace"]: r for r in steward.ok("runs")["runs"]}
    assert (rows[str(second)]["position"], rows[str(third)]["position"]) == (1, 2)
    assert [e["run_id"] for e in _ledger(steward, domain)["ledger"]["queue"]] == [
        queued["workflow_id"],
        behind["workflow_id"],
    ]
    assert not list((second / "logs").glob("*.eval"))  # nothing spawned while queued
    # The run's validator refuses a tend while queued: a refusal, exit 2 like any other.
    tend_refused = steward("tend", cwd=second)
    assert tend_refused.code == 2 and "queued for capacity" in tend_refused.stderr

    # The queue is durable: kill -9 the Temporal server (SQLite file as it was) and the
    # Steward worker; once they are back the same queue stands and the pump still works.
    for service in ("temporal", "worker"):
        pid = steward.service_pid(service)
        os.kill(pid, signal.SIGKILL)
        wait_for(lambda pid=pid: not pid_alive(pid), what=f"the {service} to die")
    steward.ok("server", "start")
    steward.ok("worker", "start")
    assert [e["run_id"] for e in _ledger(steward, domain)["ledger"]["queue"]] == [
        queued["workflow_id"],
        behind["workflow_id"],
    ]

    holds["a"].unlink()  # the first run finishes and releases its sandboxes
    steward.wait_phase(first, {"finished"}, timeout=240)
    steward.wait_phase(second, {"running"}, timeout=60)
    # Admission wakes a tend at once (counted when done, so `running` can show before it);
    # nothing tended the queued run before.
    wait_for(lambda: steward.state(second)["tend_count"] >= 1, what="the tend admission woke")
    events = _journal(steward, second)
    order = [e["event"] for e in events]
    assert "tend" not in order[: order.index("admitted")] and "tend" in order
    released = _event(_journal(steward, first), "capacity released")
    admitted = _event(events, "admitted")
    assert admitted["how"] == "pumped"
    latency = (
        datetime.fromisoformat(admitted["at"]) - datetime.fromisoformat(released["at"])
    ).total_seconds()
    print(f"pump latency (release -> admitted): {latency:.3f} s")
    assert wait_for(lambda: steward.state(second)["workers"], what="the spawn")
    assert steward.status(third)["state"]["capacity"]["position"] == 1

    # Cancel the third while queued: out of the queue, never spawned.
    cancelled = steward.ok("cancel", "--reason", "not today", cwd=third)
    assert cancelled["state"]["phase"] == "cancelled"
    assert _ledger(steward, domain)["ledger"]["queue"] == []
    assert steward.status(third)["state"]["worker_counter"] == 0
    deleted = steward.ok("runs", "delete", str(third))
    assert deleted["deleted"] == behind["workflow_id"]
    wait_for(  # Temporal deletes asynchronously
        lambda: str(third) not in {r["workspace"] for r in steward.ok("runs")["runs"]},
        what="the deleted run to leave the list",
    )

    # Cancel the second while it runs: CANCELLED, its capacity released, no process left.
    pids = [w["pid"] for w in steward.status(second)["state"]["workers"].values()]
    assert steward.ok("cancel", cwd=second)["state"]["phase"] == "cancelled"
    assert _ledger(steward, domain)["ledger"]["reservations"] == {}
    assert not any(pid_alive(pid) for pid in pids)
    refused = steward("runs", "delete", str(first))
    assert refused.code == 2 and "sign it off" in refused.stderr

    # Both sides of the queue replay deterministically (a non-determinism error fails); recorded
    # as this release's shapes (asked and answered by signal), beside the older ones.
    pumped_history = fetch_history(steward, queued["workflow_id"])
    replay(pumped_history, record_as="eval_run_ask_by_signal_v1")
    replay(fetch_history(steward, domain), record_as="capacity_ledger_answers_v1")
    # ask-by-signal-v1: the queued run heard the ledger's answer, then the pump's admission.
    heard = [
        e.workflow_execution_signaled_event_attributes.signal_name
        for e in pumped_history.events
        if e.HasField("workflow_execution_signaled_event_attributes")
    ]
    assert heard.index(Signal.ADMISSION_ANSWER) < heard.index(Signal.ADMITTED), heard
    # read-ahead-v1: the admitted run's first tend asked for its options and its first budget
    # beside its observe (one workflow task scheduled all three), so it spawned a round sooner.
    first_scheduled: dict[str, int] = {}
    for event in pumped_history.events:
        if event.HasField("activity_task_scheduled_event_attributes"):
            scheduled = event.activity_task_scheduled_event_attributes
            first_scheduled.setdefault(
                scheduled.activity_type.name, scheduled.workflow_task_completed_event_id
            )
    assert (
        first_scheduled["observe_run"]
        == first_scheduled["read_ramp_settings"]
        == first_scheduled["exchange_provider_budgets"]
    ), first_scheduled
