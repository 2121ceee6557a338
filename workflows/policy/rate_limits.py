"""A provider's rate limits in its own units, read from its answers' headers, and the pacing that
keeps a fleet of task workers just inside them, as pure functions
(activities/capacity/rate_pacing.py keeps the state in a file every worker against the endpoint
shares, and calls these under its lock).

* **Headers.** OpenAI-style answers carry `x-ratelimit-{limit,remaining,reset}-{requests,tokens}`
  (resets as Go durations: `20ms`, `1s`, `6m0s`); Anthropic-style ones
  `anthropic-ratelimit-{requests,tokens}-{limit,remaining,reset}` (resets as RFC 3339 times). A
  429 (or 529) carries `retry-after-ms` and/or `retry-after` (seconds, or an HTTP date).
* **Pacing.** The fleet shares one schedule per endpoint (a GCRA: the time the next request is
  due, `due`): each request is sent at `due` or now, whichever is later, and moves `due` on by
  one request's interval at PACE_SHARE of the binding limit (requests, or tokens at the tokens a
  request has used on average). After a pause up to BURST_S of requests go at once.
* **Kinds of request.** The eval's requests and the scan's (whole transcripts as prompts, several
  times the eval's tokens) share the schedule but keep separate tokens averages: each request
  moves `due` on by its own kind's tokens, and the scan's answers never teach the eval's average
  (which the next run starts from).
* **Corrections.** A reading whose `remaining` is below RESERVE of its limit (someone else drew
  on the account, or the estimate of tokens per request ran short) holds the schedule until that
  much has refilled; a 429's retry-after holds it until then. Without headers nothing is paced
  or held (a 429 there may be a concurrency cap): the connection budget's pushback learning
  (provider_budget.py) is what remains.
* **Memory.** The learned limits stay in the state, so the next run against the endpoint paces
  its first request at them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import UTC, datetime

from pydantic import BaseModel, Field

PACE_SHARE = 0.99  # of the binding limit the fleet is paced at (1 %: the clocks, a reading late)
BURST_S = 1.0  # after a pause, this many seconds' worth of requests go at once
RESERVE = 0.02  # `remaining` below this share of the limit holds the schedule
TOKENS_EWMA = 0.05  # weight of one answer in the tokens-per-request average
SETTLE_ANSWERS = 10  # answers counted before a tokens limit's pacing is taken as settled
UNITS = ("requests", "tokens")
EVAL_KIND = "eval"  # the task workers' requests; the scan's are SCAN_KIND
SCAN_KIND = "scan"
CHARS_PER_TOKEN = 4  # of a request's body, for a kind whose tokens a request is not known yet

_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|us|µs|ns|h|m|s)")
_SECONDS = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9}


class UnitLimit(BaseModel):
    """One limit as an answer stated it."""

    limit: int | None = None  # per minute
    remaining: int | None = None
    reset_s: float | None = None  # seconds until it is whole again


class RateLimitReading(BaseModel):
    style: str  # "openai", "anthropic", or "retry-after" (a refusal saying only when)
    units: dict[str, UnitLimit] = Field(default_factory=dict)  # "requests"/"tokens" -> limit
    retry_after_s: float | None = None


class TokensAverage(BaseModel):
    """The tokens one kind of request uses on average, and how many answers told it."""

    per_request: float | None = None
    answers: int = 0


def _averaged(previous: float | None, answers: int, tokens: int) -> tuple[float, int]:
    """An average of tokens a request and its count, with one more answer: the plain mean of
    the first answers (one answer's tokens may be half or twice the run's), then a moving
    average."""
    answers += 1
    if previous is None:
        return float(tokens), answers
    return previous + max(TOKENS_EWMA, 1.0 / answers) * (tokens - previous), answers


class PaceState(BaseModel):
    """One endpoint's shared schedule and what the fleet learned of its limits."""

    endpoint: str
    limits: dict[str, int] = Field(default_factory=dict)  # unit -> limit per minute
    style: str | None = None
    tokens_per_request: float | None = None  # the eval's requests' (EVAL_KIND)
    token_answers: int = 0  # answers whose tokens the average has counted
    # Other kinds of request against the endpoint (the scan's): their own tokens averages
    other_kinds: dict[str, TokensAverage] = Field(default_factory=dict)
    due: float = 0.0  # epoch seconds: when the next request is due
    held_until: float = 0.0  # a correction or a 429 holds every request until then
    sent: int = 0
    pushbacks: int = 0  # 429s seen
    observed_at: float = 0.0


