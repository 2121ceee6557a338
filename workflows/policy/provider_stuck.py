"""A stuck provider, pure: when a watch reports that a worker's provider has answered nothing
for `provider_stuck_after`, what the run asks, and when the question no longer holds.

The watch (activities/processes/watch.py) keeps a `ProviderHealth` in its pulse
(provider_health.py). Once the provider has been failing for the window, with a sign of failure
within it, the watch completes with `provider_stuck` and the run tends at once: the tend files a
`provider_stuck` anomaly, one class per model (one outage is one question, whichever tasks it
stops), and the operator decides `wait` (Inspect goes on retrying) or `pause`. A worker whose
provider then answers again is reported `provider_answered`, and its instance lapses; a class
left with none is closed by the run (lapsed.py's way), so a provider that came back never
blocks signoff. A worker that is gone no longer waits on its provider either.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from steward.workflows.activity_io import WatchRequest, WorkerEnd
from steward.workflows.contracts import WorkerPulse
from steward.workflows.options import format_duration
from steward.workflows.policy.decisions import Anomaly, Triage
from steward.workflows.policy.lapsed import Lapse
from steward.workflows.policy.provider_health import failing_for

KIND = "provider_stuck"


def judge_provider(pulse: WorkerPulse, request: WatchRequest, now: datetime) -> WorkerEnd | None:
    """Whether the run should hear about the worker's provider now: stuck for the window, or
    answering again after it was reported stuck (None: neither)."""
    window, health, worker = request.limits.provider_stuck_after, pulse.provider, request.worker
    if window is False or health is None:
        return None
    model = ", ".join(health.models) or "its model"
    reported = request.provider_stuck_reported
    if reported is not None:
        if health.answered_at is not None and health.answered_at > reported:
            return WorkerEnd(
                worker_id=worker.worker_id,
                kind="provider_answered",
                at=now,
                since=health.answered_at,
                model=model,
                detail=f"worker {worker.worker_id} (pid {worker.pid}): {model} answers again",
            )
        return None
    failing = failing_for(health, now, recent=window)
    if failing is None or failing < window:
        return None
    retries = health.retries - health.failing_retries
    counted = (
        f", {retries} retr{'y' if retries == 1 else 'ies'}"
        if health.failing_since is not None and retries > 0
        else ""
    )
    return WorkerEnd(
        worker_id=worker.worker_id,
        kind="provider_stuck",
        at=now,
        since=now - timedelta(seconds=failing),
        model=model,
        detail=(
            f"no answer for {format_duration(round(failing))}{counted} "
            f"(worker {worker.worker_id}, pid {worker.pid})"
        ),
    )


def stuck_anomaly(end: WorkerEnd, task: str, task_name: str) -> Anomaly:
    """The anomaly a `provider_stuck` report files, on the worker's (first) task."""
    return Anomaly(
        kind=KIND,
        task=task,
        task_name=task_name,
        uuid=f"{end.worker_id}@{end.since.isoformat() if end.since else ''}",
        worker=end.worker_id,
        model=end.model,
        detail=f"{task_name}: {end.detail}",
    )


def reported_since(triage: Triage, worker_id: str) -> datetime | None:
    """When the failing began that a held stuck-provider instance of `worker_id` reported (None:
    none is held). A watch started again (a continued run re-adopts its workers) then waits for
    an answer before it reports that worker's provider again."""
    for cls in triage.classes:
        if cls.kind != KIND or cls.state == "healed":
            continue
        for instance in reversed(cls.instances):
            worker, _, since = (instance.anomaly.uuid or "").partition("@")
            if worker == worker_id and since:
                return datetime.fromisoformat(since)
    return None


def lapses(triage: Triage, answered: set[str], workers: set[str]) -> list[Lapse]:
    """The instances of stuck-provider classes that no longer hold: their worker's provider
    answers again (`answered`: worker ids), or the worker is gone (not in `workers`). An
    unruled class left empty closes its decision; a ruled one (wait, pause) just heals, and
    asks again if the provider gets stuck anew."""
    found = []
    for cls in triage.classes:
        if cls.kind != KIND or cls.state == "healed":
            continue
        for instance in cls.instances:
            worker = instance.anomaly.worker or ""
            model = instance.anomaly.model or "its model"
            if worker in answered:
                reason = f"{model} answers worker {worker} again"
            elif worker not in workers:
                reason = f"worker {worker} is gone (it no longer waits on {model})"
            else:
                continue
            found.append(Lapse(class_id=cls.id, key=instance.key, reason=reason))
    return found
