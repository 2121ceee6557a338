"""How fast a run reacts to its workers, with the default tend interval (10m: the timer never
fires during the bench, so every reaction measured is a watch waking the run).

On a private embedded Temporal, smoke off, real task workers on the offline model:

1. **exit -> respawn**: run A (3 slow tasks, `stall_after: 20` so kills never stall a task).
   A task worker is killed with SIGKILL `--kills` times (the task varies); each time the clock
   runs from the kill to the moment the run holds a NEW live worker process for that task
   (its state polled over one Temporal client every 0.1 s). The journal's `spawned` time
   minus the kill is shown beside it.
2. **finish -> finished**: run B (3 short tasks) finishes by itself; from the last task
   worker's exit (its pid watched with psutil) to the run's phase being `finished`: negative
   when the run says finished first (a task is complete once its log says success, while its
   process may still be winding down), so the first exit -> finished is shown too. Beside it:
   Steward's launch -> finished and plain Inspect `eval_set()` of the same definition in a
   subprocess (`python evalset.py`, log_dir added), once run B's integrity scan is done.
3. **status age**: on run A before the kills, `steward status --json` (the real CLI) once a
   second; per reading the oldest progress among running tasks (read_at - progress_at).
4. **hang -> decision**: run C's definition sleeps at its top in a task worker
   (STEWARD_WORKER=1; capture runs it unset), `start_timeout: 30s`; from the journal's
   `spawned` to its `decision raised` (hung_worker). The run is cancelled afterwards.
5. **history events per worker-hour**: every run of each workflow id (continue-as-new
   successors followed) counted with fetch_history, over the summed lifetimes of its task
   workers (journal: spawned -> exited / stopped / cancelled). Projected hand-overs for a
   20-task 24-hour run = rate x 20 x 24 / 4096, Temporal's default
   `limit.historyCount.suggestContinueAsNew` (4*1024, common/dynamicconfig/constants.go in
   temporalio/temporal; the bench's server sets no override). Short runs carry their fixed
   launch/finish events over few worker-hours, so a model built from measured parts is
   printed too: run B's events + 17 more workers' spawn/exit + 144 timer tends (10m for 24 h).
   The JSON's `history_events_per_worker_hour` is that model's events over its 480
   worker-hours (heartbeats add none: a quiet stretch is measured to show it); the pooled
   figure of the short runs is `..._short_runs`.

Prints a table, then one JSON line: {"exit_to_respawn_p50_s", "finish_to_finished_s",
"status_age_p95_s", "hang_to_decision_s", "history_events_per_worker_hour", ...extras}.

    .venv/bin/python -m bench.react [--kills 10] [--readings 40]

Sized for a 2-core machine (4 to 5 minutes).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table
from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter

from bench.common import private_steward
from bench.tend import percentile
from harness.helpers import Steward, pid_alive, read_journal, wait_for, write_definition
from steward.workflows.contracts import RunState
from steward.workflows.run.eval_run import EvalRun

SUGGEST_CONTINUE_AS_NEW = 4096  # Temporal's default limit.historyCount.suggestContinueAsNew
TIMER_TENDS_PER_DAY = 24 * 60 // 10  # the default tend_interval, 10m
HANG_PRELUDE = (
    "import os, time\n"
    "if os.environ.get('STEWARD_WORKER') == '1':  # a task worker, not capture\n"
    "    time.sleep(3600)\n"
)
console = Console(stderr=True)


class Temporal:
    """One client on its own event loop, for cheap polling from this synchronous bench."""

    def __init__(self, address: str) -> None:
        self.loop = asyncio.new_event_loop()
        self.client = self.loop.run_until_complete(
            Client.connect(address, data_converter=pydantic_data_converter)
        )

    def state(self, workflow_id: str) -> RunState:
        handle = self.client.get_workflow_handle_for(EvalRun.run, workflow_id)
        return self.loop.run_until_complete(handle.query(EvalRun.status)).state

    def history_events(self, workflow_id: str, first_run_id: str) -> list[int]:
        """Events in each run of the workflow, the launch's run first, following
        continue-as-new to its successors."""

        async def count() -> list[int]:
            counts, run_id = [], first_run_id
            while run_id:
                handle = self.client.get_workflow_handle(workflow_id, run_id=run_id)
                history = await handle.fetch_history()
                counts.append(len(history.events))
                last = history.events[-1] if history.events else None
                run_id = (
                    last.workflow_execution_continued_as_new_event_attributes.new_execution_run_id
                    if last is not None
                    and last.HasField("workflow_execution_continued_as_new_event_attributes")
                    else None
                )
            return counts

        return self.loop.run_until_complete(count())

    def close(self) -> None:
        self.loop.close()


def make_run_workspace(
    steward: Steward,
    root: Path,
    name: str,
    tasks: dict[str, int],
    options: str,
    dotenv: str,
    prelude: str = "",
) -> Path:
    """`steward init`, a definition of `tasks` on the offline model, only `options` in
    _steward.yaml (the template's are all commented out: tend_interval stays 10m)."""
    workspace = root / name
    steward.ok("init", str(workspace))
    path = write_definition(workspace, tasks)
    if prelude:
        path.write_text(prelude + path.read_text())
    with open(workspace / "_steward.yaml", "a") as handle:
        handle.write("\n" + options)
    (workspace / ".env").write_text(dotenv)
    return workspace


def at(text: str) -> datetime:
    return datetime.fromisoformat(text)


def worker_of(state: RunState, name: str) -> tuple[str, int] | None:
    """(worker id, pid) of the live worker the run holds for task `name`."""
    task = next(t for t in state.tasks if t.spec.name == name)
    worker = state.workers.get(task.worker_id or "")
    if task.phase != "running" or worker is None or not pid_alive(worker.pid):
        return None
    return worker.worker_id, worker.pid


def worker_hours(
    journal: list[dict], until: datetime, exited_at: dict[str, datetime] | None = None
) -> float:
    """Summed lifetimes of the run's task workers: spawned -> exited / stopped / cancelled
    (or `until`), as the journal dates them; `exited_at` (worker id -> when its process was
    seen gone) takes precedence (a tend busy scanning journals an exit late)."""
    started: dict[str, datetime] = {}
    total = 0.0
    for worker_id, gone in (exited_at or {}).items():
        spawned = next(
            (at(e["at"]) for e in journal if e["event"] == "spawned" and e["worker"] == worker_id),
            None,
        )
        if spawned is not None:
            total += (gone - spawned).total_seconds()
    journal = [e for e in journal if e.get("worker") not in (exited_at or {})]
    for event in journal:
        name, data = event["event"], event
        if name == "spawned":
            started[data["worker"]] = at(event["at"])
        elif name in ("worker exited", "worker stopped") and data.get("worker") in started:
            total += (at(event["at"]) - started.pop(data["worker"])).total_seconds()
        elif name in ("cancelled", "signed off"):
            for began in started.values():
                total += (at(event["at"]) - began).total_seconds()
            started.clear()
    total += sum((until - began).total_seconds() for began in started.values())
    return total / 3600


# ------------------------------------------------------------------ 3. status age
def status_ages(steward: Steward, workspace: Path) -> tuple[list[float], bool]:
    """One `steward status --json --full`: each running task's progress age (read_at - progress_at),
    and whether every running task's progress comes from its watch's heartbeat."""
    status = steward.ok("status", "--full", cwd=workspace)
    read_at = at(status["read_at"])
    running = [t["spec"]["identifier"] for t in status["state"]["tasks"] if t["phase"] == "running"]
    live = {i for pulse in status.get("live", []) for i in pulse.get("progress", {})}
    found = [
        (read_at - at(status["progress_at"][i])).total_seconds()
        for i in running
        if i in status["progress_at"]
    ]
    return found, bool(running) and set(running) <= live and len(found) == len(running)


def read_status_ages(steward: Steward, workspace: Path, readings: int) -> list[float]:
    """`steward status --json` once a second: per reading, the oldest progress of a running
    task."""
    values: list[float] = []
    tick = time.monotonic()
    while len(values) < readings:
        found, _ = status_ages(steward, workspace)
        values.append(max(found) if found else float("nan"))
        tick += 1.0
        time.sleep(max(0.0, tick - time.monotonic()))
    return values


# ------------------------------------------------------------------ 1. exit -> respawn
def kill_and_respawn(
    temporal: Temporal, workflow_id: str, names: list[str], kills: int
) -> list[dict[str, Any]]:
    rows = []
    for round_ in range(kills):
        name = names[round_ % len(names)]
        old = wait_for(
            lambda n=name: worker_of(temporal.state(workflow_id), n),
            timeout=120,
            interval=0.2,
            what=f"a live worker for {name}",
        )
        killed_at, start = datetime.now(UTC), time.monotonic()
        os.kill(old[1], signal.SIGKILL)
        new = wait_for(
            lambda n=name, o=old: (
                (w := worker_of(temporal.state(workflow_id), n)) is not None and w[0] != o[0] and w
            ),
            timeout=120,
            interval=0.1,
            what=f"a new worker for {name}",
        )
        rows.append(
            {
                "task": name,
                "old": old[0],
                "new": new[0],
                "killed_at": killed_at,
                "seconds": time.monotonic() - start,
            }
        )
        console.print(
            f"  kill {round_ + 1}: {name} {old[0]} -> {new[0]} in {rows[-1]['seconds']:.2f} s"
        )
        time.sleep(2.0)  # let the new worker get going before the next kill
    return rows


# ------------------------------------------------------------------ 2. finish -> finished
def watch_to_finish(temporal: Temporal, workflow_id: str, timeout: float = 300) -> dict[str, Any]:
    """Poll the run (0.1 s) and its workers' pids until it is `finished` and every worker has
    exited: when each exited and when the phase turned (monotonic), and each worker's exit as
    a wall time (by worker id). The phase may turn before the last exit: a task is complete
    once its log says success, while its process may still be winding down."""
    seen: dict[int, str] = {}  # pid -> worker id
    gone: dict[int, tuple[float, datetime]] = {}  # pid -> when first seen gone
    finished: float | None = None
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        state = temporal.state(workflow_id)
        now, wall = time.monotonic(), datetime.now(UTC)
        for worker in state.workers.values():
            seen.setdefault(worker.pid, worker.worker_id)
        for pid in seen:
            if pid not in gone and not pid_alive(pid):
                gone[pid] = (now, wall)
        if finished is None and state.phase == "finished":
            finished = now
        elif finished is None and state.phase not in ("capturing", "running"):
            raise AssertionError(f"run B is {state.phase}: {state.error}")
        if finished is not None and seen and len(gone) == len(seen):
            exits = [g[0] for g in gone.values()]
            return {
                "last_exit": max(exits),
                "first_exit": min(exits),
                "finished": finished,
                "exited_at": {seen[pid]: g[1] for pid, g in gone.items()},
            }
        time.sleep(0.1)
    raise AssertionError(f"run B never finished with every worker gone: {state.phase}, {gone}")


def run_plain(root: Path, tasks: dict[str, int], dotenv: dict[str, str]) -> float:
    """Plain Inspect: the same definition (log_dir added) as `python evalset.py`."""
    directory = root / "plain"
    directory.mkdir()
    write_definition(directory, tasks, eval_set_args=', log_dir="logs"')
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("STEWARD_", "INSPECT_EVAL_SET"))
    }
    env.update(dotenv)
    start = time.monotonic()
    with open(root / "plain.log", "wb") as out:
        process = subprocess.Popen(
            [sys.executable, "evalset.py"],
            cwd=directory,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
        try:
            code = process.wait(timeout=300)
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
    if code != 0:
        raise AssertionError(f"plain eval_set exited {code}; see {root / 'plain.log'}")
    return time.monotonic() - start


# ------------------------------------------------------------------ main
def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--kills", type=int, default=10)
    parser.add_argument("--readings", type=int, default=40)
    parser.add_argument("--keep", action="store_true", help="keep the scratch root")
    args = parser.parse_args()
    began = time.monotonic()

    root, steward = private_steward("steward-react-")
    address = f"127.0.0.1:{steward.env['STEWARD_TEMPORAL_PORT']}"
    temporal: Temporal | None = None
    runs: dict[str, dict[str, Any]] = {}  # label -> {workspace, workflow_id, run_id}
    slow_tasks = {f"slow_{i}": 400 for i in range(3)}
    short_tasks = {f"short_{i}": 20 for i in range(3)}
    short_env = {"STEWARD_OFFLINE_DELAY": "4"}
    results: dict[str, Any] = {}
    try:
        console.print(f"services in {root} ...")
        steward.ok("server", "start")
        steward.ok("worker", "start")
        temporal = Temporal(address)

        # Run C first: its worker hangs for start_timeout (30 s) while run A is measured.
        hang_ws = make_run_workspace(
            steward, root, "hang", {"hangs": 5}, "start_timeout: 30s\n", "", prelude=HANG_PRELUDE
        )
        launched = steward.ok("launch", "--no-smoke", cwd=hang_ws)
        runs["C hang"] = {**launched, "workspace": hang_ws}
        console.print("run C (hangs) launched")

        slow_ws = make_run_workspace(
            steward,
            root,
            "slow",
            slow_tasks,
            "samples_ramp: [2, 2]\nstall_after: 20\n",
            "STEWARD_OFFLINE_DELAY=2\n",
        )
        launched = steward.ok("launch", "--no-smoke", cwd=slow_ws)
        runs["A kills"] = {**launched, "workspace": slow_ws}
        wid_a, run_a = launched["workflow_id"], launched["run_id"]
        console.print("run A (3 slow tasks) launched; reading status once a second ...")

        # 3. status age (and the history's growth while nothing but the watches happens)
        wait_for(
            lambda: status_ages(steward, slow_ws)[1],
            timeout=180,
            interval=1,
            what="every task's watch to report progress",
        )
        quiet_events0, quiet_t0 = sum(temporal.history_events(wid_a, run_a)), time.monotonic()
        ages = read_status_ages(steward, slow_ws, args.readings)
        quiet_events1, quiet_t1 = sum(temporal.history_events(wid_a, run_a)), time.monotonic()
        quiet_workers = len(temporal.state(wid_a).workers)
        results["ages"] = ages
        results["quiet"] = (
            quiet_events1 - quiet_events0,
            quiet_workers * (quiet_t1 - quiet_t0) / 3600,
        )

        # events one tend adds (the timer's would add a timer instead of an update)
        before = sum(temporal.history_events(wid_a, run_a))
        handle = temporal.client.get_workflow_handle_for(EvalRun.run, wid_a)
        for _ in range(3):
            temporal.loop.run_until_complete(handle.execute_update(EvalRun.tend))
        results["events_per_tend"] = (sum(temporal.history_events(wid_a, run_a)) - before) / 3

        # 1. exit -> respawn
        console.print(f"killing run A's workers {args.kills} times ...")
        before = sum(temporal.history_events(wid_a, run_a))
        kills = kill_and_respawn(temporal, wid_a, list(slow_tasks), args.kills)
        results["events_per_respawn"] = (sum(temporal.history_events(wid_a, run_a)) - before) / max(
            1, len(kills)
        )
        results["kills"] = kills

        # 4. hang -> decision (run C has been hanging meanwhile)
        wid_c = runs["C hang"]["workflow_id"]
        decision = wait_for(
            lambda: next(
                (d for d in temporal.state(wid_c).triage.decisions if d.kind == "hung_worker"),
                None,
            ),
            timeout=120,
            interval=0.5,
            what="run C's hung_worker decision",
        )
        for label in ("C hang", "A kills"):
            steward("cancel", "--no-wait", "--reason", "bench done", cwd=runs[label]["workspace"])
        for label in ("C hang", "A kills"):
            wait_for(
                lambda w=runs[label]["workspace"]: (
                    steward.status(w)["state"]["phase"] == "cancelled"
                ),
                timeout=120,
                interval=1,
                what=f"run {label} to be cancelled",
            )
        hang_journal = read_journal(hang_ws)
        spawned = next(e for e in hang_journal if e["event"] == "spawned")
        raised = next(
            e
            for e in hang_journal
            if e["event"] == "decision raised" and e.get("decision") == decision.id
        )
        results["hang"] = (at(raised["at"]) - at(spawned["at"])).total_seconds()
        results["hang_raised_at"] = (decision.raised_at - at(spawned["at"])).total_seconds()
        slow_journal = read_journal(slow_ws)
        spawned_at = {e["worker"]: at(e["at"]) for e in slow_journal if e["event"] == "spawned"}
        for row in kills:
            row["journal"] = (spawned_at[row["new"]] - row["killed_at"]).total_seconds()

        # 2. finish -> finished (run B alone on the machine), then plain Inspect
        short_ws = make_run_workspace(
            steward,
            root,
            "short",
            short_tasks,
            "",
            "".join(f"{k}={v}\n" for k, v in short_env.items()),
        )
        console.print("run B (3 short tasks) launching ...")
        launch_start = time.monotonic()
        launched = steward.ok("launch", "--no-smoke", cwd=short_ws)
        runs["B finish"] = {**launched, "workspace": short_ws}
        ended = watch_to_finish(temporal, launched["workflow_id"])
        results["finish"] = ended["finished"] - ended["last_exit"]
        results["first_exit_to_finished"] = ended["finished"] - ended["first_exit"]
        results["launch_to_finished"] = ended["finished"] - launch_start
        results["workers_b"] = len(ended["exited_at"])
        runs["B finish"]["exited_at"] = ended["exited_at"]
        # The integrity scan follows the finish; let it end so plain Inspect runs alone.
        wait_for(
            lambda: (
                (b := temporal.state(launched["workflow_id"])).scan_problem is not None
                or len(b.scanned_logs) >= len(short_tasks)
            ),
            timeout=180,
            interval=1,
            what="run B's integrity scan",
        )
        console.print("plain Inspect eval_set() of the same definition ...")
        results["plain"] = run_plain(root, short_tasks, short_env)

        # 5. history events per worker-hour, every run counted
        history: dict[str, tuple[int, int, float]] = {}  # label -> (events, runs, worker hours)
        for label, run in runs.items():
            counts = temporal.history_events(run["workflow_id"], run["run_id"])
            journal = read_journal(run["workspace"])
            hours = worker_hours(journal, datetime.now(UTC), run.get("exited_at", {}))
            history[label] = (sum(counts), len(counts), hours)
        results["history"] = history
        results["events_b"] = history["B finish"][0]
    finally:
        for label, run in runs.items():
            signed = label == "B finish" and (
                steward("signoff", "--by", "bench", cwd=run["workspace"]).code == 0
            )
            if not signed:
                steward("cancel", "--no-wait", "--reason", "bench cleanup", cwd=run["workspace"])
        for run in runs.values():
            try:
                wait_for(
                    lambda w=run["workspace"]: (
                        steward.status(w)["state"]["phase"] in ("cancelled", "signed_off", "failed")
                    ),
                    timeout=90,
                    interval=1,
                    what="the run to end",
                )
            except AssertionError as err:
                console.print(f"[red]{err}[/red]")
        if temporal is not None:
            temporal.close()
        steward("worker", "stop")
        steward("server", "stop")
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)

    report(results, time.monotonic() - began)


