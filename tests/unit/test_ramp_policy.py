"""The ramp's rules (seed 000), as pure policy."""

from __future__ import annotations

from steward.workflows.policy.ramp import (
    RampCounters,
    RampWindow,
    decide,
    starting_setpoint,
    window_between,
)

RAMP = (50, 200)


def _window(**kw) -> RampWindow:
    values = {"in_flight": 50, "setpoint": 50, "finished": 100}
    values.update(kw)
    return RampWindow(**values)


def _decide(setpoint=50, window=None, ramp=RAMP, planned=1000, streak=0, hold=False, pinned=False):
    return decide(
        setpoint=setpoint,
        window=window,
        ramp=ramp,
        planned_samples=planned,
        pushback_streak=streak,
        hold=hold,
        pinned=pinned,
    )


def test_tasks_start_at_the_ramps_floor_or_their_size():
    assert starting_setpoint(RAMP, 1000) == 50
    assert starting_setpoint((40, 300), 1000) == 40
    assert starting_setpoint(False, 1000) == 50
    assert starting_setpoint(RAMP, 12) == 12


def test_clean_window_steps_up_by_20_and_raises_the_connection_ceiling():
    move = _decide(window=_window())
    assert (move.kind, move.setpoint, move.connections) == ("up", 70, 200)


def test_each_gate_blocks_the_climb():
    assert _decide(window=_window(in_flight=49)).kind == "none"  # not saturated
    assert _decide(window=_window(rate_limit_retries=1)).kind == "none"  # pushback (first window)
    assert _decide(window=_window(new_errors=1)).kind == "none"
    assert _decide(window=_window(http_retries=11, finished=100)).kind == "none"  # surge
    assert (
        _decide(window=_window(http_retries=3, finished=10)).kind == "up"
    )  # a few retries are fine


def test_ceilings_are_the_ramp_and_the_task_size():
    assert _decide(setpoint=190, window=_window(in_flight=190, setpoint=190)).setpoint == 200
    assert _decide(setpoint=200, window=_window(in_flight=200, setpoint=200)).kind == "none"
    assert _decide(setpoint=50, window=_window(), planned=60).setpoint == 60


def test_two_consecutive_pushback_windows_cut_and_clamp_connections():
    first = _decide(setpoint=150, window=_window(in_flight=150, setpoint=150, rate_limit_retries=4))
    assert first.kind == "none" and first.pushback_streak == 1
    second = _decide(
        setpoint=150,
        streak=1,
        window=_window(in_flight=150, setpoint=150, rate_limit_retries=2, connection_limit=64),
    )
    assert (second.kind, second.setpoint, second.connections) == ("cut", 130, 64)
    # a clean window in between resets the streak
    assert (
        _decide(setpoint=150, streak=1, window=_window(in_flight=10, setpoint=150)).pushback_streak
        == 0
    )


def test_cuts_stop_at_the_floor_and_the_way_back_is_stepwise():
    assert (
        _decide(setpoint=55, streak=1, window=_window(rate_limit_retries=1, setpoint=55)).setpoint
        == 50
    )
    back = _decide(setpoint=50, streak=2, window=_window())
    assert (back.kind, back.setpoint, back.pushback_streak) == ("up", 70, 0)


def test_hold_freezes_the_climb_but_not_the_cut():
    assert _decide(window=_window(), hold=True).kind == "none"
    cut = _decide(
        setpoint=120,
        streak=1,
        hold=True,
        window=_window(in_flight=120, setpoint=120, rate_limit_retries=1),
    )
    assert (cut.kind, cut.setpoint) == ("cut", 100)


def test_narrowing_the_range_brings_a_task_down_at_the_next_tend():
    move = _decide(setpoint=200, ramp=(50, 100), window=None)
    assert (move.kind, move.setpoint) == ("narrow", 100)


def test_pinned_max_samples_and_ramp_false_never_move():
    assert _decide(window=_window(), pinned=True).kind == "none"
    assert _decide(window=_window(), ramp=False).kind == "none"
    assert (
        _decide(setpoint=50, streak=5, window=_window(rate_limit_retries=9), pinned=True).kind
        == "none"
    )


def test_windows_are_differences_of_cumulative_counters():
    before = RampCounters(rate_limit_retries=5, http_retries=10, errored=1, finished=40)
    now = RampCounters(rate_limit_retries=5, http_retries=12, errored=3, finished=90)
    window = window_between(before, now, in_flight=50, setpoint=50)
    assert (window.rate_limit_retries, window.http_retries, window.new_errors, window.finished) == (
        0,
        2,
        2,
        50,
    )
    restarted = window_between(before, RampCounters(finished=7), in_flight=3, setpoint=50)
    assert restarted.finished == 7  # a respawned worker's counters start again from zero


def test_sandbox_budget_comes_from_the_definition_else_the_provider():
    from steward.workflows.policy.ramp import sandbox_budget

    assert sandbox_budget(30, ["docker"], cpus=8) == 30
    assert sandbox_budget(None, ["docker", None], cpus=8) == 16  # Docker: 2 x CPUs
    assert sandbox_budget(None, ["k8s"], cpus=8) is None  # elastic: unbounded
    assert sandbox_budget(None, [None, None], cpus=8) is None


def test_sandboxed_tasks_start_at_their_share_of_the_budget():
    from steward.workflows.policy.ramp import budget_share

    assert budget_share(16, 4, 50) == 4
    assert budget_share(300, 2, 50) == 50  # the share is a ceiling, not a target
    assert budget_share(None, 4, 50) == 50
    assert budget_share(3, 8, 50) == 1


def test_the_ramp_never_grows_the_fleet_sum_past_the_budget():
    from steward.workflows.policy.ramp import clamp_to_budget

    up = _decide(setpoint=50, window=_window())  # wants 70
    assert clamp_to_budget(up, others=50, budget=200).setpoint == 70
    assert clamp_to_budget(up, others=140, budget=200).setpoint == 60  # only the room left
    held = clamp_to_budget(up, others=150, budget=200)
    assert (held.kind, held.setpoint) == ("none", 50) and "budget" in held.reason
    cut = _decide(
        setpoint=120, streak=1, window=_window(in_flight=120, setpoint=120, rate_limit_retries=1)
    )
    assert clamp_to_budget(cut, others=500, budget=200) == cut  # cuts are never blocked
