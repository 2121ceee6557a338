"""An OpenAI-compatible model provider on 127.0.0.1, with limits, for tests, bench and demos.

    python -m steward.worker.provider_simulator [--port 0] [--port-file F] [--concurrency 120]
        [--rpm 0] [--tpm 0] [--burst 10] [--headers none|openai|anthropic]
        [--latency 0.5] [--jitter 0.1] [--latency-shape uniform|lognormal|tokens] [--sigma 0.5]
        [--output-tokens 0] [--error-rate 0] [--retry-after 1]
        [--scan-flag-rate 0] [--scan-flag REGEX] [--fail-status 0]

Inspect reaches it through its real `openai-api` provider: model `openai-api/sim/<name>`,
`SIM_BASE_URL=http://127.0.0.1:<port>/v1`, `SIM_API_KEY=<anything>`. It answers "Reply with: X"
with X, and any other prompt with "ok".

It also judges transcripts, as a scan model: an inspect_scout `llm_scanner` prompt (yes/no or
numeric, scout's default transcript template) gets the verdict line the scanner parses
(`ANSWER: yes` / `ANSWER: no`, `ANSWER: 1` / `ANSWER: 0`; worker/offline_model.py's
`scanner_verdict`). With `--scan-flag REGEX` a verdict is positive iff the transcript matches
it, as the offline model's STEWARD_OFFLINE_FLAG; otherwise `--scan-flag-rate` of transcripts
are positive, chosen by a hash of the transcript (its scan nonce left out), so asking again,
in this scan or the next, gets the same verdict. Rate 0 (the default) flags none, 1 flags all.

Past its concurrency limit it answers 429 with `Retry-After` (`--retry-after`). `--rpm` and
`--tpm` are per-minute token buckets refilled continuously, each holding `--burst` seconds of
refill (worker/provider_limits.py); a request takes one request and its prompt's tokens plus its
answer's, and past either it gets a 429 whose `retry-after` (and, OpenAI-style, `retry-after-ms`)
is when it would be admitted. `--headers openai` puts `x-ratelimit-{limit,remaining,reset}-
{requests,tokens}` on every answer and 429, `--headers anthropic` puts
`anthropic-ratelimit-{requests,tokens}-{limit,remaining,reset}` there (and its 5xx are 529
overloaded). `--latency-shape lognormal` draws each answer's time around `--latency` (shape
`--sigma`); `tokens` makes answers `--output-tokens` long (0.5-1.5x, as their usage says) and
their time in proportion (`--latency` at the mean).
`--error-rate` of requests get a 500 (scanner prompts alike: it is one provider).
`--fail-status 503` is an outage: every request is answered at once with that status (0, the
default: none), until it is set back to 0.
`POST /admin/config` (JSON with any of the options; `"scan_flag": null` clears the regex)
retunes it live; `GET /admin/stats` reports what it served (`served`: every answer;
`scanned`: those that were scanner verdicts; `requests`, `tokens`; `busy_s`: the seconds the
answered requests were in flight, so that `busy_s / served` is the latency it really served at,
its event loop's lateness included); `POST /admin/reset` zeroes
the counters and fills the buckets.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import random
import re
import subprocess
import sys
import time
import uuid
from dataclasses import asdict, dataclass, field, fields
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from steward.worker.offline_model import reply_for, scanner_transcript, scanner_verdict
from steward.worker.provider_limits import (
    HEADER_STYLES,
    LATENCY_SHAPES,
    Buckets,
    TokenBucket,
    latency,
    output_tokens,
    rate_limit_headers,
    retry_headers,
)


@dataclass
class Limits:
    concurrency: int = 120  # requests in flight at once; 0 = unlimited
    rpm: int = 0  # requests accepted per minute (continuous refill); 0 = unlimited
    latency: float = 0.5  # mean seconds per answer
    jitter: float = 0.1  # +/- uniform seconds around the mean
    error_rate: float = 0.0  # share of requests answered 500
    retry_after: float = 1.0  # seconds, sent with a concurrency 429
    tpm: int = 0  # tokens accepted per minute (continuous refill); 0 = unlimited
    burst: float = 10.0  # seconds of refill each per-minute bucket holds
    headers: str = "none"  # rate-limit headers: none, openai, anthropic
    latency_shape: str = "uniform"  # uniform (+/- jitter), lognormal, tokens
    sigma: float = 0.5  # the lognormal's shape
    output_tokens: int = 0  # an answer's tokens as its usage reports them (0: its words)
    scan_flag_rate: float = 0.0  # share of scanned transcripts judged positive (0..1)
    scan_flag: str | None = None  # regex: when set, positive iff the transcript matches it
    fail_status: int = 0  # an outage: every request answered with this status (0: none)


@dataclass
class Stats:
    served: int = 0
    scanned: int = 0  # of those served, scanner prompts answered with a verdict
    rate_limited: int = 0
    requests: int = 0  # every chat request, answered or refused
    tokens: int = 0  # tokens of the answered requests (prompt + completion, as usage says)
    errors: int = 0
    failed: int = 0  # of the errors, answered with fail_status (the outage)
    in_flight: int = 0
    peak_in_flight: int = 0
    busy_s: float = 0.0  # seconds the answered requests were in flight, summed
    started_at: float = field(default_factory=time.time)


class Simulator:
    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.stats = Stats()
        self.buckets = self._buckets()

    def _buckets(self) -> Buckets:
        limits = self.limits
        return Buckets(
            requests=TokenBucket(limits.rpm, limits.burst) if limits.rpm else None,
            tokens=TokenBucket(limits.tpm, limits.burst) if limits.tpm else None,
        )

    def _headers(self, now: float) -> dict[str, str]:
        return rate_limit_headers(self.limits.headers, self.buckets, now, datetime.now(UTC))

    def _refusal(self, limit: str, headers: dict[str, str]) -> JSONResponse:
        self.stats.rate_limited += 1
        return JSONResponse(
            {
                "error": {
                    "message": f"Rate limit reached ({limit})",
                    "type": "rate_limit_error",
                    "code": "rate_limit_exceeded",
                }
            },
            status_code=429,
            headers=headers,
        )

    async def chat(self, request: Request) -> JSONResponse:
        body = await request.json()
        if self.limits.fail_status:
            self.stats.errors += 1
            self.stats.failed += 1
            return JSONResponse(
                {"error": {"message": "simulated outage", "type": "server_error"}},
                status_code=self.limits.fail_status,
            )
        self.stats.requests += 1
        limits, now = self.limits, time.monotonic()
        if limits.concurrency and self.stats.in_flight >= limits.concurrency:
            return self._refusal(
                "concurrency",
                {**self._headers(now), "retry-after": f"{limits.retry_after:g}"},
            )
        prompt = "\n".join(_text(m.get("content")) for m in body.get("messages", []))
        verdict = scan_verdict(prompt, limits)
        answer = verdict if verdict is not None else reply_for(prompt)
        prompt_tokens = len(prompt.split())
        completion_tokens = max(
            len(answer.split()), output_tokens(limits.output_tokens, limits.latency_shape)
        )
        limit = self.buckets.admit(prompt_tokens + completion_tokens, now)
        if limit is not None:
            wait = self.buckets.retry_after(prompt_tokens + completion_tokens, now)
            return self._refusal(
                limit, {**self._headers(now), **retry_headers(limits.headers, wait)}
            )
        headers = self._headers(now)
        admitted = time.monotonic()
        self.stats.in_flight += 1
        self.stats.peak_in_flight = max(self.stats.peak_in_flight, self.stats.in_flight)
        try:
            await asyncio.sleep(
                latency(
                    limits.latency,
                    limits.jitter,
                    limits.latency_shape,
                    completion_tokens,
                    limits.output_tokens,
                    limits.sigma,
                )
            )
            if random.random() < limits.error_rate:
                self.stats.errors += 1
                overloaded = limits.headers == "anthropic"
                return JSONResponse(
                    {
                        "error": {
                            "message": "overloaded" if overloaded else "simulated server error",
                            "type": "overloaded_error" if overloaded else "server_error",
                        }
                    },
                    status_code=529 if overloaded else 500,
                    headers=headers,
                )
            self.stats.served += 1
            self.stats.busy_s += time.monotonic() - admitted
            self.stats.scanned += verdict is not None
            self.stats.tokens += prompt_tokens + completion_tokens
            return JSONResponse(
                {
                    "id": f"chatcmpl-{uuid.uuid4().hex[:12]}",
                    "object": "chat.completion",
                    "created": int(time.time()),
                    "model": body.get("model", "sim"),
                    "choices": [
                        {
                            "index": 0,
                            "finish_reason": "stop",
                            "message": {"role": "assistant", "content": answer},
                        }
                    ],
                    "usage": {
                        "prompt_tokens": prompt_tokens,
                        "completion_tokens": completion_tokens,
                        "total_tokens": prompt_tokens + completion_tokens,
                    },
                },
                headers=headers,
            )
        finally:
            self.stats.in_flight -= 1

    async def configure(self, request: Request) -> JSONResponse:
        changes = await request.json()
        unknown = set(changes) - set(asdict(self.limits))
        if unknown:
            return JSONResponse({"error": f"unknown settings: {sorted(unknown)}"}, status_code=400)
        try:
            values = {name: _setting(name, value) for name, value in changes.items()}
        except (TypeError, ValueError) as err:
            return JSONResponse({"error": str(err)}, status_code=400)
        for name, value in values.items():
            setattr(self.limits, name, value)
        if {"rpm", "tpm", "burst"} & set(values):
            self.buckets = self._buckets()
        return JSONResponse(asdict(self.limits))

    async def reset(self, request: Request) -> JSONResponse:
        """Counters back to zero and the buckets full: the next run is measured as the first."""
        self.stats, self.buckets = Stats(in_flight=self.stats.in_flight), self._buckets()
        return JSONResponse(asdict(self.stats))

    async def report(self, request: Request) -> JSONResponse:
        return JSONResponse({**asdict(self.stats), "limits": asdict(self.limits)})

    def app(self) -> Starlette:
        return Starlette(
            routes=[
                Route("/v1/chat/completions", self.chat, methods=["POST"]),
                Route("/admin/config", self.configure, methods=["POST"]),
                Route("/admin/stats", self.report, methods=["GET"]),
                Route("/admin/reset", self.reset, methods=["POST"]),
            ]
        )


# A regex that matches any transcript (at its start), and one that matches none: how a verdict
# chosen by the flag rate is put to `scanner_verdict`, which words the answer.
_ANY, _NONE = "", "(?!)"


def scan_verdict(prompt: str, limits: Limits) -> str | None:
    """The answer to an inspect_scout llm_scanner prompt (yes/no or numeric), positive as
    `limits` say (module docstring); None for any other prompt."""
    if limits.scan_flag is not None:
        return scanner_verdict(prompt, limits.scan_flag)
    if scanner_transcript(prompt) is None:
        return None
    share = transcript_share(prompt)
    positive = share < limits.scan_flag_rate
    verdict = scanner_verdict(prompt, _ANY if positive else _NONE)
    if verdict is None:
        return None
    judged = "flagged" if positive else "not flagged"
    answer = verdict[verdict.rindex("ANSWER:") :]
    # No underscores: scout strips markdown (and so them) from the explanation it keeps.
    return (
        f"Simulated verdict: {judged} (this transcript's share {share:.4f}, "
        f"flag rate {limits.scan_flag_rate:g}).\n\n{answer}"
    )


def transcript_share(prompt: str) -> float:
    """Where the transcript in a scanner prompt falls in [0, 1): a hash of its text, without
    the scan's random nonce, so the same transcript gets the same share in every scan."""
    text = scanner_transcript(prompt)
    if text is None:
        text = prompt
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def _setting(name: str, value: Any) -> Any:
    """A setting's value as its Limits field takes it (JSON or the command line)."""
    if name == "scan_flag":
        if value is None:
            return None
        try:
            re.compile(str(value))
        except re.error as err:
            raise ValueError(f"scan_flag {value!r} is not a regex: {err}") from err
        return str(value)
    current = getattr(Limits(), name)
    converted = type(current)(value)
    if name == "scan_flag_rate" and not 0 <= converted <= 1:
        raise ValueError(f"{name} must be within 0..1, not {value!r}")
    choices = {"headers": HEADER_STYLES, "latency_shape": LATENCY_SHAPES}.get(name)
    if choices and converted not in choices:
        raise ValueError(f"{name} must be one of {', '.join(choices)}, not {value!r}")
    return converted


