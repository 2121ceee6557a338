"""Healing, pure: an errored sample that a resumed task later completed cleanly is not an error.

A task worker that dies (kill -9, an OOM, a graceful stop) leaves a log whose samples may have
errored around its death; the respawned worker resumes the task and runs them again. Each tend
the anomaly finder is told which error classes are unsettled (`suspect_classes`); it reads their
instances from the triage ledger and answers which of them are healthy in their task's newest
log; `heal` takes those out of their classes. A class left with no instance is `healed`: its
open decisions close, it never blocks signoff, and a ruling on it has nothing left to act on. A
sample that errs again later comes back as a new instance (decisions.absorb reopens the class).
"""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field

from steward.workflows.policy.decisions import Ruling, Triage

SAMPLE_KINDS = ("sample_error", "rerun_failed")
UNSETTLED = ("open", "proposed", "ruled")
HEALED_REASON = "every sample in it completed cleanly when its task resumed"
NAMED = 20  # samples a healing names in the journal; the rest are counted


def suspect_classes(triage: Triage) -> list[str]:
    """The error classes whose samples the run still holds against a task: unsettled classes of
    errored samples (the finder leaves out instances whose ruling was carried out)."""
    return [c.id for c in triage.classes if c.kind in SAMPLE_KINDS and c.state in UNSETTLED]


class Healed(BaseModel):
    class_id: str
    count: int = 0  # instances taken out of the class
    samples: list[str] = Field(default_factory=list)  # the first NAMED, by instance key
    closed: bool = False  # the class has no instance left: healed, its decisions closed


def heal(triage: Triage, healthy: dict[str, dict[str, str]], *, now: datetime) -> list[Healed]:
    """Take the instances now healthy in their task's newest log (class id -> {instance key:
    its task}) out of their classes (in place), and out of the ledger. What healed, per class."""
    outcome = []
    for cls in triage.classes:
        keys = healthy.get(cls.id)
        if not keys or cls.kind not in SAMPLE_KINDS or cls.state not in UNSETTLED:
            continue
        gone = cls.release(keys)
        for key in keys:
            triage.record("remove", cls.id, key)
        healed = Healed(class_id=cls.id, count=gone, samples=sorted(keys)[:NAMED])
        if cls.count == 0:
            cls.state, healed.closed = "healed", True
            answer = Ruling(verdict="healed", reason=HEALED_REASON, by="steward", at=now)
            for decision in triage.decisions:
                if decision.class_id == cls.id and decision.open:
                    decision.answer = answer
        outcome.append(healed)
    return outcome
