"""Whether a live worker's provider answers, read from its control socket for its watch
(activities/processes/watch.py): `/models/throughput` counts, per model, the calls that returned
and the retries, the retries waiting out their backoff now, and the calls answered within its
window of the last seconds. What the counters mean and when
the run hears of them is workflows/policy/provider_health.py's and provider_stuck.py's."""

from __future__ import annotations

from datetime import datetime

import httpx

from steward.activities.processes.control_socket import control_get
from steward.workflows.contracts import Progress
from steward.workflows.policy.provider_health import HORIZON_S, ProviderHealth, look

THROUGHPUT_TIMEOUT_S = 2.0


def throughput_counters(socket: str, models: list[str], window: float) -> dict[str, float] | None:
    """Over `models`: calls answered and retries (cumulative for the process), retries waiting
    now, and calls answered in Inspect's window of the last `window` seconds (at most its
    horizon) with that window's length; None when the socket does not answer."""
    asked = max(1, min(int(window), HORIZON_S))
    try:
        report = control_get(
            socket, f"/models/throughput?window={asked}", timeout=THROUGHPUT_TIMEOUT_S
        )
    except (httpx.HTTPError, ValueError):
        return None
    found = {"answers": 0, "retries": 0, "waiting": 0, "window_answers": 0, "window_s": asked}
    for entry in report.get("models", []) if isinstance(report, dict) else []:
        if entry.get("model") not in models:
            continue
        cumulative = entry.get("cumulative") or {}
        counted = cumulative.get("retries") or {}
        seconds = float(entry.get("window_seconds") or 0)
        found["answers"] += int(cumulative.get("requests") or 0)
        found["retries"] += int(counted.get("transient") or 0) + int(counted.get("rate_limit") or 0)
        found["waiting"] += int(entry.get("retry_waits_active") or 0)
        found["window_answers"] += round(
            float(entry.get("requests_per_minute") or 0) * seconds / 60
        )
        found["window_s"] = min(found["window_s"], seconds)  # a model younger than the window
    return found


def look_at_provider(
    socket: str,
    rows: list[dict],
    progress: dict[str, Progress],
    before: ProviderHealth | None,
    now: datetime,
    window: float,
) -> ProviderHealth | None:
    """The worker's provider health after this look (`rows`: its tasks' rows from `/tasks`;
    `progress`: what this look read of them; `window`: provider_stuck_after); `before` when
    the socket did not answer."""
    models = sorted({str(r["model"]) for r in rows if r.get("model")})
    counters = throughput_counters(socket, models, window) if models else None
    if counters is None:
        return before
    completed = sum(p.completed for p in progress.values())
    return look(
        before,
        models=models,
        answers=int(counters["answers"]),
        retries=int(counters["retries"]),
        waiting=int(counters["waiting"]),
        completed=completed,
        now=now,
        window_answers=int(counters["window_answers"]),
        window_s=counters["window_s"],
    )
