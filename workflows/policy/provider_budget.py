"""One connection budget per provider per run, as pure policy.

Every task worker is its own process, and Inspect gives each process its own adaptive
connection controller (start 20, ceiling 100, x0.8 on a rate-limit retry). Left alone, N
workers against one provider open N times what one process would and collect N times the
429s. So the workers that share a provider endpoint share one budget: the sum of their
controllers' ceilings never exceeds it.

* **Seeding.** A run's first budget for an endpoint is what an earlier run learned there (the
  provider ledger keeps it), else what one process would open (start 20, ceiling 100).
* **Shares.** The budget is split over the live workers by demand (a worker never needs more
  connections than samples it may run), water-filling what one does not need into the others;
  each share is at least one connection. A new worker starts at its share of what the run
  knows the provider allows (`start`), with its share of `limit` as its ceiling.
* **Learning.** Rate-limit pushback in any worker lowers the budget for all: to the sum of the
  controllers' live limits (they already fell), but by a tenth at most per tend (their burst
  of cuts undershoots the provider's limit; more pushback soon lowers it again). Windows in which
  every controller stood at its ceiling, saturated and clean, raise it by a tenth. A lowered
  budget is learned: it is what the next run against the endpoint starts from.
* **Episodes** (budget-episode-v1). One burst of 429s reaches every worker, and each worker's
  report is a tend of its own: measured, a budget went 90 -> 81 -> 72 in 0.6 s on one burst, and
  another was raised 0.6 s after a cut (its controllers still stood at the old ceilings). So for
  EPISODE_S after a lowering (Inspect's own cooldown between cuts) the budget neither falls
  again nor rises; and a raise stops short of the lowest level that saw pushback in the last
  PUSHBACK_MEMORY_S, so a budget just under the provider's limit stays there instead of
  climbing back into it. Once no eval work is left the scan holds the whole budget, and may
  probe up to just under that level (`scan_headroom`; activities/scan/scan_widen.py does the
  probing, back to its share on a 429).
* **Workers' own controllers.** Each worker's controller still cuts itself on a 429 (Inspect's
  x0.8, to a multiple of 5: a share of 20 falls to 15); the budget bounds their sum and judges
  the episode, so a worker's controller waits WORKER_COOLDOWN_S after its cut before it climbs
  back, not Inspect's 15 s (for which a fleet of small shares stood a quarter below its budget).
* **Brackets** (budget-bracket-v1). Without headers, a provider's limit lies between the
  highest level that ran saturated and clean and the lowest that saw pushback. A budget that
  knows both falls back to the clean one on pushback, not a tenth down (a raise that found the
  limit costs one burst, not a dip and a climb back). A budget seeded from an earlier run's
  lesson takes the level above it as having pushed back (the lesson is where that search
  ended) and holds there until the memory lapses. Measured before (bench.ramp's cap shape, 80
  in flight): a second run seeded at 80 raised to 88 at once, knowing no pushback level, and
  walked back down a burst at a time, 25 429s in 160 s and ~74 of 80 in flight on average.
* **Starting setpoints.** With a learned budget the tasks' starting sample concurrency is sized
  to their share of it; an unknown budget keeps the seed's rule. With setpoint-headroom-v1 the
  share is a quarter over the connections (at least 2 more): the connections bound what the
  provider sees, and the samples beyond them wait inside Inspect for the next free one.
  Measured before (bench.ramp's cap shape, learned 80, 4 tasks at 20 samples and 20
  connections each): every connection idled through its sample's end and the next one's start,
  77.5-78 of 80 in flight; and at 18 samples on 75 connections the ramp never raised them (no
  reading saw all 18 in flight at once), so 72 of 75 at most.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from datetime import datetime

from pydantic import BaseModel, Field

# Inspect's AdaptiveConcurrency defaults: what one process opens, and its ceiling.
ONE_PROCESS_START = 20
ONE_PROCESS_CEILING = 100
INSPECT_MIN = 10  # the controller's default floor (clamped to the ceiling)
MOST_CUT_PER_TEND = 0.9  # a pushback tend lowers a budget by a tenth at most
GROWTH = 0.1
AT_CEILING = 0.95  # a controller this close to its ceiling wants more
SETPOINT_HEADROOM = 0.25  # samples over a learned share of connections (starting setpoints)
SETPOINT_HEADROOM_MIN = 2
EPISODE_S = 15.0  # after a lowering, what the workers report belongs to its episode
PUSHBACK_MEMORY_S = 600.0  # how long a level that saw pushback caps the raises
WORKER_COOLDOWN_S = 5.0  # a worker's controller after its own cut (Inspect's default: 15)


class ProviderBudget(BaseModel):
    """What the run's workers against one provider endpoint may hold together."""

    endpoint: str
    models: list[str] = Field(default_factory=list)
    limit: int = ONE_PROCESS_CEILING  # the most connections the workers hold together
    start: int = ONE_PROCESS_START  # what new workers open together at first
    learned: bool = False  # set by pushback (this run's or an earlier run's)
    pushbacks: int = 0  # windows with rate-limit pushback, over the run
    shares: dict[str, int] = Field(default_factory=dict)  # worker id -> ceiling applied
    lowered_at: datetime | None = None  # budget-episode-v1: the last lowering
    pushback_level: int | None = None  # the lowest limit that saw pushback since then
    bracket: bool = False  # budget-bracket-v1: learns between clean_level and pushback_level
    clean_level: int | None = None  # the highest limit seen saturated and clean (bracket)
    pushback_at: datetime | None = None  # when pushback_level was last set (bracket)


