"""One connection budget per provider per run, against the provider simulator through Inspect's
real openai-api provider: the workers' connection ceilings (as their own control sockets report
them) never sum past the run's budget, pushback lowers the budget for every worker, and the next
run against the same endpoint starts from what the first one learned."""

from __future__ import annotations

import math
from datetime import datetime
from itertools import pairwise

import httpx

from harness.helpers import fetch_history, make_workspace, read_journal, replay, wait_for
from steward.workflows.policy.provider_budget import EPISODE_S

SIM_MODEL = "openai-api/sim/echo"
TASKS = {"alpha": 3000, "beta": 3000, "gamma": 3000}


def _ask(worker: dict, *paths: str) -> list:
    """GET each path of a worker's control socket (httpx.HTTPError when it does not answer)."""
    transport = httpx.HTTPTransport(uds=worker["socket"])
    with httpx.Client(transport=transport, base_url="http://inspect") as client:
        return [client.get(path, timeout=5).json() for path in paths]


def _ceilings(state: dict) -> dict[str, int]:
    """Each live worker's adaptive-connection ceiling, asked of its control socket."""
    ceilings = {}
    for worker_id, worker in state["workers"].items():
        try:
            [config] = _ask(worker, "/config")
        except httpx.HTTPError:
            continue  # not answering yet
        adaptive = [a["max"] for a in config.get("adaptive") or []]
        if adaptive:
            ceilings[worker_id] = max(adaptive)
    return ceilings


def _connections_seen(steward, workspace, endpoint: str) -> str:
    """What a budget test saw when its wait ran out: the budget, each worker's controllers
    (limit of ceiling) and samples in flight, and the run's last budget and ramp events."""
    state = steward.state(workspace)
    workers = {}
    for worker_id, worker in state["workers"].items():
        try:
            [rows] = _ask(worker, "/tasks")
            configs = _ask(worker, *(f"/tasks/{r['task_id']}/config" for r in rows))
        except httpx.HTTPError as error:
            workers[worker_id] = repr(error)
            continue
        workers[worker_id] = [
            (
                r["samples"].get("in_flight"),
                [(a["limit"], a["max"]) for a in c.get("adaptive") or []],
            )
            for r, c in zip(rows, configs, strict=True)
        ]
    events = [
        {k: v for k, v in e.items() if k not in ("seq", "endpoint")}
        for e in read_journal(workspace)
        if e["event"].startswith(("connection budget", "ramp", "watch", "worker"))
    ]
    return f"budget={state['providers'].get(endpoint)} workers={workers} events={events[-10:]}"


def _launch(steward, root, simulator, name: str):
    workspace = make_workspace(
        steward,
        root / name,
        TASKS,
        options="samples_ramp: [40, 80]\ntend_interval: 1h\n",
        dotenv=f"SIM_BASE_URL={simulator}/v1\nSIM_API_KEY=test-key\n",
        model=SIM_MODEL,
    )
    steward.ok("launch", "--no-smoke", cwd=workspace)
    return workspace


def test_the_fleet_shares_one_budget_learns_from_pushback_and_the_next_run_starts_there(
    steward, workspace_root, simulator
):
    # 30 in flight at most: three workers at one process's default ceiling (100) would send
    # several times that.
    httpx.post(f"{simulator}/admin/config", json={"concurrency": 30, "latency": 0.5})
    first = _launch(steward, workspace_root, simulator, "first")
    endpoint = f"openai-api/sim {simulator}/v1"
    budget = steward.state(first)["providers"][endpoint]
    assert (budget["limit"], budget["start"], budget["learned"]) == (100, 20, False)
    spawned = [e for e in read_journal(first) if e["event"] == "spawned"]
    assert sum(e["connections"]["ceiling"] for e in spawned) <= 100
    assert sum(e["connections"]["start"] for e in spawned) <= 20

    sums = []

    def lowered_within_budget() -> bool:
        steward.ok("tend", cwd=first)
        state = steward.state(first)
        limit = state["providers"][endpoint]["limit"]
        ceilings = _ceilings(state)
        sums.append((sum(ceilings.values()), limit))
        assert sum(ceilings.values()) <= limit, (ceilings, limit)
        return state["providers"][endpoint]["learned"] and len(ceilings) == len(TASKS)

    wait_for(
        lowered_within_budget,
        timeout=300,
        interval=1.0,
        what="pushback to lower the run's connection budget",
        describe=lambda: f"(sum of ceilings, budget) per tend: {sums}",
    )
    events = [e for e in read_journal(first) if e["event"] == "connection budget lowered"]
    assert events and events[0]["endpoint"] == endpoint
    steward.ok("cancel", cwd=first)
    events = [e for e in read_journal(first) if e["event"] == "connection budget lowered"]
    lowered_at = [datetime.fromisoformat(e["at"]) for e in events]
    assert all(  # one burst of 429s, reported by every worker, lowers it once
        (b - a).total_seconds() >= EPISODE_S for a, b in pairwise(lowered_at)
    ), events
    learned = steward.state(first)["providers"][endpoint]["limit"]  # its last word
    assert learned < 100
    replay(
        fetch_history(steward, steward.status(first)["workflow_id"]),
        record_as="eval_run_budget_bracket_v1_pushback",
    )

    # The next run against the same endpoint starts where the first one learned: its budget,
    # its workers' shares and its tasks' starting setpoints within it.
    second = _launch(steward, workspace_root, simulator, "second")
    state = steward.state(second)
    budget = state["providers"][endpoint]
    assert budget["learned"] and budget["limit"] == learned
    # ... and holds there: the level above the lesson counts as having pushed back.
    assert budget["bracket"] and budget["pushback_level"] == learned + 1
    seeded = next(e for e in read_journal(second) if e["event"] == "connection budget")
    assert seeded["learned_by"] == steward.status(first)["workflow_id"]
    # Each task starts at its share of the connections and a quarter over it in samples (the
    # ones over wait inside Inspect for a connection as it frees); the connections stay within.
    share = budget["limit"] // len(TASKS)
    sized = [e for e in read_journal(second) if e["event"] == "setpoint sized to budget"]
    assert sorted(e["task"] for e in sized) == sorted(TASKS), sized
    assert {e["setpoint"] for e in sized} == {min(40, share + max(2, math.ceil(share / 4)))}
    spawned = [e for e in read_journal(second) if e["event"] == "spawned"]
    assert sum(e["connections"]["ceiling"] for e in spawned) <= budget["limit"]
    assert sum(e["connections"]["start"] for e in spawned) > 20  # not one process's cold start
    wait_for(
        lambda: len(_ceilings(steward.state(second))) == len(TASKS),
        timeout=120,
        what="the second run's workers to answer",
    )
    assert sum(_ceilings(steward.state(second)).values()) <= budget["limit"]
    steward.ok("cancel", cwd=second)
    replay(
        fetch_history(steward, steward.status(second)["workflow_id"]),
        record_as="eval_run_setpoint_headroom_v1_learned",
    )
    replay(fetch_history(steward, "steward-provider-budgets"), record_as="provider_ledger_v1")


