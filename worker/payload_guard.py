"""The Steward worker's payload guard: an activity result too large for Temporal fails, in words.

Temporal refuses a result over its payload limit when the worker reports it; the activity is
then timed out and retried, again and again, and only the worker's log says why (a run whose
options grew past 2 MB stopped tending that way). The guard measures each result as the
worker will send it (the client's data converter, codec included) and, over the budget, fails
the activity once, non-retryably, naming it, the size and the limit: the workflow gets an
error it can report (eval_run_tend.py says so in status, status.md, the journal and a
notification) instead of an activity that never ends.

`STEWARD_ACTIVITY_RESULT_LIMIT` (bytes, for the worker process) lowers the budget: tests use it
to make a result of ordinary size count as too large.
"""

from __future__ import annotations

import os
from typing import Any

import structlog
from temporalio import activity
from temporalio.converter import DataConverter
from temporalio.exceptions import ApplicationError
from temporalio.worker import (
    ActivityInboundInterceptor,
    ExecuteActivityInput,
    Interceptor,
)

from steward.workflows.payload_limits import (
    PAYLOAD_BUDGET,
    PAYLOAD_TOO_LARGE,
    oversize_result_sentence,
)

LIMIT_VARIABLE = "STEWARD_ACTIVITY_RESULT_LIMIT"
log = structlog.get_logger("steward.worker")


def result_limit() -> int:
    """The budget for one result: PAYLOAD_BUDGET, or less when the environment says so."""
    try:
        return min(int(os.environ.get(LIMIT_VARIABLE, PAYLOAD_BUDGET)), PAYLOAD_BUDGET)
    except ValueError:
        return PAYLOAD_BUDGET


class PayloadGuard(Interceptor):
    """Registered on the worker that runs Steward's activities (temporal_worker.build_workers)."""

    def __init__(self, converter: DataConverter, limit: int | None = None) -> None:
        self.converter = converter
        self.limit = result_limit() if limit is None else limit

    def intercept_activity(self, next: ActivityInboundInterceptor) -> ActivityInboundInterceptor:
        return _GuardedActivity(next, self)


class _GuardedActivity(ActivityInboundInterceptor):
    def __init__(self, next: ActivityInboundInterceptor, guard: PayloadGuard) -> None:
        super().__init__(next)
        self.guard = guard

    async def execute_activity(self, input: ExecuteActivityInput) -> Any:
        result = await self.next.execute_activity(input)
        payloads = await self.guard.converter.encode([result])
        size = sum(payload.ByteSize() for payload in payloads)
        if size <= self.guard.limit:
            return result
        name = activity.info().activity_type
        message = oversize_result_sentence(name, size, self.guard.limit)
        log.error("activity result too large", activity=name, size=size, limit=self.guard.limit)
        raise ApplicationError(message, type=PAYLOAD_TOO_LARGE, non_retryable=True)