class ConnectionShare(BaseModel):
    """A worker's adaptive-connection bounds at spawn."""

    start: int
    ceiling: int

    @property
    def floor(self) -> int:
        return min(INSPECT_MIN, self.start)


class WorkerConnections(BaseModel):
    """What one tend saw of one worker's connections."""

    demand: int  # samples it may run at once (its tasks' setpoints)
    live_limit: int | None = None  # its controller's limit now (None: not adaptive/no answer)
    in_flight: int = 0  # samples in flight
    pushback: bool = False  # rate-limit retries in this tend's window


class BudgetMove(BaseModel):
    kind: str  # "none", "lowered", "raised"
    limit: int
    previous: int
    reason: str = ""
    clean_at: int | None = None  # bracket: the level this tend saw saturated and clean


def endpoint_of(model: str, environ: Mapping[str, str]) -> str:
    """The provider endpoint a model reaches: its provider (with the service, for
    `openai-api/<service>/...`) and the base URL the environment gives it, if any."""
    parts = model.split("/")
    provider = "/".join(parts[:2]) if parts[0] == "openai-api" and len(parts) > 2 else parts[0]
    variable = provider.split("/")[-1].upper().replace("-", "_") + "_BASE_URL"
    base_url = environ.get(variable)
    return f"{provider} {base_url.rstrip('/')}" if base_url else provider


def seeded(
    endpoint: str, models: list[str], learned_limit: int | None, now: datetime | None = None
) -> ProviderBudget:
    """The run's first budget for `endpoint`: an earlier run's lesson, else one process's.
    `now` (budget-bracket-v1): the budget brackets, and holds at a lesson while remembered."""
    bracket = now is not None
    if learned_limit:
        return ProviderBudget(
            endpoint=endpoint,
            models=models,
            limit=learned_limit,
            start=learned_limit,
            learned=True,
            bracket=bracket,
            pushback_level=learned_limit + 1 if bracket else None,
            pushback_at=now,
        )
    return ProviderBudget(endpoint=endpoint, models=models, bracket=bracket)


def split(total: int, demands: dict[str, int]) -> dict[str, int]:
    """`total` over the workers by demand: nobody gets more than it needs, the rest is shared
    evenly, everyone gets at least one (so the sum exceeds `total` only when the workers
    outnumber it)."""
    shares = {worker: 0 for worker in demands}
    left, open_ = max(total, 0), sorted(demands, key=lambda w: (demands[w], w))
    while open_ and left > 0:
        even = left // len(open_)
        smallest = open_[0]
        if even == 0:  # fewer connections than workers left: one each, in order
            for worker in open_[:left]:
                shares[worker] += 1
            left = 0
            break
        if demands[smallest] - shares[smallest] <= even:
            give = max(demands[smallest] - shares[smallest], 0)
            shares[smallest] += give
            left -= give
            open_.pop(0)
            continue
        for worker in open_:
            shares[worker] += even
        left -= even * len(open_)
    return {worker: max(1, share) for worker, share in shares.items()}


def spawn_shares(
    budget: ProviderBudget, live: dict[str, int], new: dict[str, int], held: int = 0
) -> tuple[dict[str, int], dict[str, ConnectionShare]]:
    """Ceilings for the live workers and bounds for the new ones (`live`/`new`: worker id ->
    demand) once the new ones start: the live keep what they have unless the split says less.
    `held`: connections already given elsewhere (a running scan's)."""
    ceilings = split(budget.limit - held, {**live, **new})
    starts = split(max(1, budget.start - held), {**live, **new})
    kept = {w: min(budget.shares.get(w, ceilings[w]), ceilings[w]) for w in live}
    bounds = {
        w: ConnectionShare(start=min(starts[w], ceilings[w]), ceiling=ceilings[w]) for w in new
    }
    return kept, bounds


def _since(moment: datetime | None, now: datetime | None) -> float | None:
    if now is None or moment is None:
        return None
    return (now - moment).total_seconds()