def test_pushback_lowers_the_budget_at_once_and_room_raises_it_again_without_a_tend_asked(
    steward, workspace_root, simulator
):
    # The timer is an hour away and nobody runs `steward tend`: the watches' reports tend.
    httpx.post(f"{simulator}/admin/config", json={"concurrency": 30, "latency": 0.5})
    workspace = _launch(steward, workspace_root, simulator, "evented")
    endpoint = f"openai-api/sim {simulator}/v1"

    def journalled(event: str) -> list[dict]:
        return [e for e in read_journal(workspace) if e["event"] == event]

    wait_for(
        lambda: journalled("connection budget lowered"),
        timeout=120,
        what="a worker's pushback to lower the budget by itself",
    )
    assert steward.state(workspace)["providers"][endpoint]["limit"] < 100
    # The provider now has room: workers held at their ceilings ask, and the budget climbs.
    httpx.post(f"{simulator}/admin/config", json={"concurrency": 400, "latency": 0.5})
    [raised, *_] = wait_for(
        lambda: journalled("connection budget raised"),
        timeout=240,
        what="saturated workers to raise the budget by themselves",
        describe=lambda: _connections_seen(steward, workspace, endpoint),
    )
    assert raised["limit"] > raised["previous"] and raised["endpoint"] == endpoint
    state = steward.state(workspace)
    assert sum(_ceilings(state).values()) <= state["providers"][endpoint]["limit"]
    steward.ok("cancel", cwd=workspace)


def test_a_definition_that_fixes_max_connections_keeps_it_under_the_run_wide_budget(
    steward, workspace_root, simulator
):
    # Samples take 1 s and the tasks may run 40 at once: only the definition's own
    # max_connections=7 (per worker process, as Inspect applies it) holds them back.
    workspace = make_workspace(
        steward,
        workspace_root / "fixed",
        {"alpha": 400, "beta": 400},
        options="samples_ramp: [40, 80]\ntend_interval: 1h\n",
        dotenv=f"SIM_BASE_URL={simulator}/v1\nSIM_API_KEY=test-key\n",
        model=SIM_MODEL,
        eval_set_args=", max_connections=7",
    )
    steward.ok("launch", "--no-smoke", cwd=workspace)

    def busy() -> bool:
        steward.ok("tend", cwd=workspace)
        running = all(t["phase"] == "running" for t in steward.state(workspace)["tasks"])
        return running and httpx.get(f"{simulator}/admin/stats").json()["served"] >= 60

    wait_for(busy, timeout=180, interval=1.0, what="the workers to run samples")
    spawned = [e for e in read_journal(workspace) if e["event"] == "spawned"]
    assert spawned and all(e.get("connections") is None for e in spawned), spawned
    state = steward.state(workspace)
    assert all(t["spec"]["own_connections"] == "max_connections=7" for t in state["tasks"])
    workers = len(state["workers"])
    stats = httpx.get(f"{simulator}/admin/stats").json()
    assert stats["peak_in_flight"] <= 7 * workers, stats
    state = steward.state(workspace)
    endpoint = f"openai-api/sim {simulator}/v1"
    assert not set(state["workers"]) & set(state["providers"][endpoint]["shares"])
    for worker in state["workers"].values():
        [config] = _ask(worker, "/config")
        assert not config.get("adaptive"), config  # no controller: the fixed 7 stands
    shown = steward("status", cwd=workspace).stdout
    assert "its own max_connections=7, kept" in " ".join(shown.split()), shown
    steward.ok("cancel", cwd=workspace)
