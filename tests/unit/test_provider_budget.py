"""One connection budget per provider per run, as pure policy (workflows/policy/provider_budget.py and
workflows/policy/connection_plan.py), without Temporal: the workers' ceilings never sum past the
budget, pushback anywhere lowers it for all, a learned budget seeds the next run and sizes its
starting setpoints, and a new worker starts at its share."""

from __future__ import annotations

import pytest

from harness.helpers import fake_worker
from steward.workflows.contracts import Capture, RunSettings, RunState, TaskSpec
from steward.workflows.policy import connection_plan, provider_budget
from steward.workflows.policy import run_policy as policy
from steward.workflows.policy.provider_budget import (
    ProviderBudget,
    WorkerConnections,
    endpoint_of,
    split,
)
from steward.workflows.policy.ramp import RampWindow

SETTINGS = RunSettings()
SIM = "openai-api/sim/echo"


@pytest.mark.parametrize(
    ("total", "demands"),
    [
        (100, {"a": 50, "b": 50, "c": 50, "d": 50}),
        (80, {"a": 5, "b": 500, "c": 500}),
        (7, {"a": 50, "b": 50, "c": 50}),
        (100, {"a": 10, "b": 10}),
        (3, {"a": 1, "b": 1, "c": 1}),
    ],
)
def test_a_split_never_sums_past_the_budget_and_nobody_gets_more_than_it_needs(total, demands):
    shares = split(total, demands)
    assert sum(shares.values()) <= total
    assert all(1 <= shares[w] <= max(1, demands[w]) for w in demands)


def test_a_split_gives_what_one_worker_does_not_need_to_the_others():
    assert split(80, {"a": 5, "b": 500, "c": 500}) == {"a": 5, "b": 38, "c": 37}
    assert split(100, {"a": 50, "b": 50, "c": 50, "d": 50}) == {"a": 25, "b": 25, "c": 25, "d": 25}


def test_more_workers_than_connections_each_still_get_one():
    assert split(2, {"a": 9, "b": 9, "c": 9}) == {"a": 1, "b": 1, "c": 1}


def test_the_endpoint_is_the_provider_and_the_base_url_its_environment_gives():
    env = {"SIM_BASE_URL": "http://127.0.0.1:9/v1/", "OPENAI_BASE_URL": "https://x/v1"}
    assert endpoint_of(SIM, env) == "openai-api/sim http://127.0.0.1:9/v1"
    assert endpoint_of("openai/gpt-4o", env) == "openai https://x/v1"
    assert endpoint_of("anthropic/claude", env) == "anthropic"
    assert endpoint_of("steward/offline", {}) == "steward"


def test_a_first_run_opens_what_one_process_would_and_a_learned_budget_starts_at_its_limit():
    fresh = provider_budget.seeded("e", [SIM], None)
    assert (fresh.start, fresh.limit, fresh.learned) == (20, 100, False)
    learned = provider_budget.seeded("e", [SIM], 72)
    assert (learned.start, learned.limit, learned.learned) == (72, 72, True)


def _seen(limit: int | None, pushback: bool = False, in_flight: int = 50, demand: int = 50):
    return WorkerConnections(
        demand=demand, live_limit=limit, in_flight=in_flight, pushback=pushback
    )


def test_pushback_in_any_worker_lowers_the_budget_for_all_to_where_the_controllers_fell():
    budget = ProviderBudget(endpoint="e", limit=100, shares={"a": 25, "b": 25, "c": 25, "d": 25})
    move = provider_budget.adjust(
        budget, {"a": _seen(20, pushback=True), "b": _seen(25), "c": _seen(25), "d": _seen(20)}
    )
    assert (move.kind, move.limit) == ("lowered", 90)
    provider_budget.apply_move(budget, move)
    assert budget.learned and budget.start == 90 and budget.pushbacks == 1


def test_a_budget_falls_by_a_tenth_at_most_per_tend_however_far_the_controllers_fell():
    budget = ProviderBudget(endpoint="e", limit=100, shares={"a": 50, "b": 50})
    move = provider_budget.adjust(budget, {"a": _seen(30, pushback=True), "b": _seen(30)})
    assert (move.kind, move.limit) == ("lowered", 90)