def parse_duration(text: str) -> float | None:
    """Seconds in a Go duration (`20ms`, `1s`, `6m0s`, `1h2m3.5s`) or a bare number."""
    text = text.strip()
    try:
        return float(text)
    except ValueError:
        pass
    parts = _DURATION.findall(text)
    if not parts or "".join(n + u for n, u in parts) != text:
        return None
    return sum(float(n) * _SECONDS[u] for n, u in parts)


def parse_reset(value: str, now: datetime) -> float | None:
    """Seconds from `now` until a reset written as a duration or an RFC 3339 time."""
    seconds = parse_duration(value)
    if seconds is not None:
        return seconds
    try:
        at = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    if at.tzinfo is None:
        return None
    return max(0.0, (at - now).total_seconds())


def parse_retry_after(headers: Mapping[str, str], now: datetime) -> float | None:
    """Seconds a refusal asks to wait: `retry-after-ms`, else `retry-after` (seconds or date)."""
    lowered = {k.lower(): v for k, v in headers.items()}
    if "retry-after-ms" in lowered:
        try:
            return max(0.0, float(lowered["retry-after-ms"]) / 1000)
        except ValueError:
            pass
    value = lowered.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:  # an HTTP date, always in GMT
        at = datetime.strptime(value.strip(), "%a, %d %b %Y %H:%M:%S GMT").replace(tzinfo=UTC)
    except ValueError:
        return None
    return max(0.0, (at - now).total_seconds())


def _int(value: str | None) -> int | None:
    if value is None:
        return None
    try:
        return int(float(value))
    except ValueError:
        return None


def read_headers(headers: Mapping[str, str], now: datetime) -> RateLimitReading | None:
    """What an answer's headers say of the endpoint's limits; None when they say nothing."""
    lowered = {k.lower(): v for k, v in headers.items()}
    retry_after = parse_retry_after(lowered, now)
    for style, name in (
        ("openai", "x-ratelimit-{part}-{unit}"),
        ("anthropic", "anthropic-ratelimit-{unit}-{part}"),
    ):
        units = {}
        for unit in UNITS:
            limit = _int(lowered.get(name.format(part="limit", unit=unit)))
            remaining = _int(lowered.get(name.format(part="remaining", unit=unit)))
            reset = lowered.get(name.format(part="reset", unit=unit))
            if limit is None and remaining is None:
                continue
            units[unit] = UnitLimit(
                limit=limit,
                remaining=remaining,
                reset_s=None if reset is None else parse_reset(reset, now),
            )
        if units:
            return RateLimitReading(style=style, units=units, retry_after_s=retry_after)
    if retry_after is not None:
        return RateLimitReading(style="retry-after", retry_after_s=retry_after)
    return None


def tokens_per_request(
    state: PaceState, kind: str = EVAL_KIND, prompt_tokens: float | None = None
) -> float | None:
    """The tokens a request of `kind` uses on average. Until its own average is known, another
    kind's request (the scan's, many sent at once before one answers) is taken to use its own
    prompt's tokens (`prompt_tokens`, estimated from its size) or the eval's average, whichever
    is more: charged at the eval's short requests, the scan's first transcripts overran the
    tokens limit (6 429s in the bench's tokens shape)."""
    if kind == EVAL_KIND:
        return state.tokens_per_request
    own = state.other_kinds.get(kind)
    if own is not None and own.per_request:
        return own.per_request
    known = [t for t in (state.tokens_per_request, prompt_tokens) if t]
    return max(known) if known else None


def prompt_tokens_of(body_bytes: int) -> float:
    """A request's prompt in tokens, from its body's size (CHARS_PER_TOKEN characters each)."""
    return body_bytes / CHARS_PER_TOKEN


def interval(
    state: PaceState, kind: str = EVAL_KIND, prompt_tokens: float | None = None
) -> float | None:
    """Seconds a request of `kind` takes of the schedule at PACE_SHARE of the binding limit
    (None: no limit known, nothing is paced)."""
    gaps = []
    if state.limits.get("requests"):
        gaps.append(60.0 / (state.limits["requests"] * PACE_SHARE))
    per = tokens_per_request(state, kind, prompt_tokens)
    if state.limits.get("tokens") and per:
        gaps.append(60.0 * per / (state.limits["tokens"] * PACE_SHARE))
    return max(gaps) if gaps else None


