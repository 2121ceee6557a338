"""Deferred verdicts, pure: a `rerun` ruled "when the provider answers again" (`steward rule
d-N rerun --when-provider-answers`).

A class of samples that failed because their provider was down is worth re-running only once
the provider is back. The ruling is recorded at once (the decision is answered, the class is
`ruled`, signoff waits for it) but it is not carried out: its `Ruling.until` holds it back, so
neither the state's actions nor the triage ledger's orders include it. Meanwhile the run probes
the models of the class's tasks (one cheap request each, an activity) on a timer of its own, at
the ruling and then 10 s, 20 s, 40 s, ... apart, at most PROBE_CAP_S; the first probe every
model answers releases the ruling, and the next tend carries the rerun out as any other. The
timer is the run's, so a finished run (which has no tend timer) probes too, and a run continued
as new resumes probing where the last left off (`next_probe_at`).
"""

from __future__ import annotations

from datetime import datetime, timedelta

from pydantic import BaseModel, ConfigDict, Field

from steward.workflows.policy.decisions import ErrorClass, Triage

UNTIL_PROVIDER = "provider_answers"  # Ruling.until: held until the provider answers a probe
DEFERRABLE = {"rerun"}  # the verdicts that may wait for the provider
PROBE_FIRST_S = 10.0  # after the first probe that found no answer
PROBE_CAP_S = 300.0  # the longest wait between probes
PROBLEM_LIMIT = 300  # characters of a probe's failure kept in the state


class Deferral(BaseModel):
    """A ruling that waits for its class's provider to answer, and how probing it goes."""

    model_config = ConfigDict(use_attribute_docstrings=True)

    class_id: str
    """The error class whose ruling waits."""
    decision_id: str
    """The decision that was ruled."""
    verdict: str = "rerun"
    """What is carried out once the provider answers."""
    models: list[str] = Field(default_factory=list)
    """The models probed: those of the class's tasks, each as Inspect names it."""
    since: datetime
    """When it was ruled."""
    by: str = ""
    """Who ruled it."""
    probes: int = 0
    """Probes made that found no answer."""
    next_probe_at: datetime
    """When the next probe is due."""
    last_problem: str | None = None
    """What the last probe that found no answer met (one line)."""


def provider_of(model: str) -> str:
    """The provider a model is reached through, as people name it: `openai-api/sim/echo` ->
    `openai-api/sim`, `openai/gpt-4o` -> `openai`."""
    parts = model.split("/")
    return "/".join(parts[:2]) if parts[0] == "openai-api" and len(parts) > 2 else parts[0]


def providers_text(models: list[str]) -> str:
    """The providers of `models`, for a sentence (`openai-api/sim`, `a and b`)."""
    names = sorted({provider_of(m) for m in models}) or ["the provider"]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def probe_delay(failed: int) -> float:
    """Seconds to the next probe after `failed` probes found no answer: 10, 20, 40, ...
    capped at PROBE_CAP_S."""
    return min(PROBE_FIRST_S * 2 ** max(failed - 1, 0), PROBE_CAP_S)


def deferral_problem(verdict: str, until: str | None) -> str | None:
    """Why a ruling may not wait for the provider (None: it may, or it does not ask to)."""
    if until is None or verdict in DEFERRABLE:
        return None
    return (
        f"--when-provider-answers defers a rerun only; {verdict} is carried out at once "
        "(drop the flag, or rule rerun)."
    )


def class_tasks(cls: ErrorClass) -> list[str]:
    """The task identifiers a class's instances belong to (a ledger class counts them all)."""
    tasks = set(cls.tasks) if cls.in_ledger else set()
    tasks |= {i.anomaly.task for i in cls.instances}
    return sorted(t for t in tasks if t)


def defer(
    cls: ErrorClass, decision_id: str, task_models: dict[str, str], *, by: str, now: datetime
) -> Deferral:
    """The deferral of `cls`'s ruling (just ruled with until=UNTIL_PROVIDER): its tasks'
    models (`task_models`: task identifier -> model) are probed at once."""
    models = sorted({task_models[t] for t in class_tasks(cls) if t in task_models})
    verdict = cls.ruling.verdict if cls.ruling is not None else "rerun"
    return Deferral(
        class_id=cls.id,
        decision_id=decision_id,
        verdict=verdict,
        models=models,
        since=now,
        by=by,
        next_probe_at=now,
    )


def holds(triage: Triage, deferral: Deferral) -> bool:
    """Whether the class's ruling still waits for the provider (it may have been ruled anew,
    or the class let go, since it was deferred)."""
    cls = triage.find_class(deferral.class_id)
    return (
        cls is not None
        and cls.ruling is not None
        and cls.ruling.until == UNTIL_PROVIDER
        and cls.state == "ruled"
    )


def dropped_because(triage: Triage, deferral: Deferral) -> str:
    """Why a deferral no longer holds, for the journal."""
    cls = triage.find_class(deferral.class_id)
    if cls is None:
        return "its class is no longer held"
    if cls.state == "healed":
        return "its samples completed cleanly meanwhile"
    return "the class was ruled anew"


def missed(deferral: Deferral, problem: str, now: datetime) -> None:
    """A probe found no answer (in place): the next is due after the backoff."""
    deferral.probes += 1
    deferral.last_problem = problem[:PROBLEM_LIMIT]
    deferral.next_probe_at = now + timedelta(seconds=probe_delay(deferral.probes))


def release(triage: Triage, deferral: Deferral) -> bool:
    """The provider answered: the ruling is carried out from now on (in place). False when it
    no longer waited for it."""
    if not holds(triage, deferral):
        return False
    cls = triage.find_class(deferral.class_id)
    assert cls is not None and cls.ruling is not None
    cls.ruling.until = None
    return True


def waiting_text(deferral: Deferral) -> str:
    """One clause for status and blockers: what waits, and for whom."""
    return (
        f"{deferral.verdict} of {deferral.class_id} waits until "
        f"{providers_text(deferral.models)} answers ({deferral.probes} probe(s) unanswered)"
    )