def _remembered_level(budget: ProviderBudget, now: datetime | None) -> int | None:
    """The lowest level that saw pushback, while it is remembered (PUSHBACK_MEMORY_S)."""
    since = _since(budget.pushback_at if budget.bracket else budget.lowered_at, now)
    return budget.pushback_level if since is not None and since < PUSHBACK_MEMORY_S else None


def _clean_below(budget: ProviderBudget, previous: int) -> int | None:
    """Bracket: the highest level that ran saturated and clean, if it is under `previous`."""
    clean = budget.clean_level if budget.bracket else None
    return clean if clean is not None and clean < previous else None


def adjust(
    budget: ProviderBudget, workers: dict[str, WorkerConnections], now: datetime | None = None
) -> BudgetMove:
    """Learn from one tend's windows of the endpoint's workers. `now` (budget-episode-v1):
    what they report within EPISODE_S of a lowering belongs to its episode."""
    previous = budget.limit
    unchanged = BudgetMove(kind="none", limit=previous, previous=previous)
    if not workers:
        return unchanged
    floor = len(workers)
    since = _since(budget.lowered_at, now)
    if since is not None and since < EPISODE_S:
        return unchanged.model_copy(update={"reason": "the episode that lowered it"})
    if any(w.pushback for w in workers.values()):
        live = [w.live_limit for w in workers.values() if w.live_limit is not None]
        fell_to = sum(live) if len(live) == len(workers) else None
        # At most a tenth a tend: the controllers have just cut themselves (x0.8 each, in
        # bursts), so their sum undershoots what the provider allows; pushback is an event,
        # so repeated pushback soon brings the budget down further.
        cut = int(previous * MOST_CUT_PER_TEND)
        if fell_to is not None and cut <= fell_to < previous:
            lowered, why = fell_to, f"rate-limit pushback; the controllers fell to {fell_to}"
        else:
            lowered, why = cut, "rate-limit pushback"
        clean = _clean_below(budget, previous)
        if clean is not None and clean > lowered:
            lowered, why = clean, f"rate-limit pushback; back to {clean}, which ran clean"
        lowered = max(floor, min(previous - 1, lowered))
        if lowered >= previous:
            return unchanged.model_copy(update={"reason": why})
        return BudgetMove(kind="lowered", limit=lowered, previous=previous, reason=why)
    wanting_more = all(
        w.live_limit is not None
        and w.live_limit >= AT_CEILING * budget.shares.get(worker, previous)
        and w.in_flight >= w.live_limit
        and w.demand > budget.shares.get(worker, previous)
        for worker, w in workers.items()
    )
    if wanting_more:
        clean_at = previous if budget.bracket else None
        raised = previous + max(2, math.ceil(previous * GROWTH))
        level = _remembered_level(budget, now)
        if level is not None:
            raised = min(raised, level - 1)  # short of what pushed back
        if raised <= previous:
            return unchanged.model_copy(update={"clean_at": clean_at})
        return BudgetMove(
            kind="raised",
            limit=raised,
            previous=previous,
            reason="every controller at its ceiling, saturated and clean",
            clean_at=clean_at,
        )
    return unchanged


def scan_headroom(budget: ProviderBudget, now: datetime) -> int:
    """How far above the budget a scan holding all of it may probe: to just under the lowest
    level that saw pushback, while that is remembered; none when none did."""
    level = _remembered_level(budget, now)
    return 0 if level is None else max(0, level - 1 - budget.limit)


def apply_move(budget: ProviderBudget, move: BudgetMove, now: datetime | None = None) -> None:
    """The budget after `move` (a lowered budget is learned; new workers start from it).
    With `now` (budget-episode-v1) a lowering starts an episode and marks the level that saw
    pushback."""
    if move.clean_at is not None:
        budget.clean_level = max(budget.clean_level or 0, move.clean_at)
    if move.kind == "lowered":
        budget.pushbacks += 1
        budget.learned = True
        if now is not None:
            level = _remembered_level(budget, now)
            budget.pushback_level = min(level or move.previous, move.previous)
            budget.lowered_at = now
            if budget.bracket:
                budget.pushback_at = now
        if budget.clean_level is not None and budget.clean_level >= move.previous:
            budget.clean_level = None  # the provider tightened: that level is clean no more
    if move.kind != "none":
        budget.limit = move.limit
        budget.start = min(budget.start, move.limit) if not budget.learned else move.limit


def starting_setpoint(
    budget: ProviderBudget, rule: int, tasks_sharing: int, headroom: bool = False
) -> int:
    """A task's first sample concurrency: the rule's, but within a learned budget's share, or
    (`headroom`) a quarter over it, so a sample waits for each connection as it frees."""
    if not budget.learned or tasks_sharing <= 0:
        return rule
    share = budget.limit // tasks_sharing
    if headroom:
        share += max(SETPOINT_HEADROOM_MIN, math.ceil(share * SETPOINT_HEADROOM))
    return max(1, min(rule, share))