def settled(state: PaceState) -> bool:
    """Whether the schedule paces every limit the provider stated: a tokens limit only once
    SETTLE_ANSWERS answers have told the tokens a request uses (until then the schedule knows
    only the requests limit, and a fleet let loose at that rate overruns the tokens one)."""
    if interval(state) is None:
        return False
    return not state.limits.get("tokens") or state.token_answers >= SETTLE_ANSWERS


def binding_unit(state: PaceState) -> str | None:
    """The unit whose limit paces the fleet now."""
    requests = state.limits.get("requests")
    tokens, per = state.limits.get("tokens"), state.tokens_per_request
    if requests and tokens and per:
        return "tokens" if per / tokens > 1 / requests else "requests"
    if requests:
        return "requests"
    return "tokens" if tokens and per else None


def schedule(
    state: PaceState, now: float, kind: str = EVAL_KIND, prompt_tokens: float | None = None
) -> float:
    """When a request of `kind` asked for at `now` is sent (epoch seconds; `now` when
    unpaced), with the schedule moved on past it by that kind's interval."""
    gap = interval(state, kind, prompt_tokens)
    start = max(now, state.held_until)
    state.sent += 1
    if gap is None:
        return start
    slot = max(state.due, start - BURST_S)
    state.due = slot + gap
    return max(start, slot)


def observe(
    state: PaceState,
    reading: RateLimitReading,
    now: float,
    tokens: int | None,
    kind: str = EVAL_KIND,
) -> None:
    """Learn from one answer to a request of `kind`: its limits, the tokens it used (into that
    kind's average), and whether the account is emptier than the schedule assumed (hold it
    until RESERVE has refilled) or refused (hold it for the retry-after)."""
    state.observed_at = now
    if tokens and kind == EVAL_KIND:
        state.tokens_per_request, state.token_answers = _averaged(
            state.tokens_per_request, state.token_answers, tokens
        )
    elif tokens:
        own = state.other_kinds.setdefault(kind, TokensAverage())
        own.per_request, own.answers = _averaged(own.per_request, own.answers, tokens)
    if reading.style != "retry-after":
        state.style = reading.style
    for unit, seen in reading.units.items():
        if seen.limit:
            state.limits[unit] = seen.limit
        limit = state.limits.get(unit)
        if not limit or seen.remaining is None:
            continue
        short = RESERVE * limit - seen.remaining
        if short > 0:  # per minute -> seconds to refill what is short
            state.held_until = max(state.held_until, now + 60.0 * short / limit)
    if reading.retry_after_s is not None:
        state.pushbacks += 1
        if state.limits:  # a provider that states no limits is left to the connection budget
            state.held_until = max(state.held_until, now + reading.retry_after_s)


class RateLimitBudget(BaseModel):
    """An endpoint's budget in the provider's own units, as status and metrics read it."""

    endpoint: str  # scheme://host:port/model
    unit: str | None = (
        None  # "requests/min" or "tokens/min": the limit that binds (None: none known)
    )
    value: int | None = None  # that limit
    paced_at: float = PACE_SHARE
    limits: dict[str, int] = Field(default_factory=dict)  # every limit stated: unit -> per minute
    style: str | None = None  # the headers' style: "openai", "anthropic"
    tokens_per_request: float | None = None
    pushbacks: int = 0  # 429s seen

    def line(self) -> str:
        """`http://h:1/echo: 2400 requests/min (openai-style headers; paced at 99%)`."""
        if self.unit is None:
            return f"{self.endpoint}: no limit stated yet, {self.pushbacks} 429(s)"
        per = f", {self.tokens_per_request:.0f} tokens a request" if self.tokens_per_request else ""
        refused = f", {self.pushbacks} 429(s)" if self.pushbacks else ""
        return (
            f"{self.endpoint}: {self.value} {self.unit} ({self.style}-style headers; paced at "
            f"{self.paced_at:.0%}{per}{refused})"
        )


def budget(state: PaceState) -> RateLimitBudget:
    unit = binding_unit(state)
    return RateLimitBudget(
        endpoint=state.endpoint,
        unit=None if unit is None else f"{unit}/min",
        value=None if unit is None else state.limits[unit],
        limits=dict(state.limits),
        style=state.style,
        tokens_per_request=state.tokens_per_request,
        pushbacks=state.pushbacks,
    )


def budget_view(state: PaceState) -> dict:
    """The endpoint's budget as others read it (status, metrics): its unit and value."""
    return budget(state).model_dump()
