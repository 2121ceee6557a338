"""A new run's smoke beside its start: the run's workers start while the smoke runs, so the
smoke's samples (at the provider's latency: seconds) no longer come before the real work.

Only for a fresh launch (no live run, nothing from the log store, an empty log directory), so
that a smoke that fails can stop the launch with nothing left of it to resume: the run is
cancelled ("the smoke failed": its workers stopped, its journal says so) and every file it
wrote in its log directory is removed; the launch refuses as before, with the smoke's
failures, and a fixed (or waived) launch starts afresh. Anything else (a relaunch, logs already
there) smokes first, as before.
"""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from steward.cli.context import Context
from steward.cli.launch_plan import LaunchPlan
from steward.cli.output import CommandError
from steward.workflows.contracts import CancelRequest, RunStatus
from steward.workflows.run.eval_run import EvalRun

SMOKE_FAILED = "the smoke failed"
STOPPED = "the run that started beside it was cancelled and its logs removed"


def eligible(plan: LaunchPlan) -> bool:
    """A fresh launch: no live run, nothing reused, and a log directory with nothing in it
    (local; a URL log root smokes first)."""
    if plan.live is not None or plan.store_hits or "://" in plan.log_dir:
        return False
    log_dir = Path(plan.log_dir)
    return not log_dir.exists() or not any(log_dir.iterdir())


def _files(root: Path) -> set[Path]:
    return ({p for p in root.rglob("*")} if root.exists() else set()) | {root}


def start_beside_smoke(
    ctx: Context,
    plan: LaunchPlan,
    start: Callable[[], RunStatus],
    smoke: Callable[[str], dict[str, Any]],
) -> tuple[RunStatus, dict[str, Any]]:
    """Start the run, then smoke; a smoke that fails stops the run (cancelled, its logs
    removed) and raises its error. The run's status and the smoke's document."""
    log_dir = Path(plan.log_dir)
    before = _files(log_dir)
    status = start()
    try:
        document = smoke(STOPPED)
    except CommandError:
        asyncio.run(_stop(ctx))
        _remove_new(before, log_dir)
        raise
    return status, document


async def _stop(ctx: Context) -> None:
    """Cancel the run and wait until it has ended (its workers stopped)."""
    from steward.cli.run_calls import client_for, eval_run_handle

    client = await client_for(ctx.target)
    handle = eval_run_handle(client, ctx.workflow_id)
    await handle.signal(EvalRun.cancel, CancelRequest(reason=SMOKE_FAILED, by="steward"))
    await handle.result()


def _remove_new(before: set[Path], log_dir: Path) -> None:
    """Remove what the run wrote in its log directory (deepest first)."""
    for path in sorted(_files(log_dir) - before, key=lambda p: len(p.parts), reverse=True):
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)
