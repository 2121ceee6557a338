"""Throughput against a provider of fixed capacity: plain `eval_set()` in one process against
`steward launch` with the workspace's defaults, each against a fresh provider simulator.

Cases, each run both ways in the same invocation (bench/ramp_ways.py runs them), the provider
shapes also a second Steward run against the same endpoint and data dir (the learned case):
(a) `cap`, provider-bound: 80 requests in flight x 2 s (40 requests/s; 429 + Retry-After past
    that), 4 tasks x 500 samples; Steward's run is followed to its integrity scan's end, the
    simulator answering the scanner's prompts (a few flagged);
(b) `rpm`: 2,400 requests/min with OpenAI-style rate-limit headers, lognormal latency around
    2 s, no concurrency cap;
(c) `tpm`: 247,000 tokens/min with answers of ~200 tokens (latency in proportion, 2 s at 200):
    ~20 requests/s, before the 2,400 requests/min bind;
(d) `cpu`, CPU-bound: 400 in flight x 0.5 s, 8 tasks x 500 samples: one process's CPU is the
    limit.
The per-minute buckets hold 2 s of refill (a hosted API's hold up to a minute; a small burst
keeps "what the provider allows" its rate). For each provider shape the JSON has
`ratio_to_capacity_<shape>` (samples/s to the last sample / what the provider allows: a tokens
limit at the tokens the answers used, a concurrency cap at the latency the simulator answered
at, `served_latency_s_<shape>`, its event loop's lateness under the machine's load included;
`nominal_ratio_to_capacity_<shape>` is at the nominal latency), `plain_ratio_to_capacity_<shape>`,
`second_run_ratio_to_capacity_<shape>`, `share_429_<shape>` (429s / requests),
`plain_share_429_<shape>`, `second_run_share_429_<shape>`, and first request / time to 90 %
(`first_request_s_<shape>`, `to_90pct_s_<shape>`, with `plain_` and `second_run_` twins).

The run's `finished` and `scanned` are the times its journal records (the status poll's, up to
~1.5 s later, are printed as `*_polled_s`). Samples/s is to the last sample: when the provider answered the last eval request (the same
instrument for both ways; `*_reported` figures are to plain's exit and to Steward's state
showing the last sample, read once a second). The first request and the time to 90 % of capacity (the
simulator's in-flight count reaching 90 % of its limit) are from when the work could start:
plain's command start, and Steward's `launch` returning (its smoke runs inside `launch`).
Prints a table per case, a PNG of served requests/s over time for both ways of both cases, and
ends with one JSON line: plain_rps, ramp_rps (Steward, case a), ramp_ratio (Steward / plain),
cpu_plain_rps, cpu_steward_rps, cpu_ratio, first_request_s, to_90pct_s, plain_first_request_s,
plain_to_90pct_s, launch_s, steward_429s, plain_429s, samples_cancelled,
last_sample_to_finished_s, last_sample_to_scanned_s, scan_rps (scanner prompts answered per
second from the first to the last, part of it beside running tasks, inside their budget),
scan_full_budget_rps (the same once no eval work is left: the scan at the run's whole budget),
scan_capacity_ratio (scan_full_budget_rps / capacity; scan_overall_capacity_ratio is scan_rps's),
scanned_after_last_sample, finish_target_s (10 s + that many prompts at capacity: the bound on
last_sample_to_scanned_s), capacity_rps, cpu_capacity_rps, samples.

    .venv/bin/python -m bench.ramp [--scale 1.0] [--plot bench/ramp.png] [--shapes cap,rpm,tpm,cpu]
        [--trace FILE] [--keep] [--no-scan-wait]
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
from pathlib import Path

from rich.console import Console
from rich.table import Table

from .ramp_ways import Case, Simulator, run_plain, run_steward

console = Console(stderr=True)
out = Console(width=140)  # the tables' columns stay whole in a log or a pipe


def cases(scale: float) -> list[Case]:
    per_task = max(10, int(500 * scale))
    return [
        Case(
            "cap",
            tasks=4,
            samples_per_task=per_task,
            concurrency=80,
            latency=2.0,
            scan=True,
            second_run=True,
        ),
        Case(
            "rpm",
            tasks=4,
            samples_per_task=per_task,
            concurrency=0,
            latency=2.0,
            scan=False,
            rpm=2400,
            headers="openai",
            latency_shape="lognormal",
            second_run=True,
        ),
        Case(
            "tpm",
            tasks=4,
            samples_per_task=per_task,
            concurrency=0,
            latency=2.0,
            scan=False,
            rpm=2400,
            tpm=247_000,
            headers="openai",
            latency_shape="tokens",
            output_tokens=200,
            second_run=True,
        ),
        Case("cpu", tasks=8, samples_per_task=per_task, concurrency=400, latency=0.5, scan=False),
    ]


def _ways(root: Path, case: Case):
    """(way, run) in order; the second Steward run reuses the first's simulator (reset: its
    counters zero, its buckets full) and data dir."""
    yield "plain", lambda sim: run_plain(root, case, sim)
    yield "steward", lambda sim: run_steward(root, case, sim)
    if case.second_run:
        yield "second_run", lambda sim: run_steward(root, case, sim, attempt=2)


def run_case(root: Path, case: Case) -> dict[str, dict]:
    results: dict[str, dict] = {}
    sim = None
    try:
        for way, run in _ways(root, case):
            console.print(
                f"[{case.name}] {way}: {case.samples} samples over {case.tasks} tasks, "
                f"{case.describe()}: capacity ~{case.capacity_rps:.3g} requests/s ..."
            )
            if way == "second_run":
                sim.reset()
            else:
                if sim is not None:
                    sim.stop()
                sim = Simulator(root, case)
            result = run(sim)
            stats = sim.stats()
            results[way] = measure(case, result, stats, sim.trace)
    finally:
        if sim is not None:
            sim.stop()
    return results


def measure(case: Case, result: dict, stats: dict, trace) -> dict:  # type: ignore[no-untyped-def]
    """One way's figures from what the provider saw."""
    answered = trace.last_eval_answer()
    capacity = case.capacity_from(stats)
    rate_shape = bool(case.rpm or case.tpm)
    result.update(
        # To the last sample as the provider saw it: its answer to the last eval request.
        last_sample=answered - result["start"],
        rps=case.samples / (answered - result["start"]),
        # ... and as the command reported it: plain's exit, Steward's state (polled each s).
        rps_reported=case.samples / result["seconds"],
        rate_limited=stats["rate_limited"],
        requests=stats.get("requests", 0),
        share_429=stats["rate_limited"] / max(1, stats.get("requests", 0)),
        capacity=capacity,
        first_request=trace.first_request_after(result["work_start"]),
        first_request_from_start=trace.first_request_after(result["start"]),
        to_90pct=trace.at_share_of_rate_after(result["work_start"], capacity)
        if rate_shape
        else trace.at_share_of_capacity_after(result["work_start"], case.concurrency),
        scan_rps=trace.scan_rate(),
        trace_points=list(trace.points),
    )
    result["ratio_to_capacity"] = result["rps"] / capacity
    result["nominal_ratio_to_capacity"] = result["rps"] / case.capacity_from(stats, False)
    served = stats.get("served") or 0
    result["served_latency_s"] = stats.get("busy_s", 0.0) / served if served else None
    result["scan_full_rps"], result["scanned_after_last"] = trace.scan_rate_after(
        answered  # the last sample, as the provider saw it
    )
    first_scan, last_scan = trace.scan_span_after(answered)
    result.update(
        served_rate=trace.served_rate(),
        # Where the wait after the last sample goes: until the scan's first prompt is
        # answered, and from its last one to the run showing every log scanned.
        scan_start=None if first_scan is None else first_scan - answered,
        scan_tail=None
        if last_scan is None or "to_scanned" not in result
        else result["to_scanned"] - (last_scan - result["start"]),
    )
    return result


