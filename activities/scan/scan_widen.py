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

A scan holding the whole budget may also probe above it (budget-episode-v1): the file then says
`share cap` for one of its parts, the cap reaching what the run knows the provider refused (the
lowest budget that saw pushback, less one). The run's budget can settle below the provider's
limit (75 of 80 in the bench: the workers' controllers fall in steps of 5), and the scan, with
no controller of its own, would keep to it. So while all its connections are busy, a part adds
a twentieth of its share after each round (as many requests started as it holds connections,
so about one provider latency), up to the cap; a 429 puts it back to its share, and the level
that drew it is not probed again. It never holds less than the run's share.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import structlog
from inspect_ai.hooks import BeforeModelGenerate, Hooks, hooks

from steward.activities.logs.paths import write_atomic

log = structlog.get_logger("steward.scan")
CONNECTIONS_FILE_ENV = "STEWARD_SCAN_CONNECTIONS_FILE"
FOLLOW_EVERY_S = 2.0
READ_EVERY_S = 0.5


class _Follower:
    """The child's view of its connections file, and its probe above the share."""

    def __init__(self) -> None:
        self.read_at = 0.0
        self.applied: int | None = None
        self.share: int | None = None  # what the run gives this part
        self.cap: int | None = None  # the most it may probe to
        self.refused: int | None = None  # the lowest level that drew a 429 (at this share)
        self.extra = 0  # probed connections above the share
        self.started = 0  # requests started since the last probe step

    def _read(self, now: float) -> None:
        path = os.environ.get(CONNECTIONS_FILE_ENV)
        if not path or now - self.read_at < READ_EVERY_S:
            return
        self.read_at = now
        try:
            numbers = [int(word) for word in Path(path).read_text().split()]
        except (OSError, ValueError):
            return
        if not numbers or numbers[0] < 1:
            return
        share, cap = numbers[0], max(numbers[0], numbers[-1])
        if share != self.share:  # a new split: the probe starts again from it
            self.refused, self.extra, self.started = None, 0, 0
        self.share, self.cap = share, cap

    def wanted(self, now: float, saturated: bool) -> int | None:
        """The connections to hold now, when they differ from those applied."""
        self._read(now)
        if self.share is None or self.cap is None:
            return None
        top = self.cap if self.refused is None else min(self.cap, self.refused - 1)
        self.started += 1
        if (
            saturated
            and self.started >= (self.applied or self.share)
            and self.share + self.extra < top
        ):
            self.extra += max(1, self.share // 20)
            self.started = 0
        self.extra = max(0, min(self.share + self.extra, top) - self.share)
        wanted = self.share + self.extra
        return wanted if wanted != self.applied else None

    def refused_at(self) -> int | None:
        """A 429: back to the share (returned, when that is a change), and the level that drew
        it is not probed again. A 429 at the share itself is the run's budget to judge."""
        if not self.extra or self.share is None:
            return None
        level = self.applied or self.share + self.extra
        self.refused = level if self.refused is None else min(self.refused, level)
        self.extra, self.started = 0, -(self.applied or self.share)  # two rounds' pause
        return self.share


_follower = _Follower()


def _semaphores(model_name: str) -> list:
    """The static (resizable) connection semaphores of `model_name`."""
    from inspect_ai.util._concurrency import ResizableSemaphore, _concurrency_registry

    return [
        semaphore
        for semaphore in _concurrency_registry.values()
        if isinstance(semaphore, ResizableSemaphore) and semaphore.name == model_name
    ]


def resize_connections(model_name: str, connections: int) -> int:
    """Resize the static connection semaphores of `model_name`; how many were resized."""
    semaphores = _semaphores(model_name)
    for semaphore in semaphores:
        semaphore.concurrency = connections
    return len(semaphores)


def _saturated(model_name: str) -> bool:
    """Every connection of `model_name`'s semaphore is in use."""
    return any(s.in_use >= s.concurrency for s in _semaphores(model_name))


def _rate_limit_retries() -> int:
    """The process's rate-limit retries so far, as Inspect counts them (each SDK-level retry
    of a 429 too, so a refusal is seen a Retry-After after it, not after the SDK gave up)."""
    from inspect_ai.model._throughput import _registry

    return sum(record.retries_rate_limit for record in list(_registry.values()))


@hooks(name="steward_scan_connections", description="Steward: a scan follows its budget share.")
class ScanConnections(Hooks):
    def __init__(self) -> None:
        self.retries = 0

    def enabled(self) -> bool:
        return bool(os.environ.get(CONNECTIONS_FILE_ENV))

    async def on_before_model_generate(self, data: BeforeModelGenerate) -> None:
        retries = _rate_limit_retries()
        if retries > self.retries:  # refused since the last request: back to the share
            self.retries = retries
            back = _follower.refused_at()
            if back is not None and resize_connections(data.model_name, back):
                _follower.applied = back
        wanted = _follower.wanted(time.monotonic(), _saturated(data.model_name))
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
    headroom: Callable[[], Awaitable[int]] | None = None,
) -> None:
    """In the activity: keep the connections file of each part still scanning (`live()`) at
    its part of the scan's share (`share()` asks the run), until cancelled: a part that ends
    leaves its connections to the others, and once none scans the run hears so (`drained()`)
    and may give them to another scan. A share that cannot be read stays as it was.
    `headroom()` (budget-episode-v1): how far above its share the scan may probe, given to
    the first part still scanning as its cap (part_lines)."""
    written: tuple[int, int, tuple[Path, ...]] | None = None
    current, room = first, 0
    while True:
        files = tuple(live())
        if not files:
            try:
                await drained()
            except Exception as err:  # noqa: BLE001 - the scan's end says the same, later
                log.warning("scan drain not told", error=repr(err))
            return
        if (current, room, files) != written:
            for path, line in zip(files, part_lines(current, room, len(files)), strict=True):
                write_atomic(path, line)
            written = (current, room, files)
        await asyncio.sleep(FOLLOW_EVERY_S if files == tuple(live()) else 0)
        try:
            current = await share() or current
            room = await headroom() if headroom is not None else 0
        except Exception as err:  # noqa: BLE001 - the run busy or away: keep what they have
            log.warning("scan share not read", error=repr(err))


def part_lines(connections: int, headroom: int, parts: int) -> list[str]:
    """Each part's connections file: its slice of the scan's connections, and with headroom
    the most it may probe to (`share cap`). One part probes: a probe past the provider's limit
    draws a few 429s (the SDK's own retries among them), and one part finds it as well as all."""
    per_part = max(1, connections // parts)
    if headroom <= 0:
        return [f"{per_part}\n"] * parts
    return [f"{per_part} {per_part + headroom}\n"] + [f"{per_part}\n"] * (parts - 1)