def test_pushback_before_any_controller_fell_still_lowers_the_budget():
    budget = ProviderBudget(endpoint="e", limit=100, shares={"a": 50, "b": 50})
    move = provider_budget.adjust(budget, {"a": _seen(50, pushback=True), "b": _seen(50)})
    assert (move.kind, move.limit) == ("lowered", 90)


def test_a_budget_never_falls_below_one_connection_per_worker():
    budget = ProviderBudget(endpoint="e", limit=3, shares={"a": 1, "b": 1, "c": 1})
    seen = {w: _seen(1, pushback=True) for w in "abc"}
    assert provider_budget.adjust(budget, seen).kind == "none"


def test_clean_saturated_windows_at_every_ceiling_raise_the_budget_and_others_do_not():
    budget = ProviderBudget(endpoint="e", limit=40, shares={"a": 20, "b": 20})
    wanting = {"a": _seen(20, in_flight=50), "b": _seen(20, in_flight=50)}
    move = provider_budget.adjust(budget, wanting)
    assert (move.kind, move.limit) == ("raised", 44)
    one_below = {"a": _seen(20, in_flight=50), "b": _seen(12, in_flight=50)}
    assert provider_budget.adjust(budget, one_below).kind == "none"
    idle = {"a": _seen(20, in_flight=3), "b": _seen(20, in_flight=50)}
    assert provider_budget.adjust(budget, idle).kind == "none"


def _state(names: list[str], budget: ProviderBudget | None, running: bool = True) -> RunState:
    specs = [TaskSpec(name=n, model=SIM, identifier=f"id-{n}", samples=500) for n in names]
    state = RunState(phase="running")
    state.tasks = policy.initial_tasks(Capture(tasks=specs), SETTINGS)
    if budget is not None:
        state.providers[budget.endpoint] = budget
    for task in state.tasks if running else []:
        task.phase, task.worker_id, task.attempts = "running", f"w-{task.spec.name}", 1
        state.workers[task.worker_id] = fake_worker(
            task.worker_id, [task.spec.identifier], f"/sock/{task.spec.name}"
        )
    return state


def test_a_learned_budget_sizes_the_starting_setpoints_and_an_unknown_one_keeps_the_rule():
    learned = _state(["a", "b", "c", "d"], provider_budget.seeded("e", [SIM], 80), running=False)
    events = connection_plan.size_starting_setpoints(learned)
    assert [t.max_samples for t in learned.tasks] == [20, 20, 20, 20]
    assert {e.event for e in events} == {"setpoint sized to budget"}
    unknown = _state(["a", "b"], provider_budget.seeded("e", [SIM], None), running=False)
    assert connection_plan.size_starting_setpoints(unknown) == []
    assert [t.max_samples for t in unknown.tasks] == [50, 50]


def test_with_headroom_tasks_start_a_quarter_over_their_share_and_connections_stay_within():
    budget = provider_budget.seeded("e", [SIM], 80)
    state = _state(["a", "b", "c", "d"], budget, running=False)
    events = connection_plan.size_starting_setpoints(state, headroom=True)
    assert [t.max_samples for t in state.tasks] == [25, 25, 25, 25]
    assert [e.data["setpoint"] for e in events] == [25, 25, 25, 25]
    # the samples over the share wait for connections: the workers' ceilings still sum to 80
    plan = connection_plan.plan_spawns(state, [[t] for t in state.tasks])
    assert sum(s.ceiling for s in plan.spawns) == 80
    # a small share still gets two to spare; the rule's own setpoint is never exceeded
    assert provider_budget.starting_setpoint(budget, 50, 40, headroom=True) == 4
    assert provider_budget.starting_setpoint(budget, 22, 4, headroom=True) == 22
    unknown = provider_budget.seeded("e", [SIM], None)
    assert provider_budget.starting_setpoint(unknown, 50, 4, headroom=True) == 50


