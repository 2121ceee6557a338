"""budget-bracket-v1 as pure policy (workflows/policy/provider_budget.py, "Brackets"): a budget
seeded from an earlier run's lesson holds there instead of probing into 429s, pushback falls
back to the level that ran clean instead of a tenth down, a bracketing budget settles at a
provider's concurrency cap, and one whose provider tightens still comes down to the new limit."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from steward.workflows.policy import provider_budget
from steward.workflows.policy.provider_budget import ProviderBudget, WorkerConnections

T0 = datetime(2026, 12, 5, tzinfo=UTC)
TEND_S = 20.0  # past EPISODE_S: every tend may move the budget
WORKERS = "abcd"


def _tend(budget: ProviderBudget, cap: int, at: datetime) -> provider_budget.BudgetMove:
    """One tend against a provider that takes `cap` requests in flight: over it, every worker
    saw 429s and its controller cut itself (Inspect's x0.8); within it, every controller stands
    at its ceiling with more samples waiting."""
    shares = provider_budget.split(budget.limit, {w: 500 for w in WORKERS})
    budget.shares = shares
    over = budget.limit > cap
    seen = {
        w: WorkerConnections(
            demand=500,
            live_limit=int(share * 0.8) if over else share,
            in_flight=share,
            pushback=over,
        )
        for w, share in shares.items()
    }
    move = provider_budget.adjust(budget, seen, at)
    provider_budget.apply_move(budget, move, at)
    return move


def _run(budget: ProviderBudget, cap: int, tends: int, start: datetime = T0) -> list[int]:
    """The budget after each of `tends` tends."""
    limits = []
    for i in range(tends):
        _tend(budget, cap, start + timedelta(seconds=TEND_S * i))
        limits.append(budget.limit)
    return limits


def test_a_budget_seeded_from_a_lesson_holds_there_while_it_is_remembered():
    budget = provider_budget.seeded("e", ["m"], 80, T0)
    assert (budget.limit, budget.pushback_level, budget.bracket) == (80, 81, True)
    remembered = int(provider_budget.PUSHBACK_MEMORY_S // TEND_S) - 1
    assert set(_run(budget, cap=80, tends=remembered)) == {80}
    assert budget.pushbacks == 0  # no 429s sought
    lapsed = T0 + timedelta(seconds=provider_budget.PUSHBACK_MEMORY_S + 1)
    assert _tend(budget, cap=200, at=lapsed).kind == "raised"  # then it may look higher
    # Seeded before the flag: it raises past the lesson at the first saturated tend.
    old = provider_budget.seeded("e", ["m"], 80)
    assert not old.bracket and _run(old, cap=80, tends=1) == [88]


def test_pushback_falls_back_to_the_level_that_ran_clean_not_a_tenth_down():
    budget = provider_budget.seeded("e", ["m"], None, T0)
    budget.limit, budget.clean_level = 80, 80
    budget.shares = {w: 20 for w in WORKERS}
    saturated = {w: WorkerConnections(demand=500, live_limit=20, in_flight=20) for w in WORKERS}
    raised = provider_budget.adjust(budget, saturated, T0)
    assert (raised.kind, raised.limit, raised.clean_at) == ("raised", 88, 80)  # nothing known
    provider_budget.apply_move(budget, raised, T0)
    burst = {w: WorkerConnections(demand=500, live_limit=17, pushback=True) for w in WORKERS}
    lowered = provider_budget.adjust(budget, burst, T0 + timedelta(seconds=TEND_S))
    assert (lowered.kind, lowered.limit) == ("lowered", 80)  # not 79 (a tenth) or 68 (fell to)
    assert "ran clean" in lowered.reason
    provider_budget.apply_move(budget, lowered, T0 + timedelta(seconds=TEND_S))
    assert (budget.pushback_level, budget.clean_level) == (88, 80)


def test_a_bracketing_budget_settles_at_the_cap_and_stays_without_probing_past_it():
    budget = provider_budget.seeded("e", ["m"], None, T0)
    limits = _run(budget, cap=80, tends=12)
    assert limits[-1] == 80, limits
    settled = limits.index(80)
    assert all(limit == 80 for limit in limits[settled:]), limits
    assert budget.clean_level == 80


def test_a_provider_that_tightens_brings_a_bracketing_budget_down_to_its_new_limit():
    budget = provider_budget.seeded("e", ["m"], None, T0)
    _run(budget, cap=80, tends=12)
    later = T0 + timedelta(seconds=provider_budget.PUSHBACK_MEMORY_S * 2)
    limits = _run(budget, cap=60, tends=14, start=later)
    assert limits[-1] == 60, limits
    assert budget.clean_level == 60  # the old clean level (80) was dropped when 80 pushed back
