"""A running scan follows its share (activities/scan_widen.py): the activity's side, with the
run's answers and the parts' progress played by the test."""

from __future__ import annotations

import asyncio
from pathlib import Path

from activities import scan_widen
from activities.scan_widen import done_marker, follow


async def test_parts_share_the_scans_connections_and_the_last_to_end_tells_the_run(
    tmp_path: Path, monkeypatch
):
    monkeypatch.setattr(scan_widen, "FOLLOW_EVERY_S", 0.01)
    files = [tmp_path / f"part-{i}" / "connections-scan-2" for i in range(2)]
    for path in files:
        path.parent.mkdir()
    scanning, shares, told = {0, 1}, [30, 30, 90], []

    async def share() -> int | None:
        return shares.pop(0) if len(shares) > 1 else shares[0]

    async def drained() -> None:
        told.append("drained")

    def live() -> list[Path]:
        return [files[i] for i in sorted(scanning) if not done_marker(files[i]).exists()]

    def values() -> list[str]:
        return [p.read_text().strip() if p.exists() else "-" for p in files]

    async def seen(expected: list[str]) -> list[str]:
        for _ in range(500):  # up to 5 s on a loaded machine
            if values() == expected:
                break
            await asyncio.sleep(0.01)
        return values()

    following = asyncio.create_task(follow(live, share, 30, drained))
    assert await seen(["45", "45"]) == ["45", "45"]  # the run widened the scan to 90: half each
    done_marker(files[0]).write_text("done\n")  # part 0 writes its results out
    assert await seen(["45", "90"]) == ["45", "90"]  # its connections went to part 1
    assert told == []
    scanning.discard(1)  # part 1 ended too
    await asyncio.wait_for(following, 1)
    assert told == ["drained"]  # the run hears it once, and the follower ends