def test_new_workers_start_at_their_share_and_live_ones_make_room_lowered_first():
    budget = provider_budget.seeded("e", [SIM], None)
    state = _state(["a", "b", "c"], budget, running=False)
    groups = [[t] for t in state.tasks]
    plan = connection_plan.plan_spawns(state, groups)
    assert [s.ceiling for s in plan.spawns] == [34, 33, 33]
    assert sum(s.ceiling for s in plan.spawns) <= budget.limit
    assert all(s.start <= 7 for s in plan.spawns) and sum(s.start for s in plan.spawns) <= 20
    for group, share, wid in zip(groups, plan.spawns, ["w1", "w2", "w3"], strict=True):
        group[0].phase, group[0].worker_id = "running", wid
        state.workers[wid] = fake_worker(wid, [group[0].spec.identifier], f"/sock/{wid}")
        connection_plan.spawned(state, group, wid, share)
    # A fourth task arrives (a relaunch, say): the three live workers give up room first.
    extra = TaskSpec(name="d", model=SIM, identifier="id-d", samples=500)
    state.tasks += policy.initial_tasks(Capture(tasks=[extra]), SETTINGS)
    plan = connection_plan.plan_spawns(state, [[state.tasks[-1]]])
    assert [c.max_connections for c in plan.changes] == [25, 25, 25]
    assert plan.spawns[0].ceiling == 25
    assert sum(budget.shares.values()) + plan.spawns[0].ceiling <= budget.limit


def _window(limit: int, pushback: bool = False, in_flight: int = 50) -> RampWindow:
    return RampWindow(
        in_flight=in_flight,
        setpoint=50,
        rate_limit_retries=3 if pushback else 0,
        connection_limit=limit,
    )


def test_a_tend_lowers_the_budget_on_pushback_and_retunes_every_worker_within_it():
    budget = ProviderBudget(endpoint="e", models=[SIM], shares={f"w-{n}": 25 for n in "abcd"})
    state = _state(["a", "b", "c", "d"], budget)
    windows = {
        "id-a": _window(20, pushback=True),
        "id-b": _window(20, pushback=True),
        "id-c": _window(25),
        "id-d": _window(25),
    }
    seen = {f"w-{n}": 25 for n in "abcd"}
    plan = connection_plan.rebalance(state, windows, seen)
    assert [e.event for e in plan.events] == ["connection budget lowered"]
    assert budget.limit == 90 and plan.learned == {"e": 90}
    ceilings = [c.max_connections for c in plan.changes]
    assert sum(budget.shares.values()) <= budget.limit
    assert sorted(ceilings) == [22, 22, 23, 23]
    assert all(c.task_id is None for c in plan.changes)


def test_a_finished_task_gives_its_share_to_the_others_and_a_retune_that_did_not_land_is_resent():
    budget = ProviderBudget(endpoint="e", models=[SIM], shares={f"w-{n}": 25 for n in "abcd"})
    state = _state(["a", "b", "c", "d"], budget)
    done = state.task("id-d")
    done.phase, done.worker_id = "complete", None
    state.workers.pop("w-d")
    plan = connection_plan.rebalance(state, {}, {f"w-{n}": 25 for n in "abc"})
    assert sorted(c.max_connections for c in plan.changes) == [33, 33, 34]
    assert "w-d" not in budget.shares
    # w-a still reports 25 (its retune was lost): it is sent again; the others landed.
    again = connection_plan.rebalance(state, {}, {"w-a": 25, "w-b": 33, "w-c": 33})
    assert [c.socket for c in again.changes] == ["/sock/a"]


def test_raised_ceilings_follow_lowered_ones_so_the_sum_never_passes_the_budget():
    budget = ProviderBudget(endpoint="e", models=[SIM], shares={"w-a": 10, "w-b": 90})
    state = _state(["a", "b"], budget)
    plan = connection_plan.rebalance(state, {}, {"w-a": 10, "w-b": 90})
    assert [(c.socket, c.max_connections) for c in plan.changes] == [
        ("/sock/b", 50),
        ("/sock/a", 50),
    ]


