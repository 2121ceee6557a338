"""Capacity's messages: what a run, its admission activity and a CapacityLedger send each
other (the ask, the answer, what a ledger owes runs and carries over a handover), and a run's
side of its admission. The decisions over a ledger are in capacity.py; this module holds the
shapes they travel in, and the one rule about them: the order of what a ledger owes.
"""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field

from steward.workflows.policy.capacity import (
    Admission,
    AdmitRequest,
    Backend,
    Footprint,
    Ledger,
    ProbeReading,
)


class ProbeRequest(BaseModel):
    """How to probe a domain: the options are re-read from the workspace at each decision."""

    backend: Backend
    workspace: str = ""
    namespace: str | None = None


class PendingAdmission(BaseModel):
    """A signal the ledger owes a run: the pump admitted it (no request_id), or the answer to
    the ask `request_id`."""

    run_id: str
    admission: Admission
    request_id: str = ""


class AdmissionAnswer(BaseModel):
    """The ledger's answer to a run's ask (ask-by-signal-v1)."""

    request_id: str
    admission: Admission


def owe_admission(owed: list[PendingAdmission], admitted: PendingAdmission) -> None:
    """Put a pumped admission among the signals the ledger owes (ledger-answers-v1): ahead of
    the answers, so after a burst of asks a release does not wait behind hundreds of them, and
    behind the admissions owed before it (the queue's order). A run whose answer is still owed
    is answered with its admission instead: it never hears it was queued, and never hears two
    things out of order."""
    for signal in owed:
        if signal.run_id == admitted.run_id and signal.request_id:
            signal.admission = admitted.admission
            return
    answers = [i for i, signal in enumerate(owed) if signal.request_id]
    owed.insert(answers[0] if answers else len(owed), admitted)


class LedgerInput(BaseModel):
    domain: str
    ledger: Ledger | None = None  # carried over continue-as-new
    log: list[str] = Field(default_factory=list)
    # Admitted runs not yet signalled when the ledger handed over: the next execution signals
    # them first (a release that came in during the handover must not strand its run).
    pending: list[PendingAdmission] = Field(default_factory=list)


class LedgerView(BaseModel):
    ledger: Ledger
    positions: dict[str, int] = Field(default_factory=dict)
    reasons: dict[str, str] = Field(default_factory=dict)
    reserved: dict[str, float] = Field(default_factory=dict)
    log: list[str] = Field(default_factory=list)


class AdmissionCall(BaseModel):
    """What a run's admission activity carries: probe, then ask the domain's ledger."""

    probe: ProbeRequest
    admit: AdmitRequest


class AdmissionOutcome(BaseModel):
    # None when the activity asked by signal: the answer comes to the run as a signal.
    admission: Admission | None = None
    reading: ProbeReading | None = None
    domain_id: str = ""
    event: dict | None = None  # a structured reason to wait (Kubernetes: quota exceeded)


class CapacityState(BaseModel):
    """A run's side of its admission."""

    backend: Backend = "local"
    domain_id: str | None = None
    probe: ProbeRequest | None = None
    footprint: Footprint = Field(default_factory=Footprint)
    held: dict[str, float] = Field(default_factory=dict)  # what the ledger reserved for it
    admitted: bool = False
    position: int | None = None  # when queued: its place at the last answer
    reason: str = ""  # why it waits
    queued_at: datetime | None = None
    admitted_at: datetime | None = None
    bound_source: str = ""  # the bound's last resolution, journalled when it changes
    escalation_refused: str = ""  # the last refused escalation (journalled once)
