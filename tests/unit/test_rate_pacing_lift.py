"""Where pacing holds a paced endpoint's fleet inside its limit, a worker's adaptive connection
controller (Steward's share of the run's budget) skips Inspect's slow start: it is lifted to its
ceiling, never past it, and not while it cools down after a 429 (activities/capacity/rate_pacing.py).
Against Inspect's real controller."""

from __future__ import annotations

import time

from inspect_ai.model._generate_config import AdaptiveConcurrency
from inspect_ai.util._concurrency import AdaptiveConcurrencyController, _active_controller

from steward.activities.capacity import rate_pacing
from steward.activities.processes.runner_launch import PACED_CONNECTIONS_ENV


def _controller(start: int = 5, top: int = 25) -> AdaptiveConcurrencyController:
    return AdaptiveConcurrencyController(
        "sim/echo", AdaptiveConcurrency(min=min(5, start), start=start, max=top), visible=False
    )


def test_a_controller_below_its_ceiling_is_lifted_to_it_and_no_further():
    controller = _controller()
    assert rate_pacing.lift_to_ceiling(controller)
    assert controller.concurrency == 25 and controller.max == 25
    assert not rate_pacing.lift_to_ceiling(controller)  # there already


def test_a_controller_cooling_down_after_a_429_is_left_to_its_cooldown():
    controller = _controller(start=20)
    controller.notify_retry()  # x0.8: 20 -> 15, cooling down
    assert controller.concurrency < 20
    assert not rate_pacing.lift_to_ceiling(controller)
    controller._cooldown_until = time.monotonic() - 1  # the cooldown over
    assert rate_pacing.lift_to_ceiling(controller)
    assert controller.concurrency == 25


def test_only_a_worker_whose_connections_are_stewards_share_lifts(monkeypatch):
    controller = _controller()
    token = _active_controller.set(controller)
    try:
        monkeypatch.delenv(PACED_CONNECTIONS_ENV, raising=False)
        rate_pacing._lift_active_controller()  # a definition's own settings: untouched
        assert controller.concurrency == 5
        monkeypatch.setenv(PACED_CONNECTIONS_ENV, "1")
        rate_pacing._lift_active_controller()
        assert controller.concurrency == 25
    finally:
        _active_controller.reset(token)
