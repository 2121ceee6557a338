"""A running scan follows its share (activities/scan/scan_widen.py): the activity's side, with the
run's answers and the parts' progress played by the test."""

from __future__ import annotations

import asyncio
from pathlib import Path

from steward.activities.scan import scan_widen
from steward.activities.scan.scan_widen import done_marker, follow


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


def test_the_parts_files_carry_their_slice_and_one_of_them_the_probe_cap():
    assert scan_widen.part_lines(80, 0, 3) == ["26\n"] * 3
    assert scan_widen.part_lines(75, 5, 3) == ["25 30\n", "25\n", "25\n"]  # one part probes
    assert scan_widen.part_lines(2, 1, 4) == ["1 2\n", "1\n", "1\n", "1\n"]


def test_a_part_probes_above_its_share_while_saturated_and_a_429_puts_it_back(
    tmp_path: Path, monkeypatch
):
    path = tmp_path / "connections"
    path.write_text("10 13\n")
    monkeypatch.setenv(scan_widen.CONNECTIONS_FILE_ENV, str(path))
    follower, now = scan_widen._Follower(), 100.0

    def requests(count: int, saturated: bool = True) -> int | None:
        """`count` requests start; what the last one applied."""
        nonlocal now
        for _ in range(count):
            now += 1.0
            wanted = follower.wanted(now, saturated)
            if wanted is not None:
                follower.applied = wanted
        return follower.applied

    assert requests(1) == 10  # the share, at once
    assert requests(8) == 10  # a round not yet over
    assert requests(1) == 11  # a round of 10 requests with every connection busy: one more
    assert requests(40, saturated=False) == 11  # connections to spare: no probe
    assert requests(40) == 13  # up to the cap, never past it
    assert follower.refused_at() == 10  # a 429 at 13: back to the share
    follower.applied = 10
    assert requests(100) == 12  # and 13 is not probed again
    assert follower.refused_at() == 10
    follower.applied = 10
    assert requests(100) == 11
    path.write_text("20 22\n")  # the run's new split: the probe starts again from it
    assert requests(1) == 20 and requests(100) == 22
    path.write_text("20\n")  # no headroom: the share and no more
    assert requests(1) == 20
    follower.extra = 0
    assert follower.refused_at() is None  # a 429 at the share is the run's to judge
