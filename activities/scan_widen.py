"""A running scan takes the connections the run gives it, not only those it started with.

Scout fixes a scan's concurrency when it starts, so a scan started beside another with what the
budget had left kept that little even after the other ended and no eval work was left (the
bench's scan ran its last 500 transcripts at a third of the provider's capacity). Now the scan's
child works on enough transcripts for the most the budget could give it, and holds the model
connections it was given in Inspect's resizable connection semaphore. The activity writes the
connections the run now gives the scan into a file (`follow`, from a query to the run every
FOLLOW_EVERY_S); the child, in Inspect's before-generate hook, reads it at most twice a second
and resizes the semaphore: a raise takes waiting transcripts in at once, a cut takes effect as
connections come back.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import structlog
from inspect_ai.hooks import BeforeModelGenerate, Hooks, hooks

from .paths import write_atomic

log = structlog.get_logger("steward.scan")
CONNECTIONS_FILE_ENV = "STEWARD_SCAN_CONNECTIONS_FILE"
FOLLOW_EVERY_S = 2.0
READ_EVERY_S = 0.5


class _Follower:
    """The child's view of its connections file."""

    def __init__(self) -> None:
        self.read_at = 0.0
        self.applied: int | None = None

    def wanted(self) -> int | None:
        path = os.environ.get(CONNECTIONS_FILE_ENV)
        now = time.monotonic()
        if not path or now - self.read_at < READ_EVERY_S:
            return None
        self.read_at = now
        try:
            value = int(Path(path).read_text().strip())
        except (OSError, ValueError):
            return None
        return value if value >= 1 and value != self.applied else None


_follower = _Follower()


def resize_connections(model_name: str, connections: int) -> int:
    """Resize the static connection semaphores of `model_name`; how many were resized."""
    from inspect_ai.util._concurrency import ResizableSemaphore, _concurrency_registry

    resized = 0
    for semaphore in _concurrency_registry.values():
        if isinstance(semaphore, ResizableSemaphore) and semaphore.name == model_name:
            semaphore.concurrency = connections
            resized += 1
    return resized


@hooks(name="steward_scan_connections", description="Steward: a scan follows its budget share.")
class ScanConnections(Hooks):
    def enabled(self) -> bool:
        return bool(os.environ.get(CONNECTIONS_FILE_ENV))

    async def on_before_model_generate(self, data: BeforeModelGenerate) -> None:
        wanted = _follower.wanted()
        if wanted is not None and resize_connections(data.model_name, wanted):
            _follower.applied = wanted


async def follow(
    files: list[Path], share: Callable[[], Awaitable[int | None]], first: int | None
) -> None:
    """In the activity: keep each part's connections file at its part of the scan's share
    (`share()` asks the run), until cancelled. A share that cannot be read leaves the files."""
    written: int | None = None
    current = first
    while True:
        if current is not None and current != written:
            per_part = max(1, current // len(files))
            for path in files:
                write_atomic(path, f"{per_part}\n")
            written = current
        await asyncio.sleep(FOLLOW_EVERY_S)
        try:
            current = await share()
        except Exception as err:  # noqa: BLE001 - the run busy or away: keep what they have
            log.warning("scan share not read", error=repr(err))
            current = written
