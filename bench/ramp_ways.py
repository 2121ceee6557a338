"""The ways bench/ramp.py runs one eval set against a fresh provider simulator: plain
`eval_set()` in one process, and `steward launch` with the workspace's defaults. Each way is
timed from its command's start; a sampler reads the simulator's counters every 0.2 s, so the
first request, the time to 90 % of capacity and the served rate over time come from what the
provider saw, not from what either side reports."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from harness.helpers import Steward, free_port, make_workspace, write_definition
from steward.worker.provider_simulator import spawn

SIM_MODEL = "openai-api/sim/echo"
SAMPLE_EVERY_S = 0.2
SCAN_WAIT_S = 900.0  # past this, a scan that has not ended is reported as it stands
SCAN_FLAG_RATE = 0.05  # the simulator flags this share of scanned transcripts
PROMPT_TOKENS = 6  # words in the harness's prompts, as the simulator counts tokens


@dataclass
class Case:
    name: str
    tasks: int
    samples_per_task: int
    concurrency: int  # the provider's cap on requests in flight (0: none)
    latency: float
    scan: bool  # wait for the integrity scan (and measure it)
    rpm: int = 0  # requests per minute (0: none)
    tpm: int = 0  # tokens per minute (0: none)
    burst: float = 2.0  # seconds of refill the per-minute buckets hold
    headers: str = "none"  # the rate-limit headers the provider sends
    latency_shape: str = "uniform"
    output_tokens: int = 0  # an answer's tokens (0: its words)
    second_run: bool = False  # also a second Steward run against the same endpoint

    @property
    def capacity_rps(self) -> float:
        """Requests/s the provider allows (for a tokens limit, at the tokens a request is
        expected to use: `capacity_from` corrects it with what the provider counted)."""
        limits = []
        if self.concurrency:
            limits.append(self.concurrency / self.latency)
        if self.rpm:
            limits.append(self.rpm / 60)
        if self.tpm:
            limits.append(self.tpm / 60 / (self.output_tokens + PROMPT_TOKENS))
        return min(limits)

    def capacity_from(self, stats: dict, served_latency: bool = True) -> float:
        """What the provider allowed: a tokens limit at the tokens its answers used, and a
        concurrency cap at the latency it answered at (`busy_s / served`: its sleep plus its
        event loop's lateness under the machine's load, which no client escapes; printed as
        `served_latency_s`). `served_latency=False`: at the nominal latency, for the figures
        beside it."""
        served = stats.get("served") or 0
        limits = []
        if self.concurrency:
            latency = self.latency
            if served_latency and served and stats.get("busy_s"):
                latency = stats["busy_s"] / served
            limits.append(self.concurrency / latency)
        if self.rpm:
            limits.append(self.rpm / 60)
        if self.tpm:
            per_request = stats["tokens"] / served if served else self.output_tokens + PROMPT_TOKENS
            limits.append(self.tpm / 60 / per_request)
        return min(limits)

    @property
    def samples(self) -> int:
        return self.tasks * self.samples_per_task

    def task_sizes(self) -> dict[str, int]:
        return {f"part_{i}": self.samples_per_task for i in range(self.tasks)}

    def describe(self) -> str:
        parts = []
        if self.concurrency:
            parts.append(f"{self.concurrency} in flight")
        if self.rpm:
            parts.append(f"{self.rpm} requests/min")
        if self.tpm:
            parts.append(f"{self.tpm} tokens/min (answers ~{self.output_tokens} tokens)")
        parts.append(f"{self.latency_shape} latency {self.latency:g} s")
        if self.headers != "none":
            parts.append(f"{self.headers}-style headers")
        return ", ".join(parts)


@dataclass
class Trace:
    """(seconds since the simulator started, served, in flight, 429s, scanner prompts served)
    as the simulator counts them."""

    points: list[tuple[float, int, int, int, int]] = field(default_factory=list)

    def first_request_after(self, mark: float) -> float | None:
        base = next((p for p in self.points if p[0] >= mark), None)
        if base is None:
            return None
        for t, served, in_flight, _, _ in self.points:
            if t >= mark and (served > base[1] or in_flight > 0):
                return t - mark
        return None

    def at_share_of_rate_after(self, mark: float, rate: float, share=0.9) -> float | None:
        """When the served rate (2 s window) first reached `share` of `rate` after `mark`."""
        for t, served_rate in self.served_rate():
            if t >= mark and served_rate >= share * rate:
                return t - mark
        return None

    def at_share_of_capacity_after(self, mark: float, concurrency: int, share=0.9) -> float | None:
        for t, _, in_flight, _, _ in self.points:
            if t >= mark and in_flight >= share * concurrency:
                return t - mark
        return None

    def scan_rate(self) -> float | None:
        """Scanner prompts answered per second, from the first to the last one."""
        scanning = [(t, n) for t, _, _, _, n in self.points if n > 0]
        if len(scanning) < 2:
            return None
        first = next(p for p in self.points if p[4] > 0)
        last = next(p for p in self.points if p[4] == scanning[-1][1])
        return (last[4] - first[4]) / max(SAMPLE_EVERY_S, last[0] - first[0])

    def scan_rate_after(self, mark: float) -> tuple[float | None, int]:
        """Scanner prompts answered per second once `mark` has passed (from the first one
        after it to the last), and how many were answered after it. With `mark` the last
        sample this is the scan at the run's whole budget, with no eval work beside it."""
        after = [p for p in self.points if p[0] >= mark]
        if not after:
            return None, 0
        base = after[0][4]
        moving = [p for p in after if p[4] > base]
        if len(moving) < 2:
            return None, (moving[-1][4] - base) if moving else 0
        first, last = moving[0], next(p for p in after if p[4] == moving[-1][4])
        rate = (last[4] - first[4]) / max(SAMPLE_EVERY_S, last[0] - first[0])
        return rate, last[4] - base

    def scan_span_after(self, mark: float) -> tuple[float | None, float | None]:
        """(first, last) scanner prompt answered after `mark`, in the trace's seconds."""
        after = [p for p in self.points if p[0] >= mark]
        if not after:
            return None, None
        base = after[0][4]
        moving = [p for p in after if p[4] > base]
        if not moving:
            return None, None
        last = next(p for p in after if p[4] == moving[-1][4])
        return moving[0][0], last[0]

    def last_eval_answer(self) -> float | None:
        """When the provider answered its last eval request (scanner prompts apart): the
        moment the last sample's generate returned, seen the same way for both ways."""
        last, seen = None, None
        for t, served, _, _, scanned in self.points:
            evals = served - scanned
            if seen is None or evals > seen:
                last, seen = t, evals
        return last

    def served_rate(self, window: float = 2.0) -> list[tuple[float, float]]:
        """Answers per second over a trailing window, at each point."""
        rates, start = [], 0
        for t, served, _, _, _ in self.points:
            while self.points[start][0] < t - window:
                start += 1
            t0, s0 = self.points[start][0], self.points[start][1]
            rates.append((t, (served - s0) / max(SAMPLE_EVERY_S, t - t0)))
        return rates


