"""The shapes of a hosted API's limits, for the provider simulator (worker/provider_simulator.py):
token buckets refilled continuously (requests per minute, tokens per minute, each with a burst),
the rate-limit headers OpenAI-style and Anthropic-style APIs send on every answer and on a 429,
and how long an answer takes (uniform, lognormal around a mean, or in proportion to its output).

Pure apart from the clock and the random draws it is handed, so the unit tests drive it with
their own `now`.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

HEADER_STYLES = ("none", "openai", "anthropic")
LATENCY_SHAPES = ("uniform", "lognormal", "tokens")


@dataclass
class TokenBucket:
    """`per_minute` units refilled continuously; it holds `burst_s` seconds of refill at most
    (60: the whole minute's limit at once, as OpenAI's buckets do). Starts full."""

    per_minute: float
    burst_s: float = 10.0
    level: float = 0.0
    updated: float | None = None  # None: full at the first look

    @property
    def rate(self) -> float:
        return self.per_minute / 60.0

    @property
    def capacity(self) -> float:
        return max(1.0, self.rate * self.burst_s)

    def refill(self, now: float) -> None:
        if self.updated is None:
            self.level, self.updated = self.capacity, now
            return
        self.level = min(self.capacity, self.level + (now - self.updated) * self.rate)
        self.updated = now

    def take(self, amount: float, now: float) -> bool:
        """Take `amount` if the bucket holds it; False (nothing taken) if not."""
        self.refill(now)
        if self.level + 1e-9 < amount:
            return False
        self.level -= amount
        return True

    def wait_for(self, amount: float, now: float) -> float:
        """Seconds until the bucket holds `amount` (0: it does)."""
        self.refill(now)
        short = min(amount, self.capacity) - self.level
        return max(0.0, short / self.rate) if self.rate > 0 else math.inf

    def until_full(self, now: float) -> float:
        self.refill(now)
        return (self.capacity - self.level) / self.rate if self.rate > 0 else 0.0

    def remaining(self, now: float) -> int:
        self.refill(now)
        return max(0, int(self.level))


@dataclass
class Buckets:
    """A provider's per-minute limits (None: that limit is off)."""

    requests: TokenBucket | None = None
    tokens: TokenBucket | None = None

    def admit(self, tokens: int, now: float) -> str | None:
        """Take one request and `tokens` tokens, or name the limit that refuses (taking nothing)."""
        if self.requests is not None and self.requests.wait_for(1, now) > 0:
            return "requests per minute"
        if self.tokens is not None and self.tokens.wait_for(tokens, now) > 0:
            return "tokens per minute"
        if self.requests is not None:
            self.requests.take(1, now)
        if self.tokens is not None:
            self.tokens.take(min(tokens, self.tokens.capacity), now)
        return None

    def retry_after(self, tokens: int, now: float) -> float:
        """Seconds until a request of `tokens` tokens would be admitted."""
        waits = [0.0]
        if self.requests is not None:
            waits.append(self.requests.wait_for(1, now))
        if self.tokens is not None:
            waits.append(self.tokens.wait_for(tokens, now))
        return max(waits)


def duration_text(seconds: float) -> str:
    """A reset as OpenAI writes it (Go's duration format): `20ms`, `1s`, `1.5s`, `6m0s`."""
    if seconds < 1:
        return f"{max(0, round(seconds * 1000))}ms"
    minutes, rest = divmod(seconds, 60)
    rest_text = f"{rest:.3f}".rstrip("0").rstrip(".") + "s"
    return f"{int(minutes)}m{rest_text}" if minutes >= 1 else rest_text


def rate_limit_headers(style: str, buckets: Buckets, now: float, wall: datetime) -> dict[str, str]:
    """The headers an answer carries about `buckets` after it, in `style` ('none': none)."""
    headers: dict[str, str] = {}
    if style == "none":
        return headers
    for unit, bucket in (("requests", buckets.requests), ("tokens", buckets.tokens)):
        if bucket is None:
            continue
        limit, left, reset = int(bucket.per_minute), bucket.remaining(now), bucket.until_full(now)
        if style == "openai":
            headers[f"x-ratelimit-limit-{unit}"] = str(limit)
            headers[f"x-ratelimit-remaining-{unit}"] = str(left)
            headers[f"x-ratelimit-reset-{unit}"] = duration_text(reset)
        else:
            at = (wall + timedelta(seconds=math.ceil(reset))).replace(microsecond=0)
            headers[f"anthropic-ratelimit-{unit}-limit"] = str(limit)
            headers[f"anthropic-ratelimit-{unit}-remaining"] = str(left)
            headers[f"anthropic-ratelimit-{unit}-reset"] = at.astimezone(UTC).strftime(
                "%Y-%m-%dT%H:%M:%SZ"
            )
    return headers


def retry_headers(style: str, seconds: float) -> dict[str, str]:
    """What a 429 (or 529) says about when to come back."""
    headers = {"retry-after": str(max(1, math.ceil(seconds)))}
    if style == "openai":
        headers["retry-after-ms"] = str(max(1, round(seconds * 1000)))
    return headers


def output_tokens(mean: int, shape: str, draw: random.Random | None = None) -> int:
    """How many tokens an answer has: around `mean` (0.5-1.5x) when latency follows the output,
    else `mean` (0: the answer's own words count)."""
    if mean <= 0:
        return 0
    if shape != "tokens":
        return mean
    rng = draw or random
    return max(1, round(mean * rng.uniform(0.5, 1.5)))


def latency(
    mean: float,
    jitter: float,
    shape: str,
    tokens: int = 0,
    tokens_mean: int = 0,
    sigma: float = 0.5,
    draw: random.Random | None = None,
) -> float:
    """Seconds one answer takes: `uniform` mean +/- jitter; `lognormal` with mean `mean` and
    shape `sigma`; `tokens` in proportion to the answer's tokens (`mean` at `tokens_mean`)."""
    rng = draw or random
    if shape == "lognormal" and mean > 0:
        return rng.lognormvariate(math.log(mean) - sigma**2 / 2, sigma)
    if shape == "tokens" and tokens_mean > 0:
        return mean * tokens / tokens_mean
    return max(0.0, mean + rng.uniform(-jitter, jitter))
