"""A scan's processes: each part of a scan (activities/scan/scan_parts.py plans them) scans in a
child forked from the warm server (activities/scan/scan_process.py); the parts share the scan's
connections, and with scan-widen-v1 follow the run's share for the scan as it changes
(activities/scan/scan_widen.py). Each child runs activities/scan/scout_scan.py; the activity
(activities/scan/scan.py) calls scan_in_subprocess.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from temporalio import activity
from temporalio.client import WorkflowQueryFailedError

from steward.activities.logs.paths import write_atomic
from steward.activities.scan.scan_parts import plan_parts
from steward.activities.scan.scan_process import run_in_child
from steward.activities.scan.scout_scan import (
    ScanFailed,
    ScanRequestError,
    resolve_scan_model,
    scan_transcripts,
)

# How often the activity tells Temporal it is alive while the child scans (and so how soon a
# cancellation reaches it).
HEARTBEAT_INTERVAL_S = 10.0


def connections_file(part_dir: Path, scan_key: str) -> Path:
    """Where a scan's part reads the connections it may hold now (one file per scan: two
    scans may share a results directory)."""
    return part_dir / f"connections-{scan_key}"


async def scan_in_subprocess(request: dict) -> list[dict]:
    """Run `scan_transcripts` for `request` in a child process and return its findings.

    The child runs in `results_dir` (so no workspace `scout.yaml` changes what is scanned);
    relative log paths and scanner files are resolved against `request["cwd"]`. Raises
    ScanRequestError or ScanFailed as the child did; kills the child if cancelled.
    """
    results_dir = Path(request["results_dir"])
    if not results_dir.is_absolute():
        results_dir = Path(request.get("cwd") or Path.cwd()) / results_dir
    results_dir.mkdir(parents=True, exist_ok=True)
    child_request = {
        "log_paths": list(request["log_paths"]),
        "results_dir": str(results_dir),
        "scan_model": resolve_scan_model(request.get("scan_model"), request.get("cwd")),
        "scanners": list(request.get("scanners") or []),
        "cwd": str(Path(request.get("cwd") or Path.cwd()).resolve()),
        "max_connections": request.get("max_connections"),
    }
    parts = plan_parts(child_request["log_paths"])
    connections = child_request["max_connections"]
    part_dirs = [
        results_dir / f"part-{i}" if len(parts) > 1 else results_dir for i in range(len(parts))
    ]
    scanning = set(range(len(parts)))  # the parts still scanning
    following = _follow_share(request, part_dirs, scanning)
    try:
        async with asyncio.TaskGroup() as group:
            answers = [
                group.create_task(
                    _scan_part(
                        {
                            **child_request,
                            "log_paths": part,
                            "shard": shard,
                            "max_connections": max(1, connections // len(parts))
                            if connections
                            else None,
                            **_widening(request, part_dirs[index], following),
                        },
                        part_dirs[index],
                        lambda index=index: scanning.discard(index),
                    )
                )
                for index, (part, shard) in enumerate(parts)
            ]
    except ExceptionGroup as failed:  # one part failed (the others were cancelled): its error
        raise failed.exceptions[0] from None
    finally:
        if following is not None:
            following.cancel()
    findings = [finding for answer in answers for finding in answer.result()]
    return sorted(
        findings, key=lambda f: (f["log"], f["task"], f["sample_id"], f["epoch"], f["scanner"])
    )


def _follow_share(request: dict, part_dirs: list[Path], scanning: set[int]) -> asyncio.Task | None:
    """scan-widen-v1: while the scan runs, keep the connections files of its parts still
    `scanning` at the run's share for it (the run's query, asked from here), so the children
    widen as it grows and as other parts end."""
    key, run_id, first = (
        request.get("scan_key"),
        request.get("run_id"),
        request.get("max_connections"),
    )
    if not (key and run_id and first and activity.in_activity()):
        return None
    from steward.activities.scan.scan_widen import done_marker, follow
    from steward.workflows.run.eval_run import EvalRun

    handle = activity.client().get_workflow_handle(run_id)
    for directory in part_dirs:
        directory.mkdir(parents=True, exist_ok=True)

    async def share() -> int | None:
        return await handle.query(EvalRun.scan_connections, key)

    async def drained() -> None:
        await handle.signal(EvalRun.scan_drained, key)

    async def headroom() -> int:
        try:
            return await handle.query(EvalRun.scan_headroom, key) or 0
        except WorkflowQueryFailedError:  # a run from before budget-episode-v1
            return 0

    files = [connections_file(directory, key) for directory in part_dirs]
    for path in files:  # there before the children start
        write_atomic(path, f"{max(1, first // len(files))}\n")

    def live() -> list[Path]:
        return [
            files[index]
            for index in sorted(scanning)
            if not done_marker(files[index]).exists()  # writing its results out
        ]

    return asyncio.create_task(follow(live, share, first, drained, headroom))


def _widening(request: dict, part_dir: Path, following: asyncio.Task | None) -> dict:
    """What a part's child needs to widen: its connections file and the most it may get (the
    whole ceiling: the other parts may end first)."""
    ceiling = request.get("connections_ceiling")
    if following is None or not ceiling:
        return {}
    return {
        "connections_file": str(connections_file(part_dir, request["scan_key"])),
        "connections_ceiling": ceiling,
    }


async def _scan_part(
    request: dict, cwd: Path, ended: Callable[[], None] = lambda: None
) -> list[dict]:
    cwd.mkdir(parents=True, exist_ok=True)
    try:
        response, last_line = await run_in_child(
            respond, request, cwd, _heartbeat, HEARTBEAT_INTERVAL_S
        )
    finally:
        ended()  # its connections go to the parts still scanning
    if response is None:
        raise ScanFailed(f"The scan process died before it answered: {last_line}")
    if "error" in response:
        error_type = ScanRequestError if response["error"]["type"] == "request" else ScanFailed
        raise error_type(response["error"]["message"])
    return response["findings"]


def _heartbeat() -> None:
    if activity.in_activity():
        activity.heartbeat()


def respond(request: dict) -> dict[str, Any]:
    """In the child: `{"findings"}`, or `{"error": {"type", "message"}}` for a refusal."""
    # The scan draws on the endpoints' rate limits with the task workers, in the same units. Its
    # requests are of their own kind there: whole transcripts, whose tokens must not teach the
    # eval's tokens-a-request average (the next run's first requests start from it).
    from steward.activities.capacity import rate_pacing
    from steward.activities.processes.runner_launch import (
        PACING_KIND_ENV,
        RATE_LIMITS_ENV,
        rate_limits_dir,
    )
    from steward.workflows.policy.rate_limits import SCAN_KIND

    os.environ.setdefault(RATE_LIMITS_ENV, str(rate_limits_dir()))
    os.environ[PACING_KIND_ENV] = SCAN_KIND
    rate_pacing.install()
    if request.get("connections_file"):
        from steward.activities.scan import scan_widen  # registers the hook that follows the file

        os.environ[scan_widen.CONNECTIONS_FILE_ENV] = request["connections_file"]
        scan_widen.mark_done_before_the_final_write(Path(request["connections_file"]))
    try:
        return {
            "findings": scan_transcripts(
                request["log_paths"],
                request["results_dir"],
                request.get("scan_model"),
                request.get("scanners") or [],
                cwd=request.get("cwd"),
                max_connections=request.get("max_connections"),
                shard=tuple(request["shard"]) if request.get("shard") else None,
                connections_ceiling=request.get("connections_ceiling"),
            )
        }
    except ScanRequestError as err:
        return {"error": {"type": "request", "message": str(err)}}
    except ScanFailed as err:
        return {"error": {"type": "failed", "message": str(err)}}
