"""Is a worker's provider answering? Pure: what a watch keeps between its looks at a task
worker's control socket, and how each look moves it.

Inspect retries a provider that fails with a retryable error (429, 5xx, a refused or dropped
connection) with exponential backoff, by default without end: a provider that is down shows as
samples in flight for hours while their retries pile up, Hawk's "FAIL, FAIL, FAIL", not as
errors. The control socket's `/models/throughput` counts, per model, the calls that returned
(`requests`) and the retries (`retries.transient`, `retries.rate_limit`), and how many retries
are waiting out their backoff now (`retry_waits_active`). A worker's provider is **failing**
from the first look that saw a retry (or a retry waiting) with no answer since the look before,
until a look sees an answer again (a call that returned, or a sample completed).

A watch that starts again (a continued run re-adopts its workers) has no memory of its looks,
so each look also reads Inspect's own memory: `/models/throughput?window=W` sums the last W
seconds (at most HORIZON_S, in 10 s buckets). No call answered in them while retries wait now is
failing for that long, whoever looked before (`quiet_for`). workflows/policy/provider_stuck.py
says when failing has lasted long enough to ask about.
"""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field

HORIZON_S = 600  # the longest window Inspect's throughput report sums (its ring of buckets)


class ProviderHealth(BaseModel):
    """What a watch knows of its worker's provider, from its last look."""

    model_config = ConfigDict(use_attribute_docstrings=True)

    models: list[str] = Field(default_factory=list)
    """The models of the worker's tasks, as Inspect names them."""
    answers: int = 0
    """Model calls that returned, cumulative over the worker's life."""
    retries: int = 0
    """Retries (transient and rate limit), cumulative."""
    completed: int = 0
    """Samples completed without an error, over its tasks."""
    failing_since: datetime | None = None
    """Since when only failures came back (None: an answer came since the last failure)."""
    failing_retries: int = 0
    """`retries` when the failing began."""
    failed_at: datetime | None = None
    """The newest sign of failure: a retry, or a retry waiting out its backoff."""
    answered_at: datetime | None = None
    """The newest sign of an answer: a call that returned, or a completed sample."""
    quiet_for: float = 0.0
    """Seconds Inspect's own window shows no call answered while a retry waits now (0: it
    shows an answer, or nothing is failing now)."""


def look(
    before: ProviderHealth | None,
    *,
    models: list[str],
    answers: int,
    retries: int,
    waiting: int,
    completed: int,
    now: datetime,
    window_answers: int | None = None,
    window_s: float = 0.0,
) -> ProviderHealth:
    """The health after a look that read these counters (`waiting`: retries in their backoff
    now; `window_answers`: calls answered in Inspect's window of the last `window_s` seconds,
    None when not read). A first look (or counters that went back: another process) sees
    failing only in a retry waiting now: old retries may have been answered since."""
    fresh = (
        before is None
        or before.models != models
        or answers < before.answers
        or retries < before.retries
    )
    health = ProviderHealth(models=models, answers=answers, retries=retries, completed=completed)
    failing_now = waiting > 0 or (not fresh and before is not None and retries > before.retries)
    if window_answers == 0 and failing_now:
        health.quiet_for = window_s
    if fresh:
        if waiting:
            health.failing_since = health.failed_at = now
            health.failing_retries = retries
        return health
    assert before is not None
    answered = answers > before.answers or completed > before.completed
    failed = retries > before.retries or waiting > 0
    health.answered_at = now if answered else before.answered_at
    health.failed_at = now if failed else before.failed_at
    if answered:
        return health  # failing_since None: an answer came back
    health.failing_since = before.failing_since
    health.failing_retries = before.failing_retries
    if failed and health.failing_since is None:
        health.failing_since = now
        health.failing_retries = before.retries
    return health


def failing_for(health: ProviderHealth | None, now: datetime, recent: float) -> float | None:
    """Seconds the provider has been failing: by this watch's looks, when a sign of failure
    came within the last `recent` seconds (a worker whose last retry was long ago is doing
    something else: a long tool call, say), or by Inspect's window; None when it is not."""
    if health is None:
        return None
    seen = None
    if health.failing_since is not None and health.failed_at is not None:
        if (now - health.failed_at).total_seconds() <= recent:
            seen = (now - health.failing_since).total_seconds()
    if health.quiet_for:
        seen = max(seen or 0.0, health.quiet_for)
    return seen
