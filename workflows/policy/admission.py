"""A run's side of admission, pure: what the run does with the ledger's answer.

The ledger (workflows/policy/capacity.py, CapacityLedger) decides who fits; the run asks through one
of three doors (launch, resume, escalation) and reads the answer here into its own state and
the journal events it owes. eval_run_capacity.py makes the calls; this module decides.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field

from steward.workflows.contracts import RunEvent
from steward.workflows.policy.capacity import Admission, Door, Footprint
from steward.workflows.policy.capacity_contracts import AdmissionOutcome, CapacityState

Verdict = Literal["granted", "queued", "escalated", "escalation refused"]


class AdmissionStep(BaseModel):
    verdict: Verdict
    events: list[RunEvent] = Field(default_factory=list)


def read_answer(
    cap: CapacityState,
    door: Door,
    outcome: AdmissionOutcome,
    footprint: Footprint,
    now: datetime,
) -> AdmissionStep:
    """Record the ledger's answer in `cap`. A granted launch/resume is completed by `grant`
    (the caller also fits setpoints to it); a refused one queues the run in order."""
    cap.domain_id = outcome.domain_id
    events: list[RunEvent] = []
    reading = outcome.reading
    if reading is not None and reading.source != cap.bound_source:
        cap.bound_source = reading.source
        events.append(
            RunEvent(
                event="capacity bound",
                data=dict(
                    domain=outcome.domain_id,
                    limits=reading.limits,
                    source=reading.source,
                    problem=reading.problem,
                ),
            )
        )
    admission = outcome.admission
    if door == "escalation":
        if admission.granted:
            cap.held, cap.footprint, cap.escalation_refused = admission.resources, footprint, ""
            events.append(RunEvent(event="capacity escalated", data={"held": admission.resources}))
            return AdmissionStep(verdict="escalated", events=events)
        if admission.reason != cap.escalation_refused:
            cap.escalation_refused = admission.reason
            events.append(
                RunEvent(
                    event="escalation refused",
                    data={"reason": admission.reason, "held": cap.held},
                )
            )
        return AdmissionStep(verdict="escalation refused", events=events)
    cap.footprint = footprint
    if admission.granted:
        return AdmissionStep(verdict="granted", events=events)
    cap.position, cap.reason = admission.position, admission.reason
    cap.queued_at = cap.queued_at or now
    if outcome.event is not None:
        detail = {k: v for k, v in outcome.event.items() if k != "event"}
        events.append(RunEvent(event="quota exceeded", data=detail))
    events.append(
        RunEvent(
            event="queued",
            data=dict(
                door=door,
                position=admission.position,
                reason=admission.reason,
                footprint=footprint.resources,
            ),
        )
    )
    return AdmissionStep(verdict="queued", events=events)


def grant(cap: CapacityState, admission: Admission, now: datetime) -> float:
    """The run holds `admission` from now; how long it waited in the queue, in seconds."""
    waited = (now - cap.queued_at).total_seconds() if cap.queued_at else 0.0
    cap.admitted, cap.held, cap.admitted_at = True, dict(admission.resources), now
    cap.position, cap.reason, cap.queued_at = None, "", None
    return waited
