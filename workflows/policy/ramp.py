"""The automatic ramp of sample concurrency, as pure policy (seed 000, "Automatic Ramp").

Each tend looks at one window per task (what changed since the last tend) and moves the
task's `max_samples` setpoint: +20 after a clean window, up to the ramp's ceiling and the
task's sample count; back down after rate-limit pushback in two consecutive windows (never
below the ramp's floor, and never by cancelling a running sample: Inspect's limiter only
admits fewer). A hold freezes the climb, not the cut.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel

STEP = 20
DEFAULT_START = 50
PUSHBACK_WINDOWS_TO_CUT = 2
# HTTP retries "surge" when they exceed this share of the window's finished samples (min 3).
RETRY_SURGE_SHARE = 0.1
RETRY_SURGE_FLOOR = 3


class RampCounters(BaseModel):
    """Cumulative counters read from a worker; a window is the difference of two readings."""

    rate_limit_retries: int = 0
    http_retries: int = 0
    errored: int = 0
    finished: int = 0  # completed + errored samples


class RampReading(BaseModel):
    """One task's concurrency figures from its worker's control socket at one tend."""

    worker_id: str
    task_id: str  # Inspect's task id, for PATCH /tasks/{task_id}/config
    counters: RampCounters
    in_flight: int = 0
    setpoint: int | None = None  # the max_samples limit the worker is applying
    connection_limit: int | None = None  # the adaptive controller's live limit (None: not adaptive)
    connection_ceiling: int | None = None  # the controller's ceiling (its `max`)


class RampWindow(BaseModel):
    """What one tend saw of one task."""

    in_flight: int
    setpoint: int
    rate_limit_retries: int = 0
    http_retries: int = 0
    new_errors: int = 0
    finished: int = 0
    connection_limit: int | None = None  # where Inspect's adaptive controller stands now

    @property
    def saturated(self) -> bool:
        return self.in_flight >= self.setpoint

    @property
    def pushback(self) -> bool:
        return self.rate_limit_retries > 0

    @property
    def retries_surged(self) -> bool:
        return self.http_retries > max(RETRY_SURGE_FLOOR, RETRY_SURGE_SHARE * self.finished)

    def unclean_because(self) -> str | None:
        if not self.saturated:
            return f"not saturated ({self.in_flight} in flight of {self.setpoint})"
        if self.pushback:
            return f"{self.rate_limit_retries} rate-limit retries"
        if self.new_errors:
            return f"{self.new_errors} new sample errors"
        if self.retries_surged:
            return f"HTTP retries surged ({self.http_retries})"
        return None


def window_between(
    before: RampCounters,
    now: RampCounters,
    in_flight: int,
    setpoint: int,
    connection_limit: int | None = None,
) -> RampWindow:
    """The window from two cumulative readings (a counter that went down restarted: count anew)."""

    def delta(name: str) -> int:
        old, new = getattr(before, name), getattr(now, name)
        return new - old if new >= old else new

    return RampWindow(
        in_flight=in_flight,
        setpoint=setpoint,
        rate_limit_retries=delta("rate_limit_retries"),
        http_retries=delta("http_retries"),
        new_errors=delta("errored"),
        finished=delta("finished"),
        connection_limit=connection_limit,
    )


class RampMove(BaseModel):
    kind: Literal["none", "up", "cut", "narrow"]
    setpoint: int
    previous: int
    pushback_streak: int
    connections: int | None = None  # adaptive ceiling to apply, if any
    reason: str = ""


def ceiling_for(ramp: tuple[int, int], planned_samples: int) -> int:
    return max(1, min(ramp[1], planned_samples))


def starting_setpoint(ramp: tuple[int, int] | Literal[False], planned_samples: int) -> int:
    low = ramp[0] if ramp else DEFAULT_START
    return max(1, min(low, planned_samples))


def decide(
    *,
    setpoint: int,
    window: RampWindow | None,
    ramp: tuple[int, int] | Literal[False],
    planned_samples: int,
    pushback_streak: int,
    hold: bool,
    pinned: bool,
) -> RampMove:
    """One task's move at one tend. `window` None means no news this tend (nothing moves)."""
    unchanged = RampMove(
        kind="none", setpoint=setpoint, previous=setpoint, pushback_streak=pushback_streak
    )
    if pinned or ramp is False:
        return unchanged
    ceiling = ceiling_for(ramp, planned_samples)
    if setpoint > ceiling:
        return RampMove(
            kind="narrow",
            setpoint=ceiling,
            previous=setpoint,
            pushback_streak=pushback_streak,
            connections=ceiling,
            reason=f"ramp ceiling is now {ceiling}",
        )
    if window is None:
        return unchanged
    streak = pushback_streak + 1 if window.pushback else 0
    if streak >= PUSHBACK_WINDOWS_TO_CUT:
        floor = min(ramp[0], ceiling)
        lowered = max(floor, setpoint - STEP)
        return RampMove(
            kind="cut" if lowered < setpoint or window.connection_limit else "none",
            setpoint=lowered,
            previous=setpoint,
            pushback_streak=streak,
            # Clamp the connection ceiling to where Inspect's own controller already fell.
            connections=window.connection_limit,
            reason=f"rate-limit pushback in {streak} consecutive windows",
        )
    if hold:
        return unchanged.model_copy(update={"pushback_streak": streak})
    blocker = window.unclean_because()
    if blocker is not None or setpoint >= ceiling:
        return unchanged.model_copy(
            update={"pushback_streak": streak, "reason": blocker or "at ceiling"}
        )
    raised = min(ceiling, setpoint + STEP)
    # Let Inspect's adaptive connections climb as far as the ramp may, so the two don't fight.
    return RampMove(
        kind="up",
        setpoint=raised,
        previous=setpoint,
        pushback_streak=streak,
        connections=ceiling,
        reason="clean window",
    )


def sandbox_budget(max_sandboxes: int | None, sandboxes: list[str | None], cpus: int) -> int | None:
    """The machine-wide bound on sandboxed tasks' summed setpoints: the definition's
    max_sandboxes, else what the provider gives (Docker: 2 x CPUs; others, k8s included: none)."""
    if max_sandboxes is not None:
        return max_sandboxes
    if "docker" in sandboxes:
        return 2 * cpus
    return None


def budget_share(budget: int | None, sandboxed_tasks: int, wanted: int) -> int:
    """A sandboxed task's starting setpoint: its share of the budget, never more than wanted."""
    if budget is None or sandboxed_tasks == 0:
        return wanted
    return max(1, min(wanted, budget // sandboxed_tasks))


def clamp_to_budget(move: RampMove, others: int, budget: int | None) -> RampMove:
    """Keep an upward move inside the budget left by the other sandboxed tasks' setpoints."""
    if budget is None or move.kind != "up" or others + move.setpoint <= budget:
        return move
    room = max(move.previous, budget - others)
    if room == move.previous:
        return move.model_copy(
            update={
                "kind": "none",
                "setpoint": move.previous,
                "connections": None,
                "reason": f"sandbox budget {budget} reached",
            }
        )
    return move.model_copy(
        update={"setpoint": room, "reason": f"clean window (sandbox budget {budget})"}
    )