def test_status_shows_each_budget_its_origin_and_the_workers_ceilings():
    from steward.workflows.contracts import RunStatus
    from steward.workflows.views.status_view import connection_lines, render_status_markdown

    budget = ProviderBudget(
        endpoint="openai-api/sim http://h/v1",
        limit=72,
        learned=True,
        pushbacks=2,
        shares={"w1": 36, "w2": 36},
    )
    state = _state(["a"], budget)
    assert connection_lines(state) == [
        "openai-api/sim http://h/v1: 72 connections (learned), each task worker's ceiling 36/36, "
        "2 pushback(s)"
    ]
    page = render_status_markdown(
        RunStatus(workflow_id="r", workspace="/w", state=state, tend_interval=600)
    )
    assert "- Connection budget: openai-api/sim http://h/v1: 72 connections (learned)" in page


def _scanning(state: RunState, name: str, samples: int) -> None:
    """`name` is complete and the scan reads its log."""
    task = state.task(f"id-{name}")
    task.phase, task.worker_id, task.log = "complete", None, f"/logs/{name}.eval"
    task.progress.completed = samples
    state.workers.pop(f"w-{name}", None)
    state.scanning_logs = [task.log]


def test_a_scan_beside_running_workers_takes_its_share_and_they_make_room_first():
    budget = ProviderBudget(endpoint="e", models=[SIM], shares={"w-a": 34, "w-b": 33, "w-c": 33})
    state = _state(["a", "b", "c"], budget)
    _scanning(state, "c", 500)
    share, changes = connection_plan.scan_share(state)
    assert share == 33 and budget.shares == {"w-a": 34, "w-b": 33, "scan": 33}
    assert changes == []  # c's worker is gone: its 33 is the scan's
    # While it runs, the tends keep its share and split the rest between the workers; one
    # whose ceiling reads higher than its share is retuned.
    plan = connection_plan.rebalance(state, {}, {"w-a": 40, "w-b": 33})
    assert [(c.socket, c.max_connections) for c in plan.changes] == [("/sock/a", 34)]
    assert budget.shares == {"w-a": 34, "w-b": 33, "scan": 33}
    # Once it is taken in, the workers take its connections back.
    state.scanning_logs = []
    plan = connection_plan.rebalance(state, {}, {"w-a": 34, "w-b": 33})
    assert [c.max_connections for c in plan.changes] == [50, 50]
    assert "scan" not in budget.shares


def test_a_scan_with_no_eval_work_left_gets_the_whole_budget():
    budget = ProviderBudget(endpoint="e", models=[SIM], limit=80, learned=True)
    state = _state(["a"], budget)
    _scanning(state, "a", 500)
    assert connection_plan.scan_share(state) == (80, [])


def test_workers_make_room_when_a_scan_starts_beside_them():
    budget = ProviderBudget(endpoint="e", models=[SIM], shares={"w-a": 50, "w-b": 50})
    state = _state(["a", "b", "c"], budget)
    _scanning(state, "c", 500)
    share, changes = connection_plan.scan_share(state)
    assert share == 33
    assert [c.max_connections for c in changes] == [33, 34]  # the deeper cut first
    assert sum(budget.shares.values()) == 100


def test_a_scan_of_a_few_transcripts_takes_no_more_than_it_needs_and_workers_spawn_around_it():
    budget = ProviderBudget(endpoint="e", models=[SIM], shares={"w-a": 100})
    state = _state(["a", "b"], budget)
    state.task("id-b").phase, state.task("id-b").worker_id = "pending", None
    state.workers.pop("w-b")
    _scanning(state, "a", 6)
    share, _ = connection_plan.scan_share(state)
    assert share == 6
    plan = connection_plan.plan_spawns(state, [[state.task("id-b")]])
    assert plan.spawns[0].ceiling == 50  # its demand: 50 samples at once, within 100 - 6


