"""Pump latency of the capacity queue: N runs (200 by default) against a bound of 2 sandboxes.

The real EvalRun and CapacityLedger workflows run on a private embedded Temporal with the real
admission activity (probe + `admit` update) and the real ledger; every other activity a run
calls (capture, spawn, watch, observe, ...) is a stand-in that answers at once
(bench/queue_stand_ins.py, held against the worker's list by tests/unit/test_bench_queue.py),
so the figure is Steward's own path: a run releases its capacity -> the ledger pumps the
queue's head -> that run's workflow wakes, tends and calls spawn. Each run holds one sandbox
(a pinned max_samples of 1), so two run at a time and the rest wait in arrival order.

Each release frees one sandbox and pumps exactly one run, in queue order: the k-th release
admits the k-th pumped run, and its pump latency is that run's spawn minus that release
(split into the ledger's part, release -> the run holds the admission, and the run's part,
admission -> spawn).

Prints a table, then one JSON line: {"runs", "bound", "pump_p50_s", "pump_p95_s", "pump_max_s",
"ledger_history_events", "ledger_max_history_events", "ledger_executions",
"ledger_state_bytes", ...}.

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
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

from rich.console import Console
from rich.table import Table
from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.worker import Worker

from bench.common import private_steward
from bench.queue_stand_ins import ACTIVITIES, RECORD
from bench.tend import percentile
from steward.worker.temporal_worker import workflow_runner
from steward.workflows.contracts import WORKFLOW_TASK_QUEUE, RunInput, RunSettings
from steward.workflows.ledgers.capacity_ledger import TASK_QUEUE as LEDGER_TASK_QUEUE
from steward.workflows.ledgers.capacity_ledger import CapacityLedger
from steward.workflows.names import WorkflowType
from steward.workflows.policy.capacity import domain_id
from steward.workflows.policy.capacity_contracts import LedgerInput
from steward.workflows.run.eval_run import EvalRun

QUEUE = "steward-bench"


async def measure(address: str, runs: int, bound: int, console: Console) -> dict:
    client = await Client.connect(address, data_converter=pydantic_data_converter)
    history: dict = {}
    RECORD.hold = True  # the runs admitted at the door hold their sandboxes until all queued
    ledger_id = domain_id("docker", QUEUE)
    peak_state, polls = 0, 0
    with ThreadPoolExecutor(max_workers=8) as executor:
        workflows = Worker(
            client,
            task_queue=WORKFLOW_TASK_QUEUE,
            workflows=[EvalRun, CapacityLedger],
            workflow_runner=workflow_runner(),
        )
        ledgers = Worker(
            client,
            task_queue=LEDGER_TASK_QUEUE,
            workflows=[CapacityLedger],
            workflow_runner=workflow_runner(),
        )
        hosts = Worker(
            client,
            task_queue=QUEUE,
            activities=ACTIVITIES,
            activity_executor=executor,
        )
        async with workflows, ledgers, hosts:
            launching = time.monotonic()
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
                    id=f"bench-run-{index:04d}",
                    task_queue=WORKFLOW_TASK_QUEUE,
                )
            console.print(f"started {runs} runs; waiting for all but {bound} to queue ...")
            await _wait_for_the_queue(client, ledger_id, runs - bound)
            history["queued_s"] = time.monotonic() - launching
            peak_state = await _ledger_state_bytes(client, ledger_id)
            console.print(f"{runs - bound} queued after {history['queued_s']:.1f} s; pumping ...")
            pumping = time.monotonic()
            RECORD.hold = False  # the first runs finish: every later start is the pump's
            deadline = time.monotonic() + 60 + 3 * runs
            while len(RECORD.spawned_at) < runs and time.monotonic() < deadline:
                if polls % 10 == 0:  # the queue is longest early; a query costs the worker
                    peak_state = max(peak_state, await _ledger_state_bytes(client, ledger_id))
                polls += 1
                await asyncio.sleep(0.5)
            history["pumping_s"] = time.monotonic() - pumping
            await asyncio.sleep(2)  # let the last releases reach the ledger
            history.update(await _ledger_history(client))
            history["state_bytes"] = max(peak_state, await _ledger_state_bytes(client, ledger_id))
            for index in range(runs):
                await client.get_workflow_handle(f"bench-run-{index:04d}").terminate("bench done")
    return history


def pump_latencies() -> tuple[list[float], list[float], list[float]]:
    """(release -> spawn, release -> admitted, admitted -> spawn) for each pumped run that
    spawned, pairing the k-th release with the k-th run the pump admitted."""
    releases = sorted(RECORD.released_at)
    pumped = sorted(
        (at, run_id)
        for run_id, at in RECORD.admitted_at.items()
        if RECORD.admitted.get(run_id) == "pumped"
    )
    total, ledger, run = [], [], []
    for release, (admitted, run_id) in zip(releases, pumped, strict=False):
        spawned = RECORD.spawned_at.get(run_id)
        if spawned is None:
            continue
        total.append(spawned - release)
        ledger.append(admitted - release)
        run.append(spawned - admitted)
    return total, ledger, run


async def _wait_for_the_queue(client: Client, ledger_id: str, length: int) -> None:
    """Until the ledger's queue holds `length` runs."""
    while True:
        try:
            view = await client.get_workflow_handle(ledger_id).query(CapacityLedger.view)
            if len(view.ledger.queue) >= length:
                return
        except Exception:  # noqa: BLE001 - not started yet, or handing over
            pass
        await asyncio.sleep(2.0)