def _parser_for(name: str) -> Any:
    def parse(value: str) -> Any:
        return _setting(name, value)

    parse.__name__ = name  # argparse names it in "invalid <name> value"
    return parse


def _text(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return ""


def spawn(
    port_file: Path, timeout: float = 30.0, **limits: float | str | None
) -> tuple[subprocess.Popen, str]:
    """Start a simulator process with these limits; return it and its base URL once it listens."""
    command = [sys.executable, "-m", "steward.worker.provider_simulator", "--port-file", str(port_file)]
    for name, value in limits.items():
        if value is not None:
            command += [f"--{name.replace('_', '-')}", str(value)]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + timeout
    while not port_file.is_file():
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            raise RuntimeError(f"the provider simulator did not start (exit {process.poll()})")
        time.sleep(0.05)
    return process, f"http://127.0.0.1:{port_file.read_text()}"


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m steward.worker.provider_simulator")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--port-file", type=Path, help="write the bound port here once listening")
    for setting in fields(Limits):
        parser.add_argument(
            f"--{setting.name.replace('_', '-')}",
            type=_parser_for(setting.name),
            default=getattr(Limits(), setting.name),
            metavar="REGEX" if setting.name == "scan_flag" else None,
        )
    args = parser.parse_args()
    limits = Limits(**{setting.name: getattr(args, setting.name) for setting in fields(Limits)})
    config = uvicorn.Config(
        Simulator(limits).app(),
        host="127.0.0.1",
        port=args.port,
        log_level="warning",
        backlog=4096,
        timeout_keep_alive=30,
    )
    server = uvicorn.Server(config)

    async def serve() -> None:
        task = asyncio.create_task(server.serve())
        while not server.started:
            await asyncio.sleep(0.05)
        port = server.servers[0].sockets[0].getsockname()[1]
        if args.port_file:
            tmp = args.port_file.with_suffix(".tmp")
            tmp.write_text(str(port))
            tmp.replace(args.port_file)
        print(f"simulator listening on http://127.0.0.1:{port}/v1", flush=True)
        await task

    asyncio.run(serve())


if __name__ == "__main__":
    main()
