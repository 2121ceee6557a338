"""The steps `steward launch` takes before a run exists, run by the Steward worker of the
workspace's host rather than by the CLI: resolving the definition (capture) and the smoke.

There they fork from the worker's fork server, with Inspect already imported, instead of each
paying a fresh interpreter and Inspect's import (seconds of CPU) on every launch; and they see
the environment the run's workers will see, not the user's shell. One workflow, one activity
per call: the CLI waits for its result as it does for the credentials check.
"""

from __future__ import annotations

import fnmatch
from datetime import timedelta
from typing import Literal

from pydantic import BaseModel
from temporalio import workflow
from temporalio.common import RetryPolicy

from steward.workflows.activity_io import CaptureRequest
from steward.workflows.contracts import Capture, TaskSpec
from steward.workflows.names import Activity, WorkflowType

CheckKind = Literal["model", "sandbox", "task", "timeout", "definition"]
CHECK_KINDS: tuple[str, ...] = ("model", "sandbox", "task", "timeout", "definition")
CAPTURE_TIMEOUT_S = 600  # the bound of a capture whose request names none (an older CLI's)
CAPTURE_MARGIN_S = 60  # beyond the capture's own bound: its stack dump, the kill, the answer


class SmokeCheck(BaseModel):
    """One failed check of the smoke run."""

    task: str
    model: str
    check: CheckKind
    message: str


class SmokeResult(BaseModel):
    ok: bool
    checks: list[SmokeCheck]  # the failures
    tasks: list[str]  # names of the tasks smoked
    log_dir: str
    seconds: float
    samples: int  # samples completed (without error)


class SmokeRequest(BaseModel):
    workspace: str
    definition: str
    tasks: list[TaskSpec]
    limit: int
    time_cap: float


class PreflightRequest(BaseModel):
    """One step: `capture` the definition, or `smoke` its tasks."""

    host_queue: str
    capture: CaptureRequest | None = None
    smoke: SmokeRequest | None = None


class PreflightResult(BaseModel):
    capture: Capture | None = None
    smoke: SmokeResult | None = None


def _accepts(item: str, check: SmokeCheck) -> bool:
    item = item.strip()
    if not item:
        return False
    if ":" in item:
        task, _, kind = item.rpartition(":")
        if kind in CHECK_KINDS or any(c in kind for c in "*?["):
            return fnmatch.fnmatchcase(check.task, task) and fnmatch.fnmatchcase(check.check, kind)
    if item in CHECK_KINDS:
        return check.check == item
    return fnmatch.fnmatchcase(check.task, item) or (
        any(c in item for c in "*?[") and fnmatch.fnmatchcase(check.check, item)
    )


def waived(result: SmokeResult, accept: list[str]) -> list[SmokeCheck]:
    """The failures of `result` not waived by `accept`: each item a check kind ("model"), a
    task name ("my_task") or "task:check" ("my_task:sandbox"); fnmatch globs allowed."""
    return [c for c in result.checks if not any(_accepts(item, c) for item in accept)]


def describe(result: SmokeResult) -> str:
    """One line per failure: "task (model): check — message"."""
    return "\n".join(f"{c.task} ({c.model}): {c.check} — {c.message}" for c in result.checks)


# A definition that cannot be resolved fails at once (non-retryable); a worker that died
# mid-step is tried once more.
_ONCE_MORE = RetryPolicy(maximum_attempts=2)


@workflow.defn(name=WorkflowType.PREFLIGHT)
class Preflight:
    """Run one step before a launch on the host that will start the run's workers."""

    @workflow.run
    async def run(self, request: PreflightRequest) -> PreflightResult:
        if request.capture is not None:
            capture = await workflow.execute_activity(
                Activity.CAPTURE_DEFINITION,
                request.capture,
                task_queue=request.host_queue,
                start_to_close_timeout=timedelta(
                    seconds=(request.capture.timeout or CAPTURE_TIMEOUT_S) + CAPTURE_MARGIN_S
                ),
                retry_policy=_ONCE_MORE,
                result_type=Capture,
            )
            return PreflightResult(capture=capture)
        assert request.smoke is not None
        smoke = await workflow.execute_activity(
            Activity.SMOKE_TASKS,
            request.smoke,
            task_queue=request.host_queue,
            start_to_close_timeout=timedelta(seconds=request.smoke.time_cap + 120),
            retry_policy=_ONCE_MORE,
            result_type=SmokeResult,
        )
        return PreflightResult(smoke=smoke)
