"""One host against two: the same CPU-bound run on one Steward worker pinned to one CPU, then
on two Steward workers (two hosts: their own STEWARD_HOST_ID and data directory) pinned to a CPU
each (`taskset`), the run placing its task workers across both (`hosts: any`, the workspace's
log directory shared); and the time from losing a host to its tasks running again.

All on one private embedded Temporal (unpinned, as is the provider simulator: 400 requests in
flight x 0.5 s, far more than the workers can use, so each sample's CPU is the limit). Task
workers are forked from their host's worker and keep its CPU. Each run has 4 tasks; its wall
time is from `steward launch --no-smoke` returning to the run's last sample.

Host loss: a third run on both hosts with `host_timeout: 30s` (4 x 150 samples, two at a
time, so it is mid-run); once the second host's tasks have
made progress its Steward worker and task workers are killed with SIGKILL. Measured from the
kill to the moment every moved task runs again (a new live worker holds it on the first host).

Prints a table, then one JSON line: {"one_host_s", "two_hosts_s", "speedup",
"host_loss_to_resume_s", "host_timeout_s", "samples", ...}.

    .venv/bin/python -m bench.hosts [--samples 1000]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from harness.helpers import STEWARD, Steward, make_workspace, wait_for
from steward.worker.provider_simulator import spawn

from .common import private_steward, run_to_last_sample, wait_until_moved
from .ramp_ways import SIM_MODEL

console = Console(stderr=True)
HOST_TIMEOUT_S = 30


def pinned_worker(steward: Steward, cpu: int) -> None:
    """`steward worker start` on one CPU (its children, task workers among them, inherit it)."""
    subprocess.run(
        ["taskset", "-c", str(cpu), STEWARD, "worker", "start", "--json"],
        env=steward.env,
        check=True,
        capture_output=True,
        timeout=180,
    )


def second_host(home: Steward, root: Path) -> Steward:
    data = root / "data-second"
    data.mkdir(exist_ok=True)
    return Steward({**home.env, "STEWARD_DATA_DIR": str(data), "STEWARD_HOST_ID": "second"})


def workspace_for(
    steward: Steward, root: Path, name: str, sim: str, samples: int, options: str,
    tend: str = "10m",
) -> Path:  # fmt: skip
    return make_workspace(
        steward,
        root / name,
        {f"part_{i}": samples for i in range(4)},
        options=f"tend_interval: {tend}\n" + options,
        dotenv=f"SIM_BASE_URL={sim}/v1\nSIM_API_KEY=bench\n",
        model=SIM_MODEL,
    )


def loss_to_resume(home: Steward, second: Steward, workspace: Path) -> float:
    home.ok("launch", "--no-smoke", cwd=workspace)
    remote = wait_for(
        lambda: [w for w in home.state(workspace)["workers"].values() if w.get("host")],
        timeout=120,
        what="task workers on the second host",
    )
    moved = {i for w in remote for i in w["tasks"]}

    def progress() -> int:
        tasks = home.state(workspace)["tasks"]
        return min(t["progress"]["completed"] for t in tasks if t["spec"]["identifier"] in moved)

    wait_for(lambda: progress() >= 10, timeout=300, what="progress on the second host")
    os.kill(second.service_pid("worker"), signal.SIGKILL)
    for worker in remote:
        try:
            os.killpg(worker["pid"], signal.SIGKILL)
        except ProcessLookupError:  # gone with its host's worker
            pass
    killed = time.monotonic()
    old = {w["worker_id"] for w in remote}
    wait_until_moved(home, workspace, moved, old, timeout=HOST_TIMEOUT_S + 300)
    seconds = time.monotonic() - killed
    home("cancel", "--reason", "measured", cwd=workspace)
    return seconds


def netns_main(args: argparse.Namespace) -> None:
    """On real test hosts (bench/hosts_netns.py): one vs two vs four hosts, a kill and a
    partition, duplicates and losses counted."""
    from .hosts_netns import HOST_TIMEOUT_S as TIMEOUT
    from .hosts_netns import measure

    root, home = private_steward("steward-hosts-bench-")
    try:
        results = measure(root, home, args.samples, console.print)
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
        else:
            console.print(f"kept {root}")
    table = Table(title=f"4 tasks x {args.samples} samples, CPU-bound (offline model), netns hosts")
    for column in ("measure", "value"):
        table.add_column(column)
    rows = (
        ("one host, CPU 0: launch -> last sample (s)", "one_host_s"),
        ("two hosts, a CPU each (s)", "two_hosts_s"),
        (f"four hosts over {os.cpu_count()} CPUs (s)", "four_hosts_s"),
        (f"host killed -> its tasks running again (s; host_timeout {TIMEOUT} s)",
         "host_loss_to_resume_s"),
        ("host link down -> its tasks running again (s)", "host_partition_to_resume_s"),
        ("samples duplicated", "samples_duplicated"),
        ("samples lost", "samples_lost"),
    )  # fmt: skip
    for label, key in rows:
        table.add_row(
            label, f"{results[key]:.1f}" if isinstance(results[key], float) else str(results[key])
        )
    console.print(table)
    out = {k: round(v, 1) if isinstance(v, float) else v for k, v in results.items()}
    out.update(
        two_hosts_speedup=round(results["one_host_s"] / results["two_hosts_s"], 2),
        four_hosts_speedup=round(results["one_host_s"] / results["four_hosts_s"], 2),
        host_timeout_s=TIMEOUT,
        within_target=max(results["host_loss_to_resume_s"], results["host_partition_to_resume_s"])
        <= TIMEOUT + 30,
        samples=4 * args.samples,
        cpus=os.cpu_count(),
    )
    print(json.dumps(out))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--samples", type=int, default=1000, help="samples per task (4 tasks)")
    parser.add_argument("--keep", action="store_true", help="keep the scratch root")
    parser.add_argument(
        "--loopback", action="store_true", help="two hosts on loopback, no namespaces"
    )
    args = parser.parse_args()
    if not args.loopback:
        from harness.netns import Unavailable, check_available

        try:
            check_available()
        except Unavailable as why:
            console.print(f"no namespace hosts ({why}): two hosts on loopback instead")
        else:
            return netns_main(args)
    root, home = private_steward("steward-hosts-bench-")
    second = second_host(home, root)
    sim, url = spawn(root / "sim.port", concurrency=400, latency=0.5, jitter=0.05)
    results: dict[str, float] = {}
    try:
        home.ok("server", "start")
        console.print("one host (one CPU) ...")
        pinned_worker(home, 0)
        ws = workspace_for(home, root, "one", url, args.samples, "")
        results["one_host_s"] = run_to_last_sample(home, ws)

        console.print("two hosts (a CPU each) ...")
        pinned_worker(second, 1)
        shared = "shared_storage: true\nhosts: any\n"
        ws = workspace_for(home, root, "two", url, args.samples, shared)
        results["two_hosts_s"] = run_to_last_sample(home, ws)

        console.print(f"losing a host (host_timeout {HOST_TIMEOUT_S}s) ...")
        # Slow enough (2 samples at a time x 0.5 s) to be mid-run when the host goes.
        slow = shared + f"host_timeout: {HOST_TIMEOUT_S}s\nsamples_ramp: [2, 2]\n"
        # Tends every 5 s so the state shows progress (the host's loss wakes the run anyway).
        ws = workspace_for(home, root, "loss", url, 150, slow, tend="5s")
        results["host_loss_to_resume_s"] = loss_to_resume(home, second, ws)
    finally:
        second("worker", "stop")
        home("worker", "stop")
        home("server", "stop")
        sim.kill()
        sim.wait()
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
        else:
            console.print(f"kept {root}")

    table = Table(title=f"4 tasks x {args.samples} samples, CPU-bound (provider 400 x 0.5 s)")
    for column in ("measure", "seconds"):
        table.add_column(column)
    table.add_row("one host, one CPU: launch -> last sample", f"{results['one_host_s']:.1f}")
    table.add_row("two hosts, a CPU each: launch -> last sample", f"{results['two_hosts_s']:.1f}")
    table.add_row(
        f"host lost -> its tasks running again (host_timeout {HOST_TIMEOUT_S} s)",
        f"{results['host_loss_to_resume_s']:.1f}",
    )
    console.print(table)
    print(
        json.dumps(
            {
                "one_host_s": round(results["one_host_s"], 1),
                "two_hosts_s": round(results["two_hosts_s"], 1),
                "speedup": round(results["one_host_s"] / results["two_hosts_s"], 2),
                "host_loss_to_resume_s": round(results["host_loss_to_resume_s"], 1),
                "host_timeout_s": HOST_TIMEOUT_S,
                "within_target": results["host_loss_to_resume_s"] <= HOST_TIMEOUT_S + 30,
                "samples": 4 * args.samples,
            }
        )
    )


if __name__ == "__main__":
    main()
