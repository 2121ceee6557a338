"""Throughput against a provider of fixed capacity: plain Inspect vs Steward with and without the ramp.

The provider simulator is set to a fixed capacity (`--concurrency` requests in flight,
`--latency` seconds each, 429 + Retry-After past that), so capacity_rps = concurrency / latency.
An eval set of `--samples` samples over 4 tasks runs three ways, each against a fresh simulator:
(a) plain `eval_set()` with Inspect's defaults, (b) Steward with the ramp (tend every 5 s),
(c) Steward with `samples_ramp: false`. Prints samples/s, its ratio to capacity, 429s served and
samples cancelled for each, writes a PNG of (b)'s setpoint and throughput over time, and ends
with one JSON line: capacity_rps, plain_rps, ramp_rps, fixed_rps, ramp_ratio, samples_cancelled,
last_sample_to_finished_s, last_sample_to_scanned_s, scan_rps (samples over the seconds a scan
was seen running, status read each second), samples. Samples/s is to the last sample; the time
to `finished` and to the end of the integrity scan is measured from there.

    .venv/bin/python -m bench.ramp [--samples 2000] [--concurrency 40] [--latency 2.0]

Sized for a 2-core machine: Inspect spends ~50 ms of CPU per sample, so a capacity much above
~25 samples/s measures the CPU, not the ramp.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
from rich.console import Console
from rich.table import Table

from harness.helpers import Steward, free_port, make_workspace, write_definition
from worker.provider_simulator import spawn

TASKS = 4
SIM_MODEL = "openai-api/sim/echo"
console = Console(stderr=True)


class SimulatorProcess:
    def __init__(self, root: Path, concurrency: int, latency: float) -> None:
        self.process, self.url = spawn(
            root / f"sim-{time.monotonic_ns()}.port",
            concurrency=concurrency,
            latency=latency,
            jitter=latency / 10,
            retry_after=1,
        )

    def stats(self) -> dict:
        return httpx.get(f"{self.url}/admin/stats").json()

    def stop(self) -> None:
        self.process.kill()
        self.process.wait()


def _tasks(samples: int) -> dict[str, int]:
    return {f"part_{i}": samples // TASKS for i in range(TASKS)}


def _errored_samples(log_dir: Path) -> int:
    from inspect_ai.log import read_eval_log_sample_summaries

    return sum(
        1 for p in log_dir.glob("*.eval") for s in read_eval_log_sample_summaries(str(p)) if s.error
    )


def run_plain(root: Path, args, sim: SimulatorProcess) -> dict:
    workspace = root / "plain"
    workspace.mkdir()
    write_definition(
        workspace, _tasks(args.samples), model=SIM_MODEL, eval_set_args=', log_dir="logs"'
    )
    env = {**os.environ, "SIM_BASE_URL": f"{sim.url}/v1", "SIM_API_KEY": "bench"}
    start = time.monotonic()
    subprocess.run(
        [sys.executable, "evalset.py"],
        cwd=workspace,
        env=env,
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    elapsed = time.monotonic() - start
    return {"seconds": elapsed, "cancelled": _errored_samples(workspace / "logs")}


def run_steward(
    root: Path, args, sim: SimulatorProcess, name: str, options: str, trace: list | None = None
) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("STEWARD_")}
    data = root / f"data-{name}"
    data.mkdir()
    env.update(
        STEWARD_DATA_DIR=str(data),
        STEWARD_TEMPORAL_PORT=str(free_port()),
        STEWARD_TEMPORAL_UI_PORT=str(free_port()),
    )
    steward = Steward(env)
    steward.ok("server", "start")
    steward.ok("worker", "start")
    workspace = make_workspace(
        steward,
        root / name,
        _tasks(args.samples),
        options=options + "tend_interval: 5s\n",
        dotenv=f"SIM_BASE_URL={sim.url}/v1\nSIM_API_KEY=bench\n",
        model=SIM_MODEL,
    )
    try:
        start = time.monotonic()
        steward.ok("launch", cwd=workspace)
        marks: dict[str, float] = {}  # last_sample, finished, scanned: seconds since launch
        scan_busy = 0.0  # seconds a scan was seen running (status read each second)
        while True:
            state = steward.status(workspace)["state"]
            now = time.monotonic() - start
            if trace is not None:
                trace.append(
                    (
                        now,
                        sum(t["max_samples"] for t in state["tasks"] if t["phase"] == "running"),
                        state["samples_done"],
                    )
                )
            if state["samples_done"] >= state["samples_total"] > 0:
                marks.setdefault("last_sample", now)
            if state["scanning_logs"]:
                scan_busy += 1.0
            if state["phase"] in ("finished", "stalled", "failed", "cancelled"):
                marks.setdefault("finished", now)
                over = state["phase"] != "finished" or now > SCAN_WAIT_S
                if _all_scanned(state) or state["scan_problem"] or over:
                    marks.setdefault("scanned", now)
                    break
            time.sleep(1.0)
        cancelled = sum(t["progress"]["cancelled"] for t in state["tasks"]) + _errored_samples(
            workspace / "logs"
        )
        return {
            "seconds": marks.get("last_sample", marks["finished"]),
            "to_finished": marks["finished"],
            "to_scanned": marks["scanned"],
            "scan_busy": scan_busy,
            "scan_problem": state["scan_problem"],
            "cancelled": cancelled,
            "phase": state["phase"],
        }
    finally:
        steward("worker", "stop")
        steward("server", "stop")


SCAN_WAIT_S = 900.0  # past this, a scan that has not ended is reported as it stands


def _all_scanned(state: dict) -> bool:
    logs = {t["log"] for t in state["tasks"] if t["phase"] == "complete" and t["log"]}
    return not state["scanning_logs"] and logs <= set(state["scanned_logs"])


def plot(trace: list, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    times = [t for t, _, _ in trace]
    setpoints = [s for _, s, _ in trace]
    # Progress moves at tends (every 5 s): a trailing 15 s window shows the rate, not the tends.
    rates = []
    for now, _, done in trace:
        first = next(p for p in trace if p[0] >= now - 15)
        rates.append((done - first[2]) / max(1.0, now - first[0]))
    fig, left = plt.subplots(figsize=(8, 4))
    left.plot(times, setpoints, color="tab:blue", label="sum of max_samples setpoints")
    left.set_xlabel("seconds since launch")
    left.set_ylabel("setpoint (samples)", color="tab:blue")
    right = left.twinx()
    right.plot(times, rates, color="tab:orange", alpha=0.7, label="throughput")
    right.set_ylabel("samples/s", color="tab:orange")
    fig.suptitle("Steward ramp against a fixed-capacity provider")
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def _after_last(result: dict, mark: str) -> str:
    """Seconds from the last sample to `mark` ("-" for plain Inspect, which has neither)."""
    return f"{result[mark] - result['seconds']:.1f} s" if mark in result else "-"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--samples", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=40)
    parser.add_argument("--latency", type=float, default=2.0)
    parser.add_argument("--plot", type=Path, default=Path("bench/ramp.png"))
    args = parser.parse_args()
    capacity = args.concurrency / args.latency
    samples = args.samples // TASKS * TASKS
    root = Path(tempfile.mkdtemp(prefix="steward-ramp-bench-"))
    results: dict[str, dict] = {}
    trace: list = []
    try:
        ways = [
            ("plain", lambda sim: run_plain(root, args, sim)),
            ("ramp", lambda sim: run_steward(root, args, sim, "ramp", "", trace)),
            ("fixed", lambda sim: run_steward(root, args, sim, "fixed", "samples_ramp: false\n")),
        ]
        for name, run in ways:
            console.print(f"running {name} ({samples} samples, capacity {capacity:g} rps) ...")
            sim = SimulatorProcess(root, args.concurrency, args.latency)
            try:
                results[name] = run(sim)
                results[name]["rate_limited"] = sim.stats()["rate_limited"]
            finally:
                sim.stop()
        plot(trace, args.plot)
    finally:
        shutil.rmtree(root, ignore_errors=True)

    table = Table(
        title=f"{samples} samples over {TASKS} tasks; provider capacity {capacity:g} samples/s "
        f"({args.concurrency} in flight x {args.latency:g} s)"
    )
    for column in (
        "way",
        "seconds",
        "samples/s",
        "ratio to capacity",
        "429s served",
        "samples cancelled",
        "+ to finished",
        "+ to scanned",
    ):
        table.add_column(column)
    for name, result in results.items():
        rate = samples / result["seconds"]
        result["rps"] = rate
        table.add_row(
            name,
            f"{result['seconds']:.1f}",
            f"{rate:.2f}",
            f"{rate / capacity:.2f}",
            str(result["rate_limited"]),
            str(result["cancelled"]),
            _after_last(result, "to_finished"),
            _after_last(result, "to_scanned"),
        )
    Console().print(table)
    Console().print(f"plot of the ramp run: {args.plot}")
    for name, result in results.items():
        if result.get("scan_problem"):  # reported, not hidden: its figures are then not a scan's
            Console().print(f"{name}: the integrity scan failed: {result['scan_problem']}")
    print(
        json.dumps(
            {
                "capacity_rps": round(capacity, 2),
                "plain_rps": round(results["plain"]["rps"], 2),
                "ramp_rps": round(results["ramp"]["rps"], 2),
                "fixed_rps": round(results["fixed"]["rps"], 2),
                "ramp_ratio": round(results["ramp"]["rps"] / capacity, 3),
                "samples_cancelled": results["ramp"]["cancelled"],
                "last_sample_to_finished_s": round(
                    results["ramp"]["to_finished"] - results["ramp"]["seconds"], 1
                ),
                "last_sample_to_scanned_s": round(
                    results["ramp"]["to_scanned"] - results["ramp"]["seconds"], 1
                ),
                "scan_rps": None
                if results["ramp"]["scan_problem"]
                else round(samples / max(1.0, results["ramp"]["scan_busy"]), 2),
                "scan_failed": bool(results["ramp"]["scan_problem"]),
                "samples": samples,
            }
        )
    )


if __name__ == "__main__":
    main()