def test_a_watch_reports_pushback_under_a_budget_and_saturation_once_one_was_learned():
    budget = provider_budget.seeded("e", [SIM], None)
    state = _state(["a"], budget)
    assert connection_plan.watch_reports(state, "w-a") == (True, False)
    provider_budget.apply_move(
        budget, provider_budget.BudgetMove(kind="lowered", limit=60, previous=100)
    )
    assert connection_plan.watch_reports(state, "w-a") == (True, True)
    unbudgeted = _state(["a"], None)
    assert connection_plan.watch_reports(unbudgeted, "w-a") == (False, False)


def test_a_second_scan_beside_a_narrow_one_gets_what_the_budget_has_left():
    budget = ProviderBudget(endpoint="e", models=[SIM], limit=80, shares={"w-b": 60, "scan": 20})
    state = _state(["a", "b"], budget)
    _scanning(state, "a", 500)
    later = state.task("id-b")
    later.phase, later.worker_id, later.log = "complete", None, "/logs/b.eval"
    state.workers.pop("w-b")
    assert connection_plan.share_beside_scan(state, [later.log]) == 60
    assert budget.shares["scan"] == 80  # both scans: the first 20, the second 60
    # Nothing left, or logs no budget covers: no second scan.
    assert connection_plan.share_beside_scan(state, [later.log]) is None
    assert connection_plan.share_beside_scan(state, ["/logs/unknown.eval"]) is None


def test_one_pushback_episode_lowers_a_budget_once_and_it_does_not_rise_within_it():
    from datetime import UTC, datetime, timedelta

    t0 = datetime(2026, 12, 5, tzinfo=UTC)
    budget = ProviderBudget(endpoint="e", limit=90, shares={w: 22 for w in "abcd"})
    burst = {w: _seen(18, pushback=True) for w in "abcd"}
    first = provider_budget.adjust(budget, burst, t0)
    provider_budget.apply_move(budget, first, t0)
    assert (first.kind, budget.limit, budget.pushback_level) == ("lowered", 81, 90)
    # another worker's report of the same burst, 0.6 s later: the same episode
    later = t0 + timedelta(seconds=0.6)
    assert provider_budget.adjust(budget, burst, later).kind == "none"
    # its controllers still at the old ceilings look saturated: no raise either
    budget.shares = {w: 20 for w in "abcd"}
    saturated = {w: _seen(20, in_flight=50) for w in "abcd"}
    assert provider_budget.adjust(budget, saturated, later).kind == "none"
    # past the episode, pushback lowers it again and saturation may raise it
    after = t0 + timedelta(seconds=provider_budget.EPISODE_S + 1)
    assert provider_budget.adjust(budget, burst, after).kind == "lowered"
    assert provider_budget.adjust(budget, saturated, after).kind == "raised"
    # without `now` (histories before budget-episode-v1) the burst lowers it twice
    old = ProviderBudget(endpoint="e", limit=90, shares={w: 22 for w in "abcd"})
    for _ in range(2):
        provider_budget.apply_move(old, provider_budget.adjust(old, burst))
    assert old.limit < 81


def test_a_raise_stops_short_of_the_level_that_saw_pushback_while_it_is_remembered():
    from datetime import UTC, datetime, timedelta

    t0 = datetime(2026, 12, 5, tzinfo=UTC)
    budget = ProviderBudget(endpoint="e", limit=78, shares={"a": 20, "b": 20, "c": 19, "d": 19})
    burst = {"a": _seen(18, pushback=True), "b": _seen(18), "c": _seen(19), "d": _seen(19)}
    provider_budget.apply_move(budget, provider_budget.adjust(budget, burst, t0), t0)
    assert (budget.limit, budget.pushback_level) == (74, 78)  # where the controllers fell
    budget.shares = {"a": 19, "b": 19, "c": 18, "d": 18}
    saturated = {w: _seen(budget.shares[w], in_flight=50) for w in "abcd"}
    later = t0 + timedelta(seconds=30)
    move = provider_budget.adjust(budget, saturated, later)
    assert (move.kind, move.limit) == ("raised", 77)  # a tenth more would be 82
    provider_budget.apply_move(budget, move, later)
    budget.shares = {"a": 20, "b": 19, "c": 19, "d": 19}
    saturated = {w: _seen(budget.shares[w], in_flight=50) for w in "abcd"}
    assert provider_budget.adjust(budget, saturated, later + timedelta(seconds=30)).kind == "none"
    # forgotten after PUSHBACK_MEMORY_S: the budget may probe upward again
    much_later = t0 + timedelta(seconds=provider_budget.PUSHBACK_MEMORY_S + 1)
    assert provider_budget.adjust(budget, saturated, much_later).kind == "raised"
    # a lowering then forgets the old level and marks the new one
    burst = {w: _seen(15, pushback=True) for w in "abcd"}
    provider_budget.apply_move(
        budget, provider_budget.adjust(budget, burst, much_later), much_later
    )
    assert budget.pushback_level == 77


