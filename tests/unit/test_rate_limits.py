"""Rate-limit headers of both styles read into limits in the provider's units, and the fleet's
pacing against them (workflows/policy/rate_limits.py). The header sets are as OpenAI and
Anthropic document and send them."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from steward.workflows.policy.rate_limits import (
    BURST_S,
    PACE_SHARE,
    SCAN_KIND,
    SETTLE_ANSWERS,
    PaceState,
    binding_unit,
    budget_view,
    interval,
    observe,
    parse_duration,
    parse_retry_after,
    prompt_tokens_of,
    read_headers,
    schedule,
    settled,
)

NOW = datetime(2026, 12, 5, 15, 40, 0, tzinfo=UTC)

# An OpenAI chat completion's answer (tier 1, gpt-4o-mini-like limits).
OPENAI_ANSWER = {
    "content-type": "application/json",
    "openai-processing-ms": "412",
    "x-ratelimit-limit-requests": "2400",
    "x-ratelimit-limit-tokens": "160000",
    "x-ratelimit-remaining-requests": "2399",
    "x-ratelimit-remaining-tokens": "159832",
    "x-ratelimit-reset-requests": "25ms",
    "x-ratelimit-reset-tokens": "63ms",
}
# ... and its 429 once the minute's tokens ran out.
OPENAI_429 = {
    "x-ratelimit-limit-requests": "10000",
    "x-ratelimit-limit-tokens": "2000000",
    "x-ratelimit-remaining-requests": "9817",
    "x-ratelimit-remaining-tokens": "0",
    "x-ratelimit-reset-requests": "1.098s",
    "x-ratelimit-reset-tokens": "6m0s",
    "retry-after": "1",
    "retry-after-ms": "1200",
}
# An Anthropic Messages answer and its 429 (reset as RFC 3339, retry-after in seconds).
ANTHROPIC_ANSWER = {
    "anthropic-ratelimit-requests-limit": "4000",
    "anthropic-ratelimit-requests-remaining": "3999",
    "anthropic-ratelimit-requests-reset": "2026-12-05T15:40:01Z",
    "anthropic-ratelimit-tokens-limit": "480000",
    "anthropic-ratelimit-tokens-remaining": "480000",
    "anthropic-ratelimit-tokens-reset": "2026-12-05T15:40:00Z",
    "anthropic-ratelimit-input-tokens-limit": "400000",
    "request-id": "req_018EeWyXxfu5pfWkrYcMdjWG",
}
ANTHROPIC_429 = {
    "anthropic-ratelimit-requests-limit": "50",
    "anthropic-ratelimit-requests-remaining": "0",
    "anthropic-ratelimit-requests-reset": "2026-12-05T15:40:12Z",
    "retry-after": "12",
}


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("20ms", 0.02), ("1s", 1.0), ("1.098s", 1.098), ("6m0s", 360.0), ("1h2m3.5s", 3723.5)],
)
def test_go_durations(text, seconds):
    assert parse_duration(text) == pytest.approx(seconds)


def test_a_duration_that_is_not_one_is_none():
    assert parse_duration("soon") is None
    assert parse_duration("6m0sx") is None


def test_openai_answer_and_429():
    answer = read_headers(OPENAI_ANSWER, NOW)
    assert answer.style == "openai"
    assert answer.units["requests"].limit == 2400
    assert answer.units["requests"].remaining == 2399
    assert answer.units["requests"].reset_s == pytest.approx(0.025)
    assert answer.units["tokens"].remaining == 159832
    assert answer.retry_after_s is None
    refused = read_headers(OPENAI_429, NOW)
    assert refused.units["tokens"].reset_s == 360.0
    assert refused.retry_after_s == 1.2  # retry-after-ms wins over retry-after


def test_anthropic_answer_and_429():
    answer = read_headers(ANTHROPIC_ANSWER, NOW)
    assert answer.style == "anthropic"
    assert (answer.units["requests"].limit, answer.units["requests"].reset_s) == (4000, 1.0)
    assert answer.units["tokens"].remaining == 480000
    refused = read_headers(ANTHROPIC_429, NOW)
    assert refused.units["requests"].remaining == 0
    assert refused.units["requests"].reset_s == 12.0
    assert refused.retry_after_s == 12.0


def test_a_refusal_with_only_retry_after_and_an_answer_with_nothing():
    assert read_headers({"Retry-After": "3"}, NOW).style == "retry-after"
    dated = parse_retry_after({"retry-after": "Sat, 05 Dec 2026 15:40:05 GMT"}, NOW)
    assert dated == 5.0
    assert read_headers({"content-type": "application/json"}, NOW) is None


def test_nothing_is_paced_until_a_limit_is_known():
    state = PaceState(endpoint="e")
    assert [schedule(state, 100.0) for _ in range(50)] == [100.0] * 50


def test_the_fleet_is_paced_at_its_share_of_the_request_limit_after_a_burst():
    state = PaceState(endpoint="e")
    observe(state, read_headers(OPENAI_ANSWER, NOW), now=0.0, tokens=None)
    assert interval(state) == pytest.approx(60 / (2400 * PACE_SHARE))
    sends = [schedule(state, 1000.0) for _ in range(400)]
    burst = sum(1 for t in sends if t == 1000.0)
    assert burst == pytest.approx(BURST_S / interval(state), abs=1)
    # Over the 400 requests the fleet asked for at once: PACE_SHARE of 40/s, no faster.
    rate = (len(sends) - burst) / (sends[-1] - 1000.0)
    assert rate == pytest.approx(40 * PACE_SHARE, rel=0.01)
    assert sends == sorted(sends)


def test_tokens_bind_when_requests_are_large():
    state = PaceState(endpoint="e")
    headers = {**OPENAI_ANSWER, "x-ratelimit-limit-tokens": "60000"}
    observe(state, read_headers(headers, NOW), now=0.0, tokens=300)
    assert binding_unit(state) == "tokens"  # 200 requests/min of 300 tokens, under 2400
    assert interval(state) == pytest.approx(60 * 300 / (60000 * PACE_SHARE))
    for _ in range(200):
        observe(state, read_headers(headers, NOW), now=0.0, tokens=20)
    assert state.tokens_per_request < 25  # the average follows the answers
    view = budget_view(state)
    # 2400 requests of 20 tokens are 48,000 tokens a minute: now requests bind
    assert (view["unit"], view["value"]) == ("requests/min", 2400)


def test_a_tokens_limit_is_settled_only_once_enough_answers_told_the_tokens_a_request_uses():
    # Until then the schedule knows only the requests limit: a fleet lifted to its connection
    # ceiling at that rate overran the tokens limit (the bench's tokens shape, 1.7 % 429s).
    state = PaceState(endpoint="e")
    observe(state, read_headers(OPENAI_ANSWER, NOW), now=0.0, tokens=None)  # a 429's headers
    assert interval(state) is not None and not settled(state)
    answers = [100, 300] * SETTLE_ANSWERS
    for i, tokens in enumerate(answers[: SETTLE_ANSWERS - 1]):
        observe(state, read_headers(OPENAI_ANSWER, NOW), now=float(i), tokens=tokens)
        assert not settled(state)
    observe(state, read_headers(OPENAI_ANSWER, NOW), now=9.0, tokens=300)
    assert settled(state)
    # The first answers' plain mean, not the first answer's tokens nudged
    assert state.tokens_per_request == pytest.approx(200.0)
    requests_only = PaceState(endpoint="e")
    observe(
        requests_only,
        read_headers({"x-ratelimit-limit-requests": "2400"}, NOW),
        now=0.0,
        tokens=None,
    )
    assert settled(requests_only)  # nothing else to learn
    assert not settled(PaceState(endpoint="e"))  # nothing known: not paced at all


def test_the_scans_answers_keep_their_own_tokens_average_and_take_their_own_share():
    # The scan's prompts are whole transcripts. Counted into the eval's average, they pulled the
    # next run's first requests down to 218/289 of the tokens limit (the bench's tokens shape).
    state = PaceState(endpoint="e")
    headers = {**OPENAI_ANSWER, "x-ratelimit-limit-tokens": "60000"}
    for _ in range(SETTLE_ANSWERS):
        observe(state, read_headers(headers, NOW), now=0.0, tokens=200)
    eval_gap = interval(state)
    # Until the scan's own average is known: its prompt's tokens, or the eval's if more.
    assert interval(state, SCAN_KIND) == eval_gap
    assert interval(state, SCAN_KIND, prompt_tokens=100) == eval_gap
    assert interval(state, SCAN_KIND, prompt_tokens=prompt_tokens_of(4000)) == pytest.approx(
        5 * eval_gap
    )
    for _ in range(5):
        observe(state, read_headers(headers, NOW), now=1.0, tokens=2000, kind=SCAN_KIND)
    assert (state.tokens_per_request, state.token_answers) == (200.0, SETTLE_ANSWERS)
    assert budget_view(state)["tokens_per_request"] == 200.0
    assert interval(state) == eval_gap
    assert interval(state, SCAN_KIND) == pytest.approx(10 * eval_gap)
    assert interval(state, SCAN_KIND, prompt_tokens=1) == pytest.approx(10 * eval_gap)
    # A scan request moves the shared schedule on by its own tokens, an eval request by its own.
    state.due = 0.0
    schedule(state, 100.0, SCAN_KIND)  # the first after a pause goes in the burst
    after_scan = state.due
    schedule(state, 100.0)
    assert state.due - after_scan == pytest.approx(eval_gap)
    assert after_scan - (100.0 - BURST_S) == pytest.approx(10 * eval_gap)


def test_an_account_emptier_than_assumed_holds_the_schedule_and_a_429_too():
    state = PaceState(endpoint="e")
    observe(state, read_headers(ANTHROPIC_ANSWER, NOW), now=0.0, tokens=None)
    empty = {**ANTHROPIC_ANSWER, "anthropic-ratelimit-requests-remaining": "0"}
    observe(state, read_headers(empty, NOW), now=10.0, tokens=None)
    # 2% of 4000 is 80 requests short: 1.2 s to refill at 4000/min
    assert state.held_until == pytest.approx(11.2)
    assert schedule(state, 10.5) >= 11.2
    observe(state, read_headers(ANTHROPIC_429, NOW), now=20.0, tokens=None)
    assert state.held_until == 32.0 and state.pushbacks == 1
    assert state.limits == {"requests": 50, "tokens": 480000}


def test_a_429_without_headers_paces_and_holds_nothing():
    # A provider that states no limits may refuse for concurrency: the connection budget's
    # pushback learning handles that, as before.
    state = PaceState(endpoint="e")
    observe(state, read_headers({"retry-after": "2"}, NOW), now=5.0, tokens=None)
    assert state.pushbacks == 1
    assert [schedule(state, 5.0) for _ in range(3)] == [5.0, 5.0, 5.0]
    assert budget_view(state)["unit"] is None


def test_the_run_keeps_what_its_last_look_saw_and_status_says_it_in_the_providers_units():
    from steward.workflows.contracts import Observation, RunState
    from steward.workflows.policy import run_policy
    from steward.workflows.policy.rate_limits import budget
    from steward.workflows.views.status_view import connection_lines

    state = PaceState(endpoint="http://127.0.0.1:8000/echo")
    observe(state, read_headers(OPENAI_ANSWER, NOW), now=0.0, tokens=50)
    run = RunState(phase="running")
    run_policy.apply_observation(run, Observation(rate_limits=[budget(state)]), stall_after=3)
    assert connection_lines(run) == [
        "rate limit http://127.0.0.1:8000/echo: 2400 requests/min (openai-style headers; paced "
        "at 99%, 50 tokens a request)"
    ]
    run_policy.apply_observation(run, Observation(), stall_after=3)  # a look that saw none
    assert run.rate_limits[0].value == 2400