class Simulator:
    """A fresh simulator for one way, with its counters sampled in the background."""

    def __init__(self, root: Path, case: Case) -> None:
        self.process, self.url = spawn(
            root / f"sim-{time.monotonic_ns()}.port",
            concurrency=case.concurrency,
            latency=case.latency,
            jitter=case.latency / 10,
            retry_after=1,
            scan_flag_rate=SCAN_FLAG_RATE,
            rpm=case.rpm,
            tpm=case.tpm,
            burst=case.burst,
            headers=case.headers,
            latency_shape=case.latency_shape,
            output_tokens=case.output_tokens,
        )
        self.trace = Trace()
        self.started = time.monotonic()
        self._stop = threading.Event()
        self._sampler = threading.Thread(target=self._sample, daemon=True)
        self._sampler.start()

    def _sample(self) -> None:
        with httpx.Client(timeout=2.0) as client:
            while not self._stop.is_set():
                try:
                    stats = client.get(f"{self.url}/admin/stats").json()
                except httpx.HTTPError:
                    stats = None
                if stats is not None:
                    self.trace.points.append(
                        (
                            time.monotonic() - self.started,
                            stats["served"],
                            stats["in_flight"],
                            stats["rate_limited"],
                            stats.get("scanned", 0),
                        )
                    )
                self._stop.wait(SAMPLE_EVERY_S)

    def reset(self) -> None:
        """Counters and trace from zero, buckets full: the next run measured as the first."""
        httpx.post(f"{self.url}/admin/reset")
        self.trace = Trace()
        self.started = time.monotonic()

    def stats(self) -> dict:
        return httpx.get(f"{self.url}/admin/stats").json()

    def stop(self) -> None:
        self._stop.set()
        self._sampler.join(timeout=5)
        self.process.kill()
        self.process.wait()


def errored_samples(log_dir: Path) -> int:
    from inspect_ai.log import read_eval_log_sample_summaries

    return sum(
        1 for p in log_dir.glob("*.eval") for s in read_eval_log_sample_summaries(str(p)) if s.error
    )