def test_a_scan_may_probe_to_just_under_the_level_that_pushed_back_while_remembered():
    from datetime import UTC, datetime, timedelta

    t0 = datetime(2026, 12, 5, tzinfo=UTC)
    budget = ProviderBudget(endpoint="e", limit=81, shares={w: 20 for w in "abcd"})
    burst = {w: _seen(19, pushback=True) for w in "abcd"}
    provider_budget.apply_move(budget, provider_budget.adjust(budget, burst, t0), t0)
    assert (budget.limit, budget.pushback_level) == (76, 81)
    assert provider_budget.scan_headroom(budget, t0 + timedelta(seconds=20)) == 4  # to 80
    late = t0 + timedelta(seconds=provider_budget.PUSHBACK_MEMORY_S + 1)
    assert provider_budget.scan_headroom(budget, late) == 0
    assert provider_budget.scan_headroom(ProviderBudget(endpoint="e", limit=100), t0) == 0


def test_a_task_with_its_own_connections_is_outside_the_budget_and_status_says_so():
    from steward.workflows.views.status_view import connection_lines

    budget = provider_budget.seeded("e", [SIM], 60)  # shared by both, 30 each
    state = _state(["a", "b"], budget, running=False)
    state.tasks[1].spec.own_connections = "max_connections=8"
    groups = [[t] for t in state.tasks]
    plan = connection_plan.plan_spawns(state, groups)
    assert plan.spawns[0].ceiling == 50  # the budget is the other task's alone (its demand)
    assert plan.spawns[1] is None  # no adaptive override: the definition's 8 stands
    for group, wid in zip(groups, ["w1", "w2"], strict=True):
        group[0].phase, group[0].worker_id = "running", wid
        state.workers[wid] = fake_worker(wid, [group[0].spec.identifier], f"/sock/{wid}")
    plan = connection_plan.rebalance(state, {}, {"w1": 50, "w2": 8})
    assert [c.socket for c in plan.changes] == []  # w2 is never retuned
    assert set(budget.shares) == {"w1"}
    assert connection_lines(state)[-1] == (
        "b: its own max_connections=8, kept (the definition set it; the run's budget does not "
        "override it)"
    )


def test_capture_reads_the_connections_a_definition_set_itself():
    from types import SimpleNamespace

    from inspect_ai.model import GenerateConfig
    from inspect_ai.util import AdaptiveConcurrency

    from steward.worker.definition_runner import own_connections

    def task(model=None, task=None):
        return SimpleNamespace(
            model=SimpleNamespace(config=GenerateConfig(**(model or {}))),
            task=SimpleNamespace(config=GenerateConfig(**(task or {}))),
        )

    none = SimpleNamespace(config=GenerateConfig())
    assert own_connections(task(), none) is None
    fixed = SimpleNamespace(config=GenerateConfig(max_connections=8))
    assert own_connections(task(), fixed) == "max_connections=8"
    assert own_connections(task(task={"max_connections": 3}), fixed) == "max_connections=3"
    adaptive = task(model={"adaptive_connections": AdaptiveConcurrency(max=40)})
    assert own_connections(adaptive, none).startswith("adaptive_connections=")
    assert "40" in own_connections(adaptive, none)