def _s(value: float | None, digits: int = 1) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def table(case: Case, results: dict[str, dict]) -> Table:
    out = Table(
        title=f"({case.name}) {case.samples} samples over {case.tasks} tasks; provider "
        f"{case.describe()} = {case.capacity_rps:.3g} requests/s"
    )
    for column in (
        "way",
        "samples/s",
        "reported",
        "of capacity",
        "of nominal",
        "latency s",
        "429s",
        "429 share",
        "launch s",
        "1st request s",
        "90% cap. s",
        "cancelled",
        "+finished s",
        "+scanned s",
    ):
        out.add_column(column)
    for way, r in results.items():
        out.add_row(
            way,
            f"{r['rps']:.2f}",
            f"{r['rps_reported']:.2f}",
            f"{r['ratio_to_capacity']:.3f}",
            f"{r['nominal_ratio_to_capacity']:.3f}",
            _s(r["served_latency_s"], 2),
            str(r["rate_limited"]),
            f"{r['share_429']:.2%}",
            _s(r.get("launch_s")),
            _s(r["first_request"]),
            _s(r["to_90pct"]),
            str(r["cancelled"]),
            _s(r["to_finished"] - r["last_sample"]) if "to_finished" in r else "-",
            _s(r["to_scanned"] - r["last_sample"]) if case.scan and "to_scanned" in r else "-",
        )
    return out


