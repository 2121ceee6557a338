"""A running scan takes the connections the run gives it, not only those it started with.

Scout fixes a scan's concurrency when it starts, so a scan started beside another with what the
budget had left kept that little even after the other ended and no eval work was left (the
bench's scan ran its last 500 transcripts at a third of the provider's capacity). Now the scan's
child works on enough transcripts for the most the budget could give it, and holds the model
connections it was given in Inspect's resizable connection semaphore. The activity writes the
connections the run now gives the scan into a file per part (`follow`, from a query to the run
every FOLLOW_EVERY_S; a part that has ended leaves its connections to the parts still
scanning, whose logs may be larger); the child, in Inspect's before-generate hook, reads it at most twice a second
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


def done_marker(connections_file: Path) -> Path:
    """Written by a part's child once it has asked for its last transcript: it holds no
    connection while scout writes its results out (seconds, for thousands of transcripts)."""
    return connections_file.with_name(connections_file.name + ".done")


def mark_done_before_the_final_write(connections_file: Path) -> None:
    """In the child: write the done marker when scout starts its final results write."""
    from inspect_scout._recorder.file import FileRecorder

    original = FileRecorder.sync

    async def sync(scan_location: str, complete: bool):  # type: ignore[no-untyped-def]
        if complete:
            write_atomic(done_marker(connections_file), "done\n")
        return await original(scan_location, complete)

    FileRecorder.sync = staticmethod(sync)  # type: ignore[method-assign]


async def follow(
    live: Callable[[], list[Path]],
    share: Callable[[], Awaitable[int | None]],
    first: int,
    drained: Callable[[], Awaitable[None]],
) -> None:
    """In the activity: keep the connections file of each part still scanning (`live()`) at
    its part of the scan's share (`share()` asks the run), until cancelled: a part that ends
    leaves its connections to the others, and once none scans the run hears so (`drained()`)
    and may give them to another scan. A share that cannot be read stays as it was."""
    written: tuple[int, tuple[Path, ...]] | None = None
    current = first
    while True:
        files = tuple(live())
        if not files:
            try:
                await drained()
            except Exception as err:  # noqa: BLE001 - the scan's end says the same, later
                log.warning("scan drain not told", error=repr(err))
            return
        if (current, files) != written:
            per_part = max(1, current // len(files))
            for path in files:
                write_atomic(path, f"{per_part}\n")
            written = (current, files)
        await asyncio.sleep(FOLLOW_EVERY_S if files == tuple(live()) else 0)
        try:
            current = await share() or current
        except Exception as err:  # noqa: BLE001 - the run busy or away: keep what they have
            log.warning("scan share not read", error=repr(err))
