"""Decisions that follow the facts, pure: a `hung_worker` or `stuck_sample` decision whose
cause went away is closed by the run instead of blocking signoff until someone rules on it.

A hang holds while its worker stays silent. It lapses once the worker answers again (its watch
saw a socket answer or a log write after the hang, or the tend's own look got a socket answer)
or once the worker is gone (it exited or was stopped; its tasks respawn from their logs,
complete or stall, and the run handles and asks about each of those itself). A stuck sample
holds while it sits in its worker. It lapses once it completed or errored (its task's newest
log holds it; an error is a decision of its own) or once its worker is gone.

`lapsed` says which instances no longer hold, given what a tend saw (`TendFacts`); `close`
takes them out of their classes (in place). A class left with no instance is `healed`, as
healing.py's are: its open decisions are answered `closed` by steward with the reason, and it
never blocks signoff. A hang or a stuck sample seen again later is a new instance, so
decisions.absorb reopens the class and raises a new decision naming that instance's worker.
"""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field

from steward.workflows.contracts import RunEvent
from steward.workflows.policy.decisions import Anomaly, ErrorClass, Ruling, Triage

LAPSING_KINDS = ("hung_worker", "stuck_sample")
UNRULED = ("open", "proposed")
CLOSED_VERDICT = "closed"


class TendFacts(BaseModel):
    """What one tend saw that a hang or a stuck sample depends on."""

    model_config = ConfigDict(use_attribute_docstrings=True)

    workers: dict[str, int] = Field(default_factory=dict)
    """The workers the run still holds (worker id -> pid): one left out is gone."""
    answered: set[str] = Field(default_factory=set)
    """Workers that showed life in this tend: their watch reported them answering again, or
    the tend's look got an answer from their control socket."""
    task_workers: dict[str, str] = Field(default_factory=dict)
    """Task identifier -> the worker that runs it now (a task left out has none)."""
    completed: set[str] = Field(default_factory=set)
    """Sample refs (task#id@epoch) held without an error by their task's newest log."""
    errored: set[str] = Field(default_factory=set)
    """Sample refs their task's newest log holds with an error."""


class Lapse(BaseModel):
    """One instance whose cause went away."""

    model_config = ConfigDict(use_attribute_docstrings=True)

    class_id: str
    key: str
    """The instance's key."""
    reason: str
    """Why it no longer holds, one clause for a person."""


class Closed(BaseModel):
    """What `close` did to one class."""

    model_config = ConfigDict(use_attribute_docstrings=True)

    class_id: str
    instances: int
    """Instances taken out of it."""
    reason: str
    """Why, one sentence (the first lapse's, with how many more)."""
    decisions: list[str] = Field(default_factory=list)
    """Its decisions closed (the class has no instance left: healed)."""


def watched_samples(triage: Triage) -> list[str]:
    """Sample refs of the stuck samples open decisions hold: the tend asks which of them their
    task's newest log holds (the same question as healing's suspects)."""
    refs = {
        instance.anomaly.sample_ref
        for cls in triage.classes
        if cls.kind == "stuck_sample" and cls.state in UNRULED
        for instance in cls.instances
    }
    return sorted(refs)


def hang_reported_since(triage: Triage, worker_id: str) -> datetime | None:
    """When the silence began that an open hang of `worker_id` reported (None: none is open).
    A watch started again (a continued run re-adopts its workers) then reports the worker's
    recovery rather than waiting for a tend that, with the timer far off, may not come."""
    for cls in triage.classes:
        if cls.kind != "hung_worker" or cls.state not in UNRULED:
            continue
        for instance in reversed(cls.instances):
            worker, _, since = (instance.anomaly.uuid or "").partition("@")
            if worker == worker_id and since:
                return datetime.fromisoformat(since)
    return None


def lapsed(triage: Triage, facts: TendFacts) -> list[Lapse]:
    """The instances of unruled hang and stuck classes that no longer hold, given `facts`."""
    found = []
    for cls in triage.classes:
        if cls.kind not in LAPSING_KINDS or cls.state not in UNRULED:
            continue
        for instance in cls.instances:
            reason = _why_lapsed(instance.anomaly, facts)
            if reason is not None:
                found.append(Lapse(class_id=cls.id, key=instance.key, reason=reason))
    return found


def _why_lapsed(anomaly: Anomaly, facts: TendFacts) -> str | None:
    worker = anomaly.worker
    gone = worker is not None and worker not in facts.workers
    if anomaly.kind == "hung_worker":
        if gone:
            return f"worker {worker} is gone{_now_runs(anomaly, facts)}"
        if worker in facts.answered:
            return f"worker {worker} (pid {facts.workers[worker]}) answered again"
        return None
    sample = f"sample {anomaly.sample_id} (epoch {anomaly.epoch}) of {anomaly.task_name}"
    if anomaly.sample_ref in facts.completed:
        return f"{sample} completed"
    if anomaly.sample_ref in facts.errored:
        return f"{sample} errored (its error is asked about on its own)"
    if gone:
        return f"{sample} is no longer stuck: worker {worker} is gone{_now_runs(anomaly, facts)}"
    return None


def _now_runs(anomaly: Anomaly, facts: TendFacts) -> str:
    """Where the task went on, when a worker runs it now."""
    current = facts.task_workers.get(anomaly.task)
    if current is None or current not in facts.workers:
        return ""
    return f"; {anomaly.task_name} runs in worker {current} (pid {facts.workers[current]}) now"


def close(triage: Triage, lapses: list[Lapse], *, now: datetime) -> list[Closed]:
    """Take the lapsed instances out of their classes (in place); a class left empty heals and
    its open decisions close. Returns what changed, per class."""
    by_class: dict[str, list[Lapse]] = {}
    for lapse in lapses:
        by_class.setdefault(lapse.class_id, []).append(lapse)
    outcome = []
    for class_id, gone in by_class.items():
        cls = triage.find_class(class_id)
        if cls is None:
            continue
        keys = {lapse.key for lapse in gone}
        cls.instances = [i for i in cls.instances if i.key not in keys]
        more = f" (and {len(gone) - 1} more)" if len(gone) > 1 else ""
        closed = Closed(class_id=class_id, instances=len(gone), reason=gone[0].reason + more)
        if not cls.instances:
            closed.decisions = _heal(triage, cls, closed.reason, now)
        outcome.append(closed)
    return outcome


def _heal(triage: Triage, cls: ErrorClass, reason: str, now: datetime) -> list[str]:
    cls.state = "healed"
    answer = Ruling(verdict=CLOSED_VERDICT, reason=reason, by="steward", at=now)
    closed = []
    for decision in triage.decisions:
        if decision.class_id == cls.id and decision.open:
            decision.answer = answer
            closed.append(decision.id)
    return closed


def journal_events(outcome: list[Closed]) -> list[RunEvent]:
    """The journal lines for what `close` did: each closed decision, and instances that left a
    class another instance keeps open."""
    events = []
    for closed in outcome:
        for decision_id in closed.decisions:
            events.append(
                RunEvent(
                    event="decision closed",
                    data={
                        "decision": decision_id,
                        "error_class": closed.class_id,
                        "reason": closed.reason,
                    },
                )
            )
        if not closed.decisions:
            events.append(
                RunEvent(
                    event="no longer holds",
                    data={
                        "error_class": closed.class_id,
                        "instances": closed.instances,
                        "reason": closed.reason,
                    },
                )
            )
    return events
