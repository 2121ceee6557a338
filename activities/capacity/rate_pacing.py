"""Pacing a fleet's model requests inside a provider's rate limits, from the provider's own
headers (workflows/policy/rate_limits.py decides; this module does the I/O).

Every task worker Steward starts, and its scans, get RATE_LIMITS_ENV: a directory in Steward's
data dir holding one state file per endpoint (host and model). Installed in such a process
(`install()`, from Steward's Inspect plugin and the scan child), a wrapper around httpx's async
transport, which the OpenAI and Anthropic clients Inspect builds send through:

* before a model request (a POST whose JSON names a `model`), takes the endpoint's file lock,
  asks the shared schedule when this request is due and waits until then (nothing waits while
  no limit is known);
* after its answer, reads the rate-limit headers (and a JSON answer's `usage`) and teaches the
  shared state: the limits in requests and tokens per minute, the tokens a request uses, a
  429's retry-after. The tokens count toward the average of the process's kind of request
  (PACING_KIND_ENV: the eval's, or the scan's).

Where the worker's adaptive connections are Steward's share of the run's budget
(PACED_CONNECTIONS_ENV) and the endpoint is paced, the request's controller is lifted to its
ceiling instead of climbing there by Inspect's slow start (a round of answers per doubling,
~2 s a round at 2 s latency): the schedule, not the connections, holds the fleet inside the
limit, so the ramp's rounds only cost time; where a tokens limit is stated, only once the
schedule has counted enough answers' tokens to pace it (rate_limits.settled: let loose at
the requests limit alone, the fleet overran the tokens one). The ceiling stays the budget's
share, and a controller cooling down after a 429 is left to its cooldown. A definition's own
connection settings are not Steward's share: their controllers are never lifted.

The state stays after the run: the next run against the endpoint paces its first request at
what was learned. `budgets()` reads every endpoint's state, for status and metrics.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from datetime import UTC, datetime
from pathlib import Path

from steward.activities.processes.runner_launch import (
    PACED_CONNECTIONS_ENV,
    PACING_KIND_ENV,
    RATE_LIMITS_ENV,
)
from steward.workflows.policy import rate_limits
from steward.workflows.policy.rate_limits import PaceState

UNPACED_RECHECK_S = 1.0  # how long a process takes an unpaced endpoint as unpaced
LOCK_POLL_S = 0.001  # how often a worker tries the endpoint's lock while a peer holds it
_MODEL = re.compile(rb'"model"\s*:\s*"([^"]{1,200})"')
_installed = False


def endpoint_of(request) -> str | None:  # type: ignore[no-untyped-def]
    """`host:port/model` of a model request (a POST whose JSON body names its model)."""
    if request.method != "POST":
        return None
    try:
        body = request.content
    except Exception:  # a streamed body: not one of the model clients' requests
        return None
    found = _MODEL.search(body[:4096]) or _MODEL.search(body)
    if found is None:
        return None
    url = request.url
    return f"{url.scheme}://{url.host}:{url.port or ''}/{found.group(1).decode(errors='replace')}"


class SharedSchedule:
    """The endpoints' pacing states, one file each, changed under an exclusive file lock."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        directory.mkdir(parents=True, exist_ok=True)

    def path(self, endpoint: str) -> Path:
        digest = hashlib.sha256(endpoint.encode()).hexdigest()[:16]
        return self.directory / f"{digest}.json"

    @contextmanager
    def state(self, endpoint: str) -> Iterator[PaceState]:
        """The endpoint's state under its lock (blocking: for callers outside an event loop)."""
        with self._open(endpoint) as file:
            fcntl.flock(file, fcntl.LOCK_EX)
            yield from self._changed(file, endpoint)

    @asynccontextmanager
    async def astate(self, endpoint: str) -> AsyncIterator[PaceState]:
        """The same from an event loop: a worker whose peer holds the lock (descheduled on a
        busy machine, say) keeps serving its other samples while it waits."""
        import anyio

        with self._open(endpoint) as file:
            while True:
                try:
                    fcntl.flock(file, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    await anyio.sleep(LOCK_POLL_S)
            for state in self._changed(file, endpoint):
                yield state

    def _open(self, endpoint: str):  # type: ignore[no-untyped-def]
        return os.fdopen(os.open(self.path(endpoint), os.O_RDWR | os.O_CREAT, 0o600), "r+")

    @staticmethod
    def _changed(file, endpoint: str) -> Iterator[PaceState]:  # type: ignore[no-untyped-def]
        """Read the locked file's state, yield it once, write it back, unlock."""
        try:
            text = file.read()
            try:
                state = PaceState.model_validate_json(text) if text else None
            except ValueError:
                state = None
            state = state or PaceState(endpoint=endpoint)
            yield state
            file.seek(0)
            file.truncate()
            file.write(state.model_dump_json())
            file.flush()
        finally:
            fcntl.flock(file, fcntl.LOCK_UN)

    async def due(
        self,
        endpoint: str,
        now: float,
        kind: str = rate_limits.EVAL_KIND,
        prompt_tokens: float | None = None,
    ) -> tuple[float, bool, bool]:
        """When a request of `kind` (with a prompt of about `prompt_tokens`) asked for at `now`
        goes, whether the endpoint is paced at all, and whether its pacing is settled
        (rate_limits.settled)."""
        async with self.astate(endpoint) as state:
            at = rate_limits.schedule(state, now, kind, prompt_tokens)
            paced = rate_limits.interval(state, kind) is not None or state.held_until > now
            return at, paced, rate_limits.settled(state)

    async def observe(
        self,
        endpoint: str,
        reading: rate_limits.RateLimitReading | None,
        now: float,
        tokens: int | None,
        kind: str = rate_limits.EVAL_KIND,
    ) -> bool:
        """Learn from an answer to a request of `kind`; True once the endpoint's pacing is
        settled."""
        if reading is None:  # no limit stated: nothing to learn (tokens count once one is)
            return False
        async with self.astate(endpoint) as state:
            rate_limits.observe(state, reading, now, tokens, kind)
            return rate_limits.settled(state)


def read_budgets(directory: Path) -> list[rate_limits.RateLimitBudget]:
    """Every endpoint's learned limits (rate_limits.budget)."""
    found = []
    for path in sorted(directory.glob("*.json")) if directory.is_dir() else []:
        try:
            found.append(rate_limits.budget(PaceState.model_validate_json(path.read_text())))
        except (OSError, ValueError):
            continue
    return found


def budgets(directory: Path) -> list[dict]:
    """The same as plain data: `{endpoint, unit, value, limits, style, ...}`."""
    return [budget.model_dump() for budget in read_budgets(directory)]


def _tokens(response) -> int | None:  # type: ignore[no-untyped-def]
    """The tokens a JSON answer's `usage` counts (OpenAI's total, Anthropic's input + output)."""
    try:
        usage = json.loads(response.content).get("usage") or {}
    except (ValueError, AttributeError):
        return None
    if isinstance(usage.get("total_tokens"), int):
        return usage["total_tokens"]
    parts = [usage.get("input_tokens"), usage.get("output_tokens")]
    return sum(p for p in parts if isinstance(p, int)) or None


def lift_to_ceiling(controller) -> bool:  # type: ignore[no-untyped-def]
    """Raise an adaptive connection controller's limit to its ceiling (`max`), unless it is
    there already or cooling down after a rate-limit cut. True if it moved."""
    top = getattr(controller, "max", None)
    current = getattr(controller, "concurrency", None)
    if not isinstance(top, int) or not isinstance(current, int) or current >= top:
        return False
    if time.monotonic() < getattr(controller, "_cooldown_until", 0.0):
        return False
    set_limit = getattr(controller, "_set_limit", None)
    if set_limit is None:  # an Inspect without it: the controller climbs on its own
        return False
    set_limit(top, "manual")
    return True


def _lift_active_controller() -> None:
    """The controller of the model call this request belongs to (Inspect sets it for the
    call's context), lifted where the worker's connections are Steward's share."""
    if os.environ.get(PACED_CONNECTIONS_ENV) != "1":
        return
    try:
        from inspect_ai.util._concurrency import _active_controller
    except ImportError:
        return
    controller = _active_controller.get()
    if controller is not None:
        lift_to_ceiling(controller)


def install() -> None:
    """Wrap the async transports of httpx and httpx2 (the OpenAI and Anthropic clients send
    through one of them) in this process, once. It paces only while RATE_LIMITS_ENV is set,
    read at each request: a forked worker's environment is its own only once it runs."""
    global _installed
    if _installed:
        return
    import importlib

    for name in ("httpx", "httpx2"):
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        transport = module.AsyncHTTPTransport
        transport.handle_async_request = _paced(transport.handle_async_request)
    _installed = True


def _paced(original):  # type: ignore[no-untyped-def]
    import anyio

    schedules: dict[str, SharedSchedule] = {}
    # Endpoints found unpaced (no limit known) -> until when this process takes that as read:
    # their requests then cost no file lock (a provider without headers, the CPU-bound case).
    unpaced_until: dict[str, float] = {}

    async def handle_async_request(self, request):  # type: ignore[no-untyped-def]
        directory = os.environ.get(RATE_LIMITS_ENV)
        endpoint = endpoint_of(request) if directory else None
        if endpoint is None:
            return await original(self, request)
        schedule = schedules.get(directory) or schedules.setdefault(
            directory, SharedSchedule(Path(directory))
        )
        kind = os.environ.get(PACING_KIND_ENV) or rate_limits.EVAL_KIND
        prompt = None  # the eval's requests go by their average
        if kind != rate_limits.EVAL_KIND:  # another kind's first ones by their size
            prompt = rate_limits.prompt_tokens_of(len(request.content))
        now = time.time()
        if unpaced_until.get(endpoint, 0.0) <= now:
            at, paced, settled = await schedule.due(endpoint, now, kind, prompt)
            if not paced:
                unpaced_until[endpoint] = now + UNPACED_RECHECK_S
            else:
                if settled:
                    _lift_active_controller()
                if at > time.time():
                    await anyio.sleep(at - time.time())
        response = await original(self, request)
        reading = rate_limits.read_headers(response.headers, datetime.now(UTC))
        if reading is None:
            return response
        if response.status_code not in (429, 529):
            reading.retry_after_s = None  # only a refusal's retry-after holds the fleet
        if reading.units:
            unpaced_until.pop(endpoint, None)  # a limit stated: pace from the next request
        tokens = None
        if response.status_code == 200 and "json" in response.headers.get("content-type", ""):
            await response.aread()
            tokens = _tokens(response)
        settled = await schedule.observe(endpoint, reading, time.time(), tokens, kind)
        if settled and response.status_code not in (429, 529):
            _lift_active_controller()
        return response

    handle_async_request.__wrapped__ = original  # type: ignore[attr-defined]
    return handle_async_request