def plot(runs: list[tuple[Case, dict[str, dict]]], path: Path) -> None:
    try:
        import matplotlib
    except ImportError:
        console.print("matplotlib is not installed: no plot")
        return

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(len(runs), 1, figsize=(9, 3.6 * len(runs)), squeeze=False)
    for ax, (case, results) in zip(axes[:, 0], runs, strict=True):
        for way, r in results.items():
            start = r["start"]
            ax.plot(
                [t - start for t, _ in r["served_rate"]],
                [rate for _, rate in r["served_rate"]],
                label=way,
            )
        capacity = next(iter(results.values()))["capacity"]
        ax.axhline(capacity, color="grey", linestyle="--", label="capacity")
        ax.set_title(f"({case.name}) served requests/s, 2 s window")
        ax.set_xlabel("seconds since the command started")
        ax.set_ylabel("requests/s")
        ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--scale", type=float, default=1.0, help="samples per task x 500")
    parser.add_argument("--plot", type=Path, default=Path("bench/ramp.png"))
    parser.add_argument(
        "--keep", action="store_true", help="keep the workspaces (journals, logs) and say where"
    )
    parser.add_argument(
        "--shapes", default="cap,rpm,tpm,cpu", help="which cases to run, comma-separated"
    )
    parser.add_argument(
        "--trace",
        type=Path,
        default=None,
        help="write each way's simulator trace and marks (start, work start) to this JSON file",
    )
    parser.add_argument(
        "--no-scan-wait",
        action="store_true",
        help="measure the cap shape's Steward run to its last sample, not through its scan "
        "(the scan keys are then not measured; at --scale 5 the scan takes ~250 s more)",
    )
    args = parser.parse_args()
    chosen = args.shapes.split(",")
    root = Path(tempfile.mkdtemp(prefix="steward-ramp-bench-"))
    runs = []
    try:
        for case in cases(args.scale):
            if args.no_scan_wait:
                case.scan = False
            if case.name in chosen:
                runs.append((case, run_case(root, case)))
                out.print(table(case, runs[-1][1]))  # as each case ends: a later one may fail
        plot(runs, args.plot)
        if args.trace is not None:
            write_trace(runs, args.trace)
    finally:
        if args.keep:
            out.print(f"workspaces kept in {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)
    for case, results in runs:
        problem = results["steward"].get("scan_problem")
        if problem:  # reported, not hidden: its figures are then not a scan's
            out.print(f"({case.name}) the integrity scan failed: {problem}")
    out.print(f"served rate over time: {args.plot}")
    figures = shape_keys(runs)
    by_name = {case.name: (case, results) for case, results in runs}
    if "cpu" in by_name:
        cpu = by_name["cpu"][1]
        figures["cpu_plain_rps"] = round(cpu["plain"]["rps"], 2)
        figures["cpu_steward_rps"] = round(cpu["steward"]["rps"], 2)
        figures["cpu_ratio"] = round(cpu["steward"]["rps"] / cpu["plain"]["rps"], 3)
    if "cap" in by_name and "cpu" in by_name:
        figures.update(today_keys(*by_name["cap"], *by_name["cpu"]))
    print(json.dumps(figures))


def write_trace(runs: list[tuple[Case, dict[str, dict]]], path: Path) -> None:
    """Each way's trace as the simulator counted it (seconds since the simulator started or
    was reset, served, in flight, 429s, scanner prompts) beside the command's start and its
    work's start, Steward's budget moves (from its journal) and the pacing state its launch
    found, for looking at where a run's time went."""
    path.write_text(
        json.dumps(
            {
                case.name: {
                    way: {
                        "start": r["start"],
                        "work_start": r["work_start"],
                        "points": r["trace_points"],
                        "budget_moves": r.get("budget_moves", []),
                        "pace_at_start": r.get("pace_at_start", []),
                    }
                    for way, r in results.items()
                }
                for case, results in runs
            }
        )
    )


def shape_keys(runs: list[tuple[Case, dict[str, dict]]]) -> dict:
    """The provider shapes' keys: ratio to capacity, 429 share, first request and time to 90 %
    for each way."""
    figures: dict = {}
    for case, results in runs:
        if case.name == "cpu":
            continue
        figures[f"capacity_rps_{case.name}"] = round(next(iter(results.values()))["capacity"], 2)
        for way, r in results.items():
            prefix = {"plain": "plain_", "steward": "", "second_run": "second_run_"}[way]
            figures[f"{prefix}ratio_to_capacity_{case.name}"] = round(r["ratio_to_capacity"], 3)
            figures[f"{prefix}nominal_ratio_to_capacity_{case.name}"] = round(
                r["nominal_ratio_to_capacity"], 3
            )
            figures[f"{prefix}served_latency_s_{case.name}"] = _round(r["served_latency_s"], 3)
            figures[f"{prefix}share_429_{case.name}"] = round(r["share_429"], 4)
            figures[f"{prefix}samples_per_s_{case.name}"] = round(r["rps"], 2)
            figures[f"{prefix}first_request_s_{case.name}"] = _round(r["first_request"])
            figures[f"{prefix}to_90pct_s_{case.name}"] = _round(r["to_90pct"])
            if "budget" in r:
                figures[f"{prefix}budget_{case.name}"] = r["budget"]
    return figures


def today_keys(a: Case, prov: dict, b: Case, cpu: dict) -> dict:
    """The keys the bench printed before the shapes (case (a) is the `cap` shape)."""
    steward, plain = prov["steward"], prov["plain"]
    scan_rps = None if steward["scan_problem"] else steward["scan_rps"]
    scan_full = None if steward["scan_problem"] else steward["scan_full_rps"]
    # The bound on the wait after the last sample: 10 s plus what was left to scan
    # then, at the provider's capacity.
    finish_target = 10 + steward["scanned_after_last"] / a.capacity_rps
    return {
        "capacity_rps": a.capacity_rps,
        "plain_rps": round(plain["rps"], 2),
        "ramp_rps": round(steward["rps"], 2),
        "ramp_ratio": round(steward["rps"] / plain["rps"], 3),
        "plain_rps_reported": round(plain["rps_reported"], 2),
        "ramp_rps_reported": round(steward["rps_reported"], 2),
        "ramp_ratio_reported": round(steward["rps_reported"] / plain["rps_reported"], 3),
        "cpu_capacity_rps": b.capacity_rps,
        "cpu_plain_rps": round(cpu["plain"]["rps"], 2),
        "cpu_steward_rps": round(cpu["steward"]["rps"], 2),
        "cpu_ratio": round(cpu["steward"]["rps"] / cpu["plain"]["rps"], 3),
        "cpu_ratio_reported": round(
            cpu["steward"]["rps_reported"] / cpu["plain"]["rps_reported"], 3
        ),
        "first_request_s": _round(steward["first_request"]),
        # From the command's start (plain's figure is that already): a fresh run's
        # smoke runs beside its start, so its work begins before `launch` returns.
        "first_request_from_start_s": _round(steward["first_request_from_start"]),
        "to_90pct_s": _round(steward["to_90pct"]),
        "plain_first_request_s": _round(plain["first_request"]),
        "plain_to_90pct_s": _round(plain["to_90pct"]),
        "launch_s": _round(steward["launch_s"]),
        "steward_429s": steward["rate_limited"],
        "plain_429s": plain["rate_limited"],
        "samples_cancelled": steward["cancelled"] + cpu["steward"]["cancelled"],
        "last_sample_to_finished_s": _round(steward["to_finished"] - steward["last_sample"]),
        "last_sample_to_scanned_s": _round(steward["to_scanned"] - steward["last_sample"]),
        # ... as the status poll saw them (up to ~1.5 s later than the journal's times)
        "last_sample_to_finished_polled_s": _round(
            steward["to_finished_polled"] - steward["last_sample"]
        ),
        "last_sample_to_scanned_polled_s": _round(
            steward["to_scanned_polled"] - steward["last_sample"]
        ),
        "scan_rps": _round(scan_rps),
        "scan_full_budget_rps": _round(scan_full),
        "scan_capacity_ratio": _round(scan_full / a.capacity_rps if scan_full else None, 3),
        "scan_overall_capacity_ratio": _round(scan_rps / a.capacity_rps if scan_rps else None, 3),
        "scanned_after_last_sample": steward["scanned_after_last"],
        "finish_target_s": _round(finish_target),
        "scan_start_s": _round(steward["scan_start"]),
        "scan_tail_s": _round(steward["scan_tail"]),
        "scan_failed": bool(steward["scan_problem"]),
        "budget": steward["budget"],
        "samples": a.samples,
        "cpu_samples": b.samples,
    }


def _round(value: float | None, digits: int = 1) -> float | None:
    return None if value is None else round(value, digits)


if __name__ == "__main__":
    main()
