"""Model requests paced inside a provider's rate limits from its headers
(activities/capacity/rate_pacing.py), against the provider simulator with the real OpenAI client
sending, in processes of their own as Steward's task workers are: two processes share one
schedule through the state directory and together stay inside the limit the headers state,
where the same load without it collects 429s; the state remembers the limit for the next run."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from steward.activities.capacity.rate_pacing import SharedSchedule, budgets
from steward.activities.processes.runner_launch import PACING_KIND_ENV, RATE_LIMITS_ENV
from steward.worker.provider_simulator import spawn
from steward.workflows.policy.rate_limits import interval

# 30 requests at once from each of two processes, after one request that learns the limit.
CLIENT = textwrap.dedent(
    """
    import asyncio, sys
    from steward.activities.capacity import rate_pacing
    rate_pacing.install()
    from openai import AsyncOpenAI, RateLimitError

    PROMPT = sys.argv[2] if len(sys.argv) > 2 else "Reply with: x"

    async def main():
        client = AsyncOpenAI(base_url=sys.argv[1], api_key="k", max_retries=0)
        async def ask():
            try:
                await client.chat.completions.create(
                    model="echo", messages=[{"role": "user", "content": PROMPT}]
                )
            except RateLimitError:
                pass
        await ask()
        await asyncio.gather(*(ask() for _ in range(30)))

    asyncio.run(main())
    """
)


@contextmanager
def _simulator(tmp_path: Path, **limits: float) -> Iterator[str]:
    """A simulator without a concurrency cap, with OpenAI-style headers and these limits."""
    process, url = spawn(
        tmp_path / "sim.port", concurrency=0, headers="openai", jitter=0.0, **limits
    )
    try:
        yield url
    finally:
        process.kill()
        process.wait()


@pytest.fixture
def provider(tmp_path):
    # 600 requests a minute (10/s), a bucket of 2 s (20 requests).
    with _simulator(tmp_path, rpm=600, burst=2, latency=0.05) as url:
        yield url


def _clients(url: str, env: dict[str, str]) -> dict:
    processes = [
        subprocess.Popen([sys.executable, "-c", CLIENT, f"{url}/v1"], env=env) for _ in range(2)
    ]
    assert [p.wait(timeout=120) for p in processes] == [0, 0]
    return httpx.get(f"{url}/admin/stats").json()


def test_paced_processes_stay_inside_the_limit_and_unpaced_ones_do_not(provider, tmp_path):
    env = {k: v for k, v in os.environ.items() if k != RATE_LIMITS_ENV}
    unpaced = _clients(provider, env)
    assert unpaced["rate_limited"] > 10  # 62 requests into a bucket of 20

    httpx.post(f"{provider}/admin/config", json={"rpm": 600})  # a fresh, full bucket
    before = unpaced["rate_limited"]
    state = tmp_path / "rate-limits"
    paced = _clients(provider, {**env, RATE_LIMITS_ENV: str(state)})
    refused = paced["rate_limited"] - before
    assert refused <= 1, paced  # the two warm-up requests may race the learning
    assert paced["served"] - unpaced["served"] == 62 - refused
    [budget] = budgets(Path(state))
    assert (budget["unit"], budget["value"], budget["style"]) == ("requests/min", 600, "openai")
    assert budget["endpoint"].endswith("/echo")


def test_the_scans_long_prompts_keep_their_own_tokens_average_and_leave_the_evals(tmp_path):
    # Tokens bind for both kinds (a short request's ~4 tokens cost more of 120,000 a minute than
    # a request of 60,000 a minute does); the burst (10 s: 20,000 tokens) holds the whole load.
    with _simulator(tmp_path, rpm=60000, tpm=120_000, latency=0.01) as url:
        state = tmp_path / "rate-limits"
        env = {**os.environ, RATE_LIMITS_ENV: str(state)}
        env.pop(PACING_KIND_ENV, None)
        transcript = " ".join(["word"] * 400)  # a scan's prompt: a whole transcript
        runs = [
            subprocess.Popen([sys.executable, "-c", CLIENT, f"{url}/v1"], env=env),
            subprocess.Popen(
                [sys.executable, "-c", CLIENT, f"{url}/v1", transcript],
                env={**env, PACING_KIND_ENV: "scan"},
            ),
        ]
        assert [run.wait(timeout=120) for run in runs] == [0, 0]
        stats = httpx.get(f"{url}/admin/stats").json()
    assert stats["served"] == 62 and stats["rate_limited"] == 0, stats
    with SharedSchedule(state).state(budgets(state)[0]["endpoint"]) as pace:
        scans = pace.other_kinds["scan"]
        assert (pace.token_answers, scans.answers) == (31, 31)
        # a short prompt and its answer, not the transcripts
        assert pace.tokens_per_request < 50, pace.tokens_per_request
        assert scans.per_request > 400, scans.per_request
        # Each kind's request takes its own tokens of the schedule.
        assert interval(pace, "scan") / interval(pace) == pytest.approx(
            scans.per_request / pace.tokens_per_request
        )
