"""Tend and status latency on a live run of 20 slow tasks.

Launches a run of 20 tasks (20 worker processes) on a private embedded Temporal, then
measures the `tend` update round trip (client -> workflow -> observe/spawn/write activities ->
client) and the wall time of the whole `steward status` CLI process, each over >= 20 calls.
Prints a table, then one JSON line: {"tend_p50_s", "tend_p95_s", "status_p50_s", "tasks"}.

    make bench            # or: .venv/bin/python -m bench.tend [--calls 20] [--tasks 20]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import statistics
import time

from rich.console import Console
from rich.table import Table
from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter

from bench.common import private_steward
from harness.helpers import make_workspace, wait_for
from steward.workflows.run.eval_run import EvalRun


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


async def time_tends(address: str, workflow_id: str, calls: int) -> list[float]:
    client = await Client.connect(address, data_converter=pydantic_data_converter)
    handle = client.get_workflow_handle_for(EvalRun.run, workflow_id)
    timings = []
    for _ in range(calls):
        start = time.perf_counter()
        await handle.execute_update(EvalRun.tend)
        timings.append(time.perf_counter() - start)
    return timings


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tasks", type=int, default=20)
    parser.add_argument("--calls", type=int, default=20)
    args = parser.parse_args()
    console = Console(stderr=True)

    root, steward = private_steward("steward-bench-")
    env = steward.env
    tasks = {f"slow_{i:02d}": 400 for i in range(args.tasks)}
    workspace = make_workspace(
        steward,
        root,
        tasks,
        options="samples_ramp: [2, 2]\ntend_interval: 1h\n",
        dotenv="STEWARD_OFFLINE_DELAY=5\n",
    )
    try:
        console.print(f"launching {args.tasks} slow tasks in {workspace} ...")
        launched = steward.ok("launch", cwd=workspace)
        wait_for(
            lambda: len(steward.status(workspace)["state"]["workers"]) == args.tasks,
            timeout=300,
            what="every worker to be spawned",
        )
        # Let the fleet finish starting up (imports) so we measure steady state.
        wait_for(
            lambda: (
                sum(
                    t["progress"]["in_flight"] > 0
                    for t in steward.ok("tend", cwd=workspace)
                    and steward.status(workspace)["state"]["tasks"]
                )
                == args.tasks
            ),
            timeout=300,
            interval=2,
            what="every worker to report samples in flight",
        )
        address = f"127.0.0.1:{env['STEWARD_TEMPORAL_PORT']}"
        tends = asyncio.run(time_tends(address, launched["workflow_id"], args.calls))
        statuses = []
        for _ in range(args.calls):
            start = time.perf_counter()
            result = steward("status", "--json", cwd=workspace)
            statuses.append(time.perf_counter() - start)
            assert result.code == 0, result.stderr
    finally:
        steward("cancel", "--no-wait", cwd=workspace)
        wait_for(
            lambda: steward.status(workspace)["state"]["phase"] == "cancelled",
            timeout=120,
            what="the run to be cancelled",
        )
        steward("worker", "stop")
        steward("server", "stop")
        shutil.rmtree(root, ignore_errors=True)

    figures = {
        "tend_p50_s": round(statistics.median(tends), 3),
        "tend_p95_s": round(percentile(tends, 0.95), 3),
        "status_p50_s": round(statistics.median(statuses), 3),
        "tasks": args.tasks,
    }
    table = Table(title=f"steward tend / status, {args.tasks} live tasks, {args.calls} calls each")
    for column in ("measure", "p50 s", "p95 s", "min s", "max s"):
        table.add_column(column)
    for name, values in (
        ("tend update round trip", tends),
        ("steward status (CLI process)", statuses),
    ):
        table.add_row(
            name,
            f"{statistics.median(values):.3f}",
            f"{percentile(values, 0.95):.3f}",
            f"{min(values):.3f}",
            f"{max(values):.3f}",
        )
    Console().print(table)
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
