"""The ramp's setpoint plan for one tend, pure: for each open task, move its sample
concurrency by the ramp's rules (workflows/policy/ramp.py), clamp sandboxed tasks to the sandbox
budget and the capacity reservation, and say which live workers must be retuned.

Like policy.apply_observation, it updates the tasks' ramp bookkeeping in the state it is given
and returns the rest as data: journal events, setpoint changes for the control sockets, and
the setpoints a reservation kept from climbing (an escalation to ask the ledger for).
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from steward.workflows.activity_io import SetpointChange
from steward.workflows.contracts import Observation, RunEvent, RunSettings, RunState
from steward.workflows.policy import ramp
from steward.workflows.policy import run_policy as policy


class SetpointPlan(BaseModel):
    events: list[RunEvent] = Field(default_factory=list)
    changes: list[SetpointChange] = Field(default_factory=list)
    wanted: dict[str, int] = Field(default_factory=dict)  # identifier -> setpoint held back
    windows: dict[str, ramp.RampWindow] = Field(default_factory=dict)  # identifier -> this tend's


def smaller(a: int | None, b: int | None) -> int | None:
    return b if a is None else a if b is None else min(a, b)


def plan_setpoints(
    state: RunState,
    observation: Observation,
    settings: RunSettings,
    *,
    capacity: bool,
    budgeted: bool = False,
) -> SetpointPlan:
    """`budgeted`: the provider budget sets the connection ceilings (eval_run_budget.py), so
    the ramp's moves leave them alone."""
    plan = SetpointPlan()
    reservation = policy.reservation_budget(state, settings.capacity_backend) if capacity else None
    budget = smaller(state.sandbox_budget, reservation)
    for task in policy.open_tasks(state):
        seen = observation.tasks.get(task.spec.identifier)
        reading = seen.ramp if seen is not None else None
        window = None
        if reading is not None and task.ramp_baseline is not None:
            if task.ramp_baseline.worker_id == reading.worker_id:
                window = ramp.window_between(
                    task.ramp_baseline.counters,
                    reading.counters,
                    in_flight=reading.in_flight,
                    setpoint=task.max_samples,
                    connection_limit=reading.connection_limit,
                )
                plan.windows[task.spec.identifier] = window
        if reading is not None:
            task.ramp_baseline = reading
        move = ramp.decide(
            setpoint=task.max_samples,
            window=window,
            ramp=settings.samples_ramp,
            planned_samples=task.spec.planned_samples,
            pushback_streak=task.pushback_streak,
            hold=state.ramp_hold,
            pinned=task.pinned,
        )
        if task.spec.sandbox:
            desired = move
            move = ramp.clamp_to_budget(move, policy.sandboxed_setpoints(state, task), budget)
            if move.setpoint < desired.setpoint and budget == reservation:
                plan.wanted[task.spec.identifier] = desired.setpoint
            if move.kind == "none" and move.reason.startswith("sandbox budget"):
                if not task.budget_clamped:
                    plan.events.append(
                        RunEvent(
                            event="budget clamp",
                            data=dict(
                                task=task.spec.name, setpoint=task.max_samples, budget=budget
                            ),
                        )
                    )
                task.budget_clamped = True
            else:
                task.budget_clamped = False
        task.pushback_streak = move.pushback_streak
        if move.kind != "none":
            task.max_samples = move.setpoint
            plan.events.append(
                RunEvent(
                    event=f"ramp {move.kind}",
                    data=dict(
                        task=task.spec.name,
                        previous=move.previous,
                        setpoint=move.setpoint,
                        connections=move.connections,
                        reason=move.reason,
                    ),
                )
            )
        live = reading is not None and task.phase == "running" and task.worker_id in state.workers
        if live and (move.kind != "none" or reading.setpoint != task.max_samples):
            adaptive = (
                reading.connection_limit is not None
                and not budgeted
                and not task.spec.own_connections  # the definition's own setting stands
            )
            plan.changes.append(
                SetpointChange(
                    socket=state.workers[task.worker_id].socket,
                    task_id=reading.task_id,
                    max_samples=task.max_samples,
                    max_connections=move.connections if adaptive else None,
                    reason=f"ramp {move.kind}: {move.reason}"
                    if move.kind != "none"
                    else "setpoint",
                )
            )
    return plan
