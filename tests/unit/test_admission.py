"""A run's reading of the ledger's answer (workflows/policy/admission.py), without Temporal."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from steward.workflows.policy.admission import grant, read_answer
from steward.workflows.policy.capacity import Admission, Footprint, ProbeReading
from steward.workflows.policy.capacity_contracts import AdmissionOutcome, CapacityState

NOW = datetime(2026, 12, 3, 12, 0, tzinfo=UTC)
FOOTPRINT = Footprint(resources={"docker.cpu": 4.0}, memory_gi=8.0)


def _outcome(admission: Admission, source: str = "daemon", event: dict | None = None):
    reading = ProbeReading(backend="docker", limits={"docker.cpu": 8.0}, source=source)
    return AdmissionOutcome(admission=admission, reading=reading, domain_id="dom", event=event)


def test_a_refused_launch_queues_in_order_and_journals_why():
    cap = CapacityState()
    answer = Admission(granted=False, position=2, reason="docker.cpu: 7 of 8 in use")
    step = read_answer(
        cap, "launch", _outcome(answer, event={"event": "x", "k": 1}), FOOTPRINT, NOW
    )

    assert step.verdict == "queued"
    assert (cap.position, cap.reason, cap.queued_at, cap.domain_id) == (
        2,
        "docker.cpu: 7 of 8 in use",
        NOW,
        "dom",
    )
    assert [e.event for e in step.events] == ["capacity bound", "quota exceeded", "queued"]
    assert step.events[1].data == {"k": 1}


def test_the_bound_is_journalled_only_when_its_source_changes():
    cap = CapacityState(bound_source="daemon")
    granted = Admission(granted=True, resources={"docker.cpu": 4.0})
    step = read_answer(cap, "launch", _outcome(granted), FOOTPRINT, NOW)
    assert step.verdict == "granted" and step.events == []


def test_grant_after_waiting_clears_the_queue_and_says_how_long():
    cap = CapacityState(position=1, reason="full", queued_at=NOW - timedelta(seconds=90))
    waited = grant(cap, Admission(granted=True, resources={"docker.cpu": 4.0}), NOW)
    assert waited == 90.0
    assert cap.admitted and cap.held == {"docker.cpu": 4.0} and cap.admitted_at == NOW
    assert (cap.position, cap.reason, cap.queued_at) == (None, "", None)


def test_a_refused_escalation_is_journalled_once_and_keeps_what_is_held():
    cap = CapacityState(admitted=True, held={"docker.cpu": 4.0})
    refused = Admission(granted=False, reason="no room")
    first = read_answer(cap, "escalation", _outcome(refused), FOOTPRINT, NOW)
    second = read_answer(cap, "escalation", _outcome(refused), FOOTPRINT, NOW)
    assert first.verdict == second.verdict == "escalation refused"
    assert [e.event for e in first.events] == ["capacity bound", "escalation refused"]
    assert second.events == []
    assert cap.held == {"docker.cpu": 4.0} and cap.position is None