def run_plain(root: Path, case: Case, sim: Simulator) -> dict:
    workspace = root / f"plain-{case.name}"
    workspace.mkdir()
    write_definition(
        workspace, case.task_sizes(), model=SIM_MODEL, eval_set_args=', log_dir="logs"'
    )
    env = {**os.environ, "SIM_BASE_URL": f"{sim.url}/v1", "SIM_API_KEY": "bench"}
    start = time.monotonic() - sim.started
    subprocess.run(
        [sys.executable, "evalset.py"],
        cwd=workspace,
        env=env,
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    elapsed = time.monotonic() - sim.started - start
    return {
        "seconds": elapsed,
        "cancelled": errored_samples(workspace / "logs"),
        "start": start,
        "work_start": start,  # plain Inspect's work starts with its command
    }


def run_steward(
    root: Path, case: Case, sim: Simulator, trace: list | None = None, attempt: int = 1
) -> dict:
    """`steward launch` with the workspace's defaults (the smoke, the 10 minute tend interval);
    services started beforehand, as a user's would be. A second `attempt` uses the first's data
    directory (what Steward learned of the endpoint) and a workspace of its own."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("STEWARD_")}
    data = root / f"data-{case.name}"
    data.mkdir(exist_ok=attempt > 1)
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
        root / f"steward-{case.name}" if attempt == 1 else root / f"steward-{case.name}-{attempt}",
        case.task_sizes(),
        options="tend_interval: 10m\n",  # the default (the harness sets 2 s for tests)
        dotenv=f"SIM_BASE_URL={sim.url}/v1\nSIM_API_KEY=bench\n",
        model=SIM_MODEL,
    )
    try:
        pace_at_start = _pace_states(data)  # what a second run's pacing starts from
        start = time.monotonic() - sim.started
        start_epoch = time.time()  # the journal's clock, for the same moment
        launched = steward.ok("launch", cwd=workspace)
        work_start = time.monotonic() - sim.started
        # A second run is measured to its last sample: its scan would only repeat the first's.
        scan = case.scan and attempt == 1
        result = _follow(steward, workspace, scan, sim, start, work_start, launched, trace)
        return {
            **result,
            **_journal_marks(workspace, start_epoch),
            "pace_at_start": pace_at_start,
        }
    finally:
        steward("worker", "stop")
        steward("server", "stop")


def _pace_states(data: Path) -> list[dict]:
    """The endpoints' shared pacing states in a data dir (activities/capacity/rate_pacing.py),
    with `due` and `held_until` as seconds from now, for the trace."""
    states = []
    for path in sorted((data / "rate-limits").glob("*.json")):
        try:
            state = json.loads(path.read_text() or "{}")
        except ValueError:
            continue
        for key in ("due", "held_until", "observed_at"):
            if key in state:
                state[f"{key}_in_s"] = round(state.pop(key) - time.time(), 2)
        states.append(state)
    return states


def _follow(steward, workspace, scan, sim, start, work_start, launched, trace) -> dict:
    marks: dict[str, float] = {}  # last_sample, finished, scanned: seconds since the start
    scan_busy = 0.0  # seconds a scan was seen running (status read each second)
    while True:
        state = steward.status(workspace)["state"]
        now = time.monotonic() - sim.started - start
        if trace is not None:
            trace.append((now, state["samples_done"]))
        if state["samples_done"] >= state["samples_total"] > 0:
            marks.setdefault("last_sample", now)
        if state["scanning_logs"]:
            scan_busy += 1.0
        if state["phase"] in ("finished", "stalled", "failed", "cancelled"):
            marks.setdefault("finished", now)
            over = state["phase"] != "finished" or now > SCAN_WAIT_S or not scan
            if _all_scanned(state) or state["scan_problem"] or over:
                marks.setdefault("scanned", now)
                break
        time.sleep(1.0)
    if not scan:
        steward("cancel", cwd=workspace)
    cancelled = sum(t["progress"]["cancelled"] for t in state["tasks"]) + errored_samples(
        workspace / "logs"
    )
    return {
        "seconds": marks.get("last_sample", marks["finished"]),
        "to_finished": marks["finished"],
        "to_scanned": marks["scanned"],
        "to_finished_polled": marks["finished"],
        "to_scanned_polled": marks["scanned"],
        "scan_busy": scan_busy,
        "scan_problem": state["scan_problem"],
        "cancelled": cancelled,
        "phase": state["phase"],
        "start": start,
        "work_start": work_start,
        "launch_s": work_start - start,
        "budget": {e: b["limit"] for e, b in state.get("providers", {}).items()},
    }


def _journal_marks(workspace: Path, start_epoch: float) -> dict:
    """When the run itself recorded the end of its samples (`finished`) and took in its last
    scan's findings (`scanned`), in seconds since the command started: exact, where the status
    poll (each ~1.5 s: a `steward status` and a second's sleep) sees them up to 1.5 s late. The
    polled figures stay as `to_finished_polled` / `to_scanned_polled`."""
    from datetime import datetime

    from harness.helpers import read_journal

    marks, budget_moves = {}, []
    for event in read_journal(workspace):
        at = datetime.fromisoformat(event["at"]).timestamp() - start_epoch
        if event["event"] in ("finished", "scanned"):
            marks[event["event"]] = at
        elif event["event"].startswith("connection budget"):
            # Where the budget went and why, for the trace (bench.ramp --trace).
            data = {k: v for k, v in event.items() if k not in ("seq", "at", "event")}
            budget_moves.append((round(at, 2), event["event"], data))
    return {**{f"to_{name}": seconds for name, seconds in marks.items()}, "budget_moves": budget_moves}


def _all_scanned(state: dict) -> bool:
    logs = {t["log"] for t in state["tasks"] if t["phase"] == "complete" and t["log"]}
    return not state["scanning_logs"] and logs <= set(state["scanned_logs"])