def report(results: dict[str, Any], runtime: float) -> None:
    respawns = [k["seconds"] for k in results["kills"]]
    journalled = [k["journal"] for k in results["kills"]]
    ages = results["ages"]
    history = results["history"]
    events = sum(h[0] for h in history.values())
    hours = sum(h[2] for h in history.values())
    rate = events / hours
    handovers = rate * 20 * 24 / SUGGEST_CONTINUE_AS_NEW
    model_events = (
        results["events_b"]
        + (20 - results["workers_b"]) * results["events_per_respawn"]
        + TIMER_TENDS_PER_DAY * results["events_per_tend"]
    )
    quiet_events, quiet_hours = results["quiet"]

    table = Table(title="steward react: default tend interval (10m), real workers")
    for column in ("measure", "p50 s", "p95 s", "max s", "n", "target"):
        table.add_column(column)
    table.add_row(
        "exit -> respawn (new live worker)",
        f"{statistics.median(respawns):.2f}",
        f"{percentile(respawns, 0.95):.2f}",
        f"{max(respawns):.2f}",
        str(len(respawns)),
        "p50 <= 5",
    )
    table.add_row(
        "  kill -> journal 'spawned' at",
        f"{statistics.median(journalled):.2f}",
        f"{percentile(journalled, 0.95):.2f}",
        f"{max(journalled):.2f}",
        str(len(journalled)),
        "",
    )
    table.add_row("last worker exit -> finished", f"{results['finish']:.2f}", "", "", "1", "<= 5")
    table.add_row(
        "  first worker exit -> finished",
        f"{results['first_exit_to_finished']:.2f}",
        "",
        "",
        "1",
        "",
    )
    table.add_row(
        "  steward launch -> finished", f"{results['launch_to_finished']:.2f}", "", "", "1", ""
    )
    table.add_row("  plain Inspect eval_set()", f"{results['plain']:.2f}", "", "", "1", "")
    table.add_row(
        "status progress age (max over tasks)",
        f"{statistics.median(ages):.2f}",
        f"{percentile(ages, 0.95):.2f}",
        f"{max(ages):.2f}",
        str(len(ages)),
        "p95 <= 10",
    )
    table.add_row(
        "spawn -> hung_worker decision (30s)", f"{results['hang']:.2f}", "", "", "1", "<= 35"
    )
    Console().print(table)

    events_table = Table(title="workflow history (every run of each workflow id)")
    for column in ("run", "events", "runs", "worker h", "events / worker h"):
        events_table.add_column(column)
    for label, (count, run_count, worker_h) in history.items():
        events_table.add_row(
            label, str(count), str(run_count), f"{worker_h:.4f}", f"{count / worker_h:,.0f}"
        )
    events_table.add_row("all", str(events), "", f"{hours:.4f}", f"{rate:,.0f}")
    events_table.add_row(
        "quiet stretch (run A, status reads only)",
        str(quiet_events),
        "",
        f"{quiet_hours:.4f}",
        f"{quiet_events / quiet_hours:,.0f}",
    )
    Console().print(events_table)
    Console().print(
        f"one tend adds {results['events_per_tend']:.1f} events, one kill+respawn "
        f"{results['events_per_respawn']:.1f}, run B (launch to finish) {results['events_b']}.\n"
        f"continue-as-new suggested at {SUGGEST_CONTINUE_AS_NEW} events (Temporal's default "
        "limit.historyCount.suggestContinueAsNew = 4*1024, common/dynamicconfig/constants.go).\n"
        f"20 tasks x 24 h: by the pooled rate {handovers:,.1f} hand-overs; by the parts "
        f"({model_events:,.0f} events: run B + 17 spawns + {TIMER_TENDS_PER_DAY} timer tends) "
        f"{model_events / SUGGEST_CONTINUE_AS_NEW:.1f}.\nruntime {runtime:.0f} s"
    )
    figures = {
        "exit_to_respawn_p50_s": round(statistics.median(respawns), 2),
        "finish_to_finished_s": round(results["finish"], 2),
        "status_age_p95_s": round(percentile(ages, 0.95), 2),
        "hang_to_decision_s": round(results["hang"], 2),
        # A 20-task, 24-hour run built from the measured parts (its events over its 480
        # worker-hours); the pooled figure of these short runs carries their fixed costs.
        "history_events_per_worker_hour": round(model_events / (20 * 24), 1),
        "history_events_per_worker_hour_short_runs": round(rate),
        "exit_to_respawn_p95_s": round(percentile(respawns, 0.95), 2),
        "respawns": len(respawns),
        "status_readings": len(ages),
        "first_exit_to_finished_s": round(results["first_exit_to_finished"], 2),
        "launch_to_finished_s": round(results["launch_to_finished"], 2),
        "plain_inspect_s": round(results["plain"], 2),
        "events_per_tend": round(results["events_per_tend"], 1),
        "events_per_respawn": round(results["events_per_respawn"], 1),
        "projected_handovers_20x24h": round(model_events / SUGGEST_CONTINUE_AS_NEW, 1),
        "projected_handovers_20x24h_pooled": round(handovers, 1),
        "suggest_continue_as_new_events": SUGGEST_CONTINUE_AS_NEW,
        "runtime_s": round(runtime),
    }
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
