"""Pump latency of the capacity queue: 200 runs against a bound of 2 sandboxes.

The real EvalRun and CapacityLedger workflows run on a private embedded Temporal with the real
admission activity (probe + `admit` update) and the real ledger; the activities that would
start Inspect (capture, spawn, observe, ...) are stand-ins that answer at once, so the figure
is Steward's own path: a run releases its capacity -> the ledger pumps the queue's head ->
that run's workflow wakes, tends and calls spawn. Each run holds one sandbox (a pinned
max_samples of 1), so two run at a time and the rest wait in arrival order.

Prints a table, then one JSON line: {"runs", "pump_p50_s", "pump_p95_s", "ledger_history_events"}.

    .venv/bin/python -m bench.queue [--runs 200] [--bound 2]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import time
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime

from rich.console import Console
from rich.table import Table
from temporalio import activity
from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.worker import Worker

from bench.common import private_steward
from bench.tend import percentile
from steward.activities.capacity.capacity import probe_capacity, request_admission
from steward.worker.temporal_worker import workflow_runner
from steward.workflows.activity_io import (
    ApplyResult,
    CurateResult,
    LiveOptions,
    NotifyResult,
    ObserveRequest,
    SpawnRequest,
    StopResult,
    WorkspaceWrite,
)
from steward.workflows.contracts import (
    WORKFLOW_TASK_QUEUE,
    Capture,
    Observation,
    Progress,
    RunInput,
    RunSettings,
    TaskObservation,
    TaskSpec,
    WorkerProcess,
)
from steward.workflows.ledgers.capacity_ledger import CapacityLedger
from steward.workflows.names import Activity, WorkflowType
from steward.workflows.run.eval_run import EvalRun

QUEUE = "steward-bench"
spawned_at: dict[str, float] = {}  # run id -> wall time of its first spawn
released_at: list[float] = []  # wall times of "capacity released" journal events
admitted: dict[str, str] = {}  # run id -> how it was admitted


# ---------------------------------------------------------------- stand-in activities
@activity.defn(name=Activity.CAPTURE_DEFINITION)
async def capture(request) -> Capture:
    spec = TaskSpec(name="t", model="m", identifier="t-id", samples=1, sandbox="docker")
    return Capture(tasks=[spec], max_samples=1)


@activity.defn(name=Activity.SPAWN_WORKER)
async def spawn(request: SpawnRequest) -> WorkerProcess:
    spawned_at.setdefault(request.eval_set_id, time.time())
    return WorkerProcess(
        worker_id=request.worker_id,
        tasks=[t.identifier for t in request.tasks],
        pid=1,
        create_time=0.0,
        socket="",
        output="",
        started_at=datetime.now(UTC),
    )


@activity.defn(name=Activity.OBSERVE_RUN)
async def observe(request: ObserveRequest) -> Observation:
    """Every spawned task is complete at its first observation: the run finishes at once."""
    done = Progress(total=1, completed=1)
    return Observation(
        alive={w.worker_id: False for w in request.workers},
        tasks={
            t.identifier: TaskObservation(
                identifier=t.identifier, progress=done, log="/dev/null", log_status="success"
            )
            for t in request.tasks
            if request.workers
        },
        anomalies=[],
    )


@activity.defn(name=Activity.WRITE_WORKSPACE)
async def write_workspace(write: WorkspaceWrite) -> None:
    for event in write.journal:
        if event.event == "capacity released":
            released_at.append(event.at.timestamp())
        elif event.event == "admitted":
            admitted[write.status.workflow_id] = event.data.get("how", "")


@activity.defn(name=Activity.READ_LIVE_OPTIONS)
async def ramp_settings(request) -> LiveOptions:
    return LiveOptions(samples_ramp=(1, 1), heartbeat=False)


@activity.defn(name=Activity.NOTIFY)
async def notify(request) -> NotifyResult:
    return NotifyResult(configured=False, delivered=False)


@activity.defn(name=Activity.SCAN_TRANSCRIPTS)
async def scan(request) -> list:
    return []


@activity.defn(name=Activity.APPLY_ACTIONS)
async def apply_actions(request) -> ApplyResult:
    return ApplyResult()


@activity.defn(name=Activity.APPLY_SETPOINTS)
async def apply_setpoints(request) -> list:
    return []


@activity.defn(name=Activity.TIDY_LOGS)
async def tidy(request) -> None:
    return None


@activity.defn(name=Activity.STOP_WORKERS)
async def stop(request) -> StopResult:
    return StopResult()


@activity.defn(name=Activity.CURATE_LOGS)
async def curate(request) -> CurateResult:
    return CurateResult()


STAND_INS = [
    capture,
    spawn,
    observe,
    write_workspace,
    ramp_settings,
    notify,
    scan,
    apply_actions,
    apply_setpoints,
    tidy,
    stop,
    curate,
]


# ---------------------------------------------------------------- the measurement
async def measure(address: str, runs: int, console: Console) -> tuple[list[float], dict]:
    client = await Client.connect(address, data_converter=pydantic_data_converter)
    with ThreadPoolExecutor(max_workers=8) as executor:
        workflows = Worker(
            client,
            task_queue=WORKFLOW_TASK_QUEUE,
            workflows=[EvalRun, CapacityLedger],
            workflow_runner=workflow_runner(),
        )
        hosts = Worker(
            client,
            task_queue=QUEUE,
            activities=[*STAND_INS, request_admission, probe_capacity],
            activity_executor=executor,
        )
        async with workflows, hosts:
            settings = RunSettings(tend_interval=1.0, heartbeat=False, capacity_backend="docker")
            for index in range(runs):
                await client.start_workflow(
                    EvalRun.run,
                    RunInput(
                        workspace="",
                        definition="evalset.py",
                        host_queue=QUEUE,
                        log_dir="/dev/null",
                        settings=settings,
                    ),
                    id=f"bench-run-{index:03d}",
                    task_queue=WORKFLOW_TASK_QUEUE,
                )
            console.print(f"started {runs} runs; waiting for every one to spawn ...")
            deadline = time.monotonic() + 60 + 3 * runs
            while len(spawned_at) < runs and time.monotonic() < deadline:
                await asyncio.sleep(0.5)
            await asyncio.sleep(2)  # let the last releases reach the ledger
            history = await _ledger_history(client)
            for index in range(runs):
                await client.get_workflow_handle(f"bench-run-{index:03d}").terminate("bench done")
    latencies = _pump_latencies()
    return latencies, history


def _pump_latencies() -> list[float]:
    """For each run the pump admitted: its spawn minus the latest release before it."""
    releases = sorted(released_at)
    latencies = []
    for run_id, how in admitted.items():
        if how != "pumped" or run_id not in spawned_at:
            continue
        before = [r for r in releases if r <= spawned_at[run_id]]
        if before:
            latencies.append(spawned_at[run_id] - before[-1])
    return latencies


async def _ledger_history(client: Client) -> dict:
    events, executions = 0, 0
    async for execution in client.list_workflows(
        f"WorkflowType = '{WorkflowType.CAPACITY_LEDGER}'"
    ):
        described = await client.get_workflow_handle(
            execution.id, run_id=execution.run_id
        ).describe()
        events += described.raw_description.workflow_execution_info.history_length
        executions += 1
    return {"events": events, "executions": executions}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--bound", type=int, default=2)
    args = parser.parse_args()
    console = Console(stderr=True)
    os.environ["SANDBOX_MAX_CONCURRENT"] = str(args.bound)
    os.environ["DOCKER_HOST"] = "unix:///nonexistent/docker.sock"  # no engine: reservations only

    root, steward = private_steward("steward-bench-queue-")
    env = steward.env
    steward.ok("server", "start")
    try:
        started = time.perf_counter()
        latencies, history = asyncio.run(
            measure(f"127.0.0.1:{env['STEWARD_TEMPORAL_PORT']}", args.runs, console)
        )
        elapsed = time.perf_counter() - started
    finally:
        steward("server", "stop")
        shutil.rmtree(root, ignore_errors=True)

    by_how: dict[str, int] = defaultdict(int)
    for how in admitted.values():
        by_how[how] += 1
    table = Table(title=f"capacity queue: {args.runs} runs, bound {args.bound} sandboxes")
    for column in ("measure", "value"):
        table.add_column(column)
    table.add_row("runs spawned", f"{len(spawned_at)} / {args.runs}")
    table.add_row("admitted at the door / by the pump", f"{by_how['launch']} / {by_how['pumped']}")
    if latencies:
        table.add_row(
            "pump latency p50 (release -> spawn)", f"{statistics.median(latencies):.3f} s"
        )
        table.add_row("pump latency p95", f"{percentile(latencies, 0.95):.3f} s")
        table.add_row("pump latency max", f"{max(latencies):.3f} s")
    table.add_row(
        "ledger history events (executions)", f"{history['events']} ({history['executions']})"
    )
    table.add_row("wall time", f"{elapsed:.1f} s")
    console.print(table)
    figures = {
        "runs": args.runs,
        "pump_p50_s": round(statistics.median(latencies), 3) if latencies else None,
        "pump_p95_s": round(percentile(latencies, 0.95), 3) if latencies else None,
        "ledger_history_events": history["events"],
    }
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
