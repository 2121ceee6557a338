"""An OpenAI-compatible model provider on 127.0.0.1, with limits, for tests, bench and demos.

    python -m worker.provider_simulator [--port 0] [--port-file F] [--concurrency 120]
        [--rpm 0] [--latency 0.5] [--jitter 0.1] [--error-rate 0] [--retry-after 1]

Inspect reaches it through its real `openai-api` provider: model `openai-api/sim/<name>`,
`SIM_BASE_URL=http://127.0.0.1:<port>/v1`, `SIM_API_KEY=<anything>`. It answers "Reply with: X"
with X. Past its concurrency limit or its requests-per-minute it answers 429 with
`Retry-After`; `--error-rate` of requests get a 500. `POST /admin/config` (JSON with any of
the options) retunes it live; `GET /admin/stats` reports what it served.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import subprocess
import sys
import time
import uuid
from collections import deque
from dataclasses import asdict, dataclass, field
from pathlib import Path

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from .offline_model import reply_for


@dataclass
class Limits:
    concurrency: int = 120  # requests in flight at once; 0 = unlimited
    rpm: int = 0  # requests accepted per rolling minute; 0 = unlimited
    latency: float = 0.5  # mean seconds per answer
    jitter: float = 0.1  # +/- uniform seconds around the mean
    error_rate: float = 0.0  # share of requests answered 500
    retry_after: float = 1.0  # seconds, sent with every 429


@dataclass
class Stats:
    served: int = 0
    rate_limited: int = 0
    errors: int = 0
    in_flight: int = 0
    peak_in_flight: int = 0
    started_at: float = field(default_factory=time.time)


class Simulator:
    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.stats = Stats()
        self.accepted: deque[float] = deque()  # acceptance times within the last minute

    def _over_limit(self) -> str | None:
        now = time.monotonic()
        while self.accepted and now - self.accepted[0] > 60:
            self.accepted.popleft()
        if self.limits.concurrency and self.stats.in_flight >= self.limits.concurrency:
            return "concurrency"
        if self.limits.rpm and len(self.accepted) >= self.limits.rpm:
            return "requests per minute"
        return None

    async def chat(self, request: Request) -> JSONResponse:
        body = await request.json()
        limit = self._over_limit()
        if limit is not None:
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
                headers={"retry-after": f"{self.limits.retry_after:g}"},
            )
        self.accepted.append(time.monotonic())
        self.stats.in_flight += 1
        self.stats.peak_in_flight = max(self.stats.peak_in_flight, self.stats.in_flight)
        try:
            delay = max(
                0.0, self.limits.latency + random.uniform(-self.limits.jitter, self.limits.jitter)
            )
            await asyncio.sleep(delay)
            if random.random() < self.limits.error_rate:
                self.stats.errors += 1
                return JSONResponse(
                    {"error": {"message": "simulated server error", "type": "server_error"}},
                    status_code=500,
                )
            prompt = "\n".join(_text(m.get("content")) for m in body.get("messages", []))
            answer = reply_for(prompt)
            self.stats.served += 1
            prompt_tokens, completion_tokens = len(prompt.split()), len(answer.split())
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
                }
            )
        finally:
            self.stats.in_flight -= 1

    async def configure(self, request: Request) -> JSONResponse:
        changes = await request.json()
        unknown = set(changes) - set(asdict(self.limits))
        if unknown:
            return JSONResponse({"error": f"unknown settings: {sorted(unknown)}"}, status_code=400)
        for name, value in changes.items():
            setattr(self.limits, name, type(getattr(self.limits, name))(value))
        return JSONResponse(asdict(self.limits))

    async def report(self, request: Request) -> JSONResponse:
        return JSONResponse({**asdict(self.stats), "limits": asdict(self.limits)})

    def app(self) -> Starlette:
        return Starlette(
            routes=[
                Route("/v1/chat/completions", self.chat, methods=["POST"]),
                Route("/admin/config", self.configure, methods=["POST"]),
                Route("/admin/stats", self.report, methods=["GET"]),
            ]
        )


def _text(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return ""


def spawn(port_file: Path, timeout: float = 30.0, **limits: float) -> tuple[subprocess.Popen, str]:
    """Start a simulator process with these limits; return it and its base URL once it listens."""
    command = [sys.executable, "-m", "worker.provider_simulator", "--port-file", str(port_file)]
    for name, value in limits.items():
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
    parser = argparse.ArgumentParser(prog="python -m worker.provider_simulator")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--port-file", type=Path, help="write the bound port here once listening")
    for name, default in asdict(Limits()).items():
        parser.add_argument(f"--{name.replace('_', '-')}", type=type(default), default=default)
    args = parser.parse_args()
    limits = Limits(**{name: getattr(args, name) for name in asdict(Limits())})
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
