"""The provider simulator's hosted-API shapes: per-minute buckets refilled continuously with a
burst, the rate-limit headers of both styles on answers and 429s, and variable latency."""

from __future__ import annotations

import random
import statistics
from datetime import UTC, datetime

from starlette.testclient import TestClient

from steward.worker.provider_limits import (
    Buckets,
    TokenBucket,
    duration_text,
    latency,
    rate_limit_headers,
    retry_headers,
)
from steward.worker.provider_simulator import Limits, Simulator

WALL = datetime(2026, 12, 5, 12, 0, 0, tzinfo=UTC)


def test_a_bucket_holds_its_burst_and_refills_continuously():
    bucket = TokenBucket(per_minute=600, burst_s=2)  # 10/s, holds 20
    assert bucket.capacity == 20
    assert all(bucket.take(1, now=0.0) for _ in range(20))
    assert not bucket.take(1, now=0.0)
    assert bucket.wait_for(1, now=0.0) == 0.1
    assert not bucket.take(1, now=0.05)
    assert bucket.take(1, now=0.1)
    assert bucket.remaining(now=0.1) == 0
    assert bucket.remaining(now=100.0) == 20  # never more than its burst
    assert bucket.until_full(now=100.0) == 0


def test_a_bucket_admits_its_rate_over_a_long_window():
    bucket = TokenBucket(per_minute=2400, burst_s=5)
    admitted = sum(bucket.take(1, now=t / 1000) for t in range(0, 60_000, 5))  # 200 tries/s
    assert 2400 <= admitted <= 2400 + bucket.capacity + 1


def test_requests_and_tokens_both_bind_and_a_refusal_takes_nothing():
    buckets = Buckets(TokenBucket(60, burst_s=60), TokenBucket(1000, burst_s=60))
    assert buckets.admit(400, now=0) is None
    assert buckets.admit(400, now=0) is None
    assert buckets.admit(400, now=0) == "tokens per minute"
    assert buckets.requests.remaining(0) == 58  # the refused request took no request
    assert round(buckets.retry_after(400, now=0), 1) == 12.0  # 200 tokens short at 16.7/s
    only_requests = Buckets(requests=TokenBucket(60, burst_s=1))
    assert only_requests.admit(10**6, now=0) is None
    assert only_requests.admit(1, now=0) == "requests per minute"


def test_resets_are_written_as_openai_writes_them():
    assert duration_text(0.02) == "20ms"
    assert duration_text(1) == "1s"
    assert duration_text(1.5) == "1.5s"
    assert duration_text(360) == "6m0s"
    assert duration_text(61.25) == "1m1.25s"


def test_openai_and_anthropic_headers():
    buckets = Buckets(TokenBucket(2400, burst_s=60), TokenBucket(160_000, burst_s=60))
    buckets.admit(1000, now=0)
    openai = rate_limit_headers("openai", buckets, 0, WALL)
    assert openai == {
        "x-ratelimit-limit-requests": "2400",
        "x-ratelimit-remaining-requests": "2399",
        "x-ratelimit-reset-requests": "25ms",
        "x-ratelimit-limit-tokens": "160000",
        "x-ratelimit-remaining-tokens": "159000",
        "x-ratelimit-reset-tokens": "375ms",
    }
    anthropic = rate_limit_headers("anthropic", buckets, 0, WALL)
    assert anthropic["anthropic-ratelimit-requests-limit"] == "2400"
    assert anthropic["anthropic-ratelimit-tokens-remaining"] == "159000"
    assert anthropic["anthropic-ratelimit-requests-reset"] == "2026-12-05T12:00:01Z"
    assert rate_limit_headers("none", buckets, 0, WALL) == {}
    assert retry_headers("openai", 0.25) == {"retry-after": "1", "retry-after-ms": "250"}
    assert retry_headers("anthropic", 2.5) == {"retry-after": "3"}


def test_lognormal_latency_centres_on_its_mean_and_tokens_latency_follows_the_output():
    rng = random.Random(7)
    draws = [latency(2.0, 0, "lognormal", sigma=0.5, draw=rng) for _ in range(20_000)]
    assert 1.9 < statistics.mean(draws) < 2.1
    assert statistics.pstdev(draws) > 0.8  # it varies, not a constant
    assert latency(2.0, 0, "tokens", tokens=300, tokens_mean=200) == 3.0


def _chat(client: TestClient):
    return client.post(
        "/v1/chat/completions",
        json={"model": "echo", "messages": [{"role": "user", "content": "Reply with: x"}]},
    )


def test_the_simulator_sends_headers_on_answers_and_a_retry_time_on_its_429():
    limits = Limits(latency=0, jitter=0, rpm=120, burst=1, headers="openai", concurrency=0)
    client = TestClient(Simulator(limits).app())
    first, second, refused = _chat(client), _chat(client), _chat(client)
    assert first.status_code == second.status_code == 200
    assert first.headers["x-ratelimit-limit-requests"] == "120"
    assert first.headers["x-ratelimit-remaining-requests"] == "1"
    assert second.headers["x-ratelimit-remaining-requests"] == "0"
    assert refused.status_code == 429
    assert 0 < int(refused.headers["retry-after-ms"]) <= 500
    assert "x-ratelimit-reset-requests" in refused.headers
    stats = client.get("/admin/stats").json()
    assert (stats["requests"], stats["served"], stats["rate_limited"]) == (3, 2, 1)


def test_the_simulator_counts_output_tokens_against_its_tpm_and_retunes_live():
    limits = Limits(latency=0, jitter=0, tpm=6000, burst=6, output_tokens=200, concurrency=0)
    client = TestClient(Simulator(limits).app())
    answer = _chat(client)
    assert answer.json()["usage"]["completion_tokens"] == 200
    assert "x-ratelimit-limit-tokens" not in answer.headers  # headers: none
    assert [_chat(client).status_code for _ in range(2)] == [200, 429]  # 600-token burst, 203 each
    tuned = client.post("/admin/config", json={"headers": "anthropic", "tpm": 60_000})
    assert tuned.status_code == 200
    assert _chat(client).headers["anthropic-ratelimit-tokens-limit"] == "60000"
    bad = client.post("/admin/config", json={"headers": "azure"})
    assert bad.status_code == 400 and "headers must be one of" in bad.json()["error"]


def test_the_simulator_reports_how_long_its_answers_were_in_flight():
    limits = Limits(latency=0.05, jitter=0, concurrency=4)
    client = TestClient(Simulator(limits).app())
    assert [_chat(client).status_code for _ in range(3)] == [200, 200, 200]
    stats = client.get("/admin/stats").json()
    # Each answer slept 0.05 s in flight: the latency it served at is at least that, and it
    # is what bench.ramp divides a concurrency cap by.
    assert 0.05 <= stats["busy_s"] / stats["served"] < 0.5