async def _ledger_history(client: Client) -> dict:
    events, executions, longest = 0, 0, 0
    async for execution in client.list_workflows(
        f"WorkflowType = '{WorkflowType.CAPACITY_LEDGER}'"
    ):
        described = await client.get_workflow_handle(
            execution.id, run_id=execution.run_id
        ).describe()
        length = described.raw_description.workflow_execution_info.history_length
        events += length
        longest = max(longest, length)
        executions += 1
    return {"events": events, "executions": executions, "longest": longest}


async def _ledger_state_bytes(client: Client, ledger_id: str) -> int:
    """What the ledger carries over a continue-as-new (its LedgerInput), serialized."""
    try:
        view = await client.get_workflow_handle(ledger_id).query(CapacityLedger.view)
    except Exception:  # noqa: BLE001 - not started yet
        return 0
    carried = LedgerInput(domain=view.ledger.domain, ledger=view.ledger, log=view.log)
    return len(carried.model_dump_json().encode())


def _figure(values: list[float], how) -> float | None:
    return round(how(values), 3) if values else None


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
    load_before = os.getloadavg()[0]
    try:
        started = time.perf_counter()
        history = asyncio.run(
            measure(f"127.0.0.1:{env['STEWARD_TEMPORAL_PORT']}", args.runs, args.bound, console)
        )
        elapsed = time.perf_counter() - started
    finally:
        steward("server", "stop")
        shutil.rmtree(root, ignore_errors=True)
    load_after = os.getloadavg()[0]

    total, ledger, run = pump_latencies()
    p50, p95 = statistics.median, (lambda v: percentile(v, 0.95))
    by_how = Counter(RECORD.admitted.values())
    table = Table(title=f"capacity queue: {args.runs} runs, bound {args.bound} sandboxes")
    for column in ("measure", "value"):
        table.add_column(column)
    table.add_row("runs spawned", f"{len(RECORD.spawned_at)} / {args.runs}")
    table.add_row("admitted at the door / by the pump", f"{by_how['launch']} / {by_how['pumped']}")
    if total:
        table.add_row("pump latency p50 (release -> spawn)", f"{p50(total):.3f} s")
        table.add_row("pump latency p95", f"{p95(total):.3f} s")
        slowest = total.index(max(total))
        table.add_row(
            "pump latency max (which pump: ledger / run part)",
            f"{max(total):.3f} s (#{slowest + 1}: {ledger[slowest]:.3f} / {run[slowest]:.3f} s)",
        )
        table.add_row("pumps over 1 s", str(sum(1 for t in total if t > 1.0)))
        table.add_row(
            "  of which ledger p50 / p95 (release -> admitted)",
            f"{p50(ledger):.3f} s / {p95(ledger):.3f} s",
        )
        table.add_row(
            "  of which run p50 / p95 (admitted -> spawn)", f"{p50(run):.3f} s / {p95(run):.3f} s"
        )
    table.add_row(
        "ledger history events, all executions (longest; executions)",
        f"{history['events']} ({history['longest']}; {history['executions']})",
    )
    table.add_row("ledger state, largest seen", f"{history['state_bytes'] / 1024:.1f} KB")
    table.add_row("all queued, from the first start", f"{history['queued_s']:.1f} s")
    table.add_row("pumping, first release to last spawn", f"{history['pumping_s']:.1f} s")
    table.add_row("wall time", f"{elapsed:.1f} s")
    table.add_row("load average (1 min) before / after", f"{load_before:.2f} / {load_after:.2f}")
    console.print(table)
    figures = {
        "runs": args.runs,
        "bound": args.bound,
        "pump_p50_s": _figure(total, p50),
        "pump_p95_s": _figure(total, p95),
        "pump_max_s": _figure(total, max),
        "pumps_over_1s": sum(1 for t in total if t > 1.0),
        "ledger_p50_s": _figure(ledger, p50),
        "run_p50_s": _figure(run, p50),
        "ledger_history_events": history["events"],
        "ledger_max_history_events": history["longest"],
        "ledger_executions": history["executions"],
        "ledger_state_bytes": history["state_bytes"],
        "queued_s": round(history["queued_s"], 1),
        "pumping_s": round(history["pumping_s"], 1),
        "wall_s": round(elapsed, 1),
        "load_1m": [round(load_before, 2), round(load_after, 2)],
    }
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
