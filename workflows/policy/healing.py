"""Healing, pure: an errored sample that a resumed task later completed cleanly is not an error.

A task worker that dies (kill -9, an OOM, a graceful stop) leaves a log whose samples may have
errored around its death; the respawned worker resumes the task and runs them again. Each tend
the anomaly finder is told which samples the run's open error classes hold (`suspect_refs`) and
answers which of them are healthy in their task's newest log; `heal` takes those out of their
classes. A class left with no instance is `healed`: its open decisions close, it never blocks
signoff, and a ruling on it has nothing left to act on. A sample that errs again later comes
back as a new instance (decisions.absorb reopens the class).
"""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field

from steward.workflows.policy.decisions import Ruling, Triage

SAMPLE_KINDS = ("sample_error", "rerun_failed")
UNSETTLED = ("open", "proposed", "ruled")
HEALED_REASON = "every sample in it completed cleanly when its task resumed"


def suspect_refs(triage: Triage) -> list[str]:
    """Sample refs (task#id@epoch) of errored samples the run still holds against a task:
    instances of unsettled error classes whose ruling has not been carried out on them."""
    refs = {
        instance.anomaly.sample_ref
        for cls in triage.classes
        if cls.kind in SAMPLE_KINDS and cls.state in UNSETTLED
        for instance in cls.instances
        if instance.applied is None
    }
    return sorted(refs)


class Healed(BaseModel):
    class_id: str
    samples: list[str] = Field(default_factory=list)  # sample refs taken out of the class
    closed: bool = False  # the class has no instance left: healed, its decisions closed


def heal(triage: Triage, healthy: list[str], *, now: datetime) -> list[Healed]:
    """Take the samples now healthy in their task's newest log out of their classes (in place).
    Returns what healed, per class."""
    if not healthy:
        return []
    well = set(healthy)
    outcome = []
    for cls in triage.classes:
        if cls.kind not in SAMPLE_KINDS or cls.state not in UNSETTLED:
            continue
        gone = [i for i in cls.instances if i.applied is None and i.anomaly.sample_ref in well]
        if not gone:
            continue
        gone_keys = {i.key for i in gone}
        cls.instances = [i for i in cls.instances if i.key not in gone_keys]
        healed = Healed(class_id=cls.id, samples=[i.anomaly.sample_ref for i in gone])
        if not cls.instances:
            cls.state, healed.closed = "healed", True
            answer = Ruling(verdict="healed", reason=HEALED_REASON, by="steward", at=now)
            for decision in triage.decisions:
                if decision.class_id == cls.id and decision.open:
                    decision.answer = answer
        outcome.append(healed)
    return outcome
