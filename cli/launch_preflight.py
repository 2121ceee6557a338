"""The launch's steps before a run exists (capture, the smoke), asked of the Steward worker of
this host through the `Preflight` workflow (workflows/prelaunch/preflight.py): it forks them from its
warm fork server, and they see the environment the run's workers will see."""

from __future__ import annotations

from steward.cli.context import Context
from steward.cli.output import CommandError, bad_input
from steward.cli.run_calls import ask_worker
from steward.worker.connect import host_queue
from steward.workflows.activity_io import CaptureRequest
from steward.workflows.contracts import Capture, TaskSpec
from steward.workflows.prelaunch.preflight import (
    Preflight,
    PreflightRequest,
    PreflightResult,
    SmokeRequest,
    SmokeResult,
)

ANSWER_MARGIN_S = 120  # for the worker to pick the step up, and one retry's start


class _DefinitionRefused(Exception):
    """The worker could not resolve the definition (the message says why)."""


def capture(ctx: Context, definition: str) -> Capture:
    """The definition's tasks, resolved by the Steward worker. Where it cannot resolve them it
    is tried once more here, in the user's environment: a definition that needs a credential
    only the shell holds then resolves, and the credentials check names what the workers lack
    (and --no-env-check can still launch); one broken everywhere fails in its own words."""
    from steward.worker.workspace import CaptureTimeout, DefinitionError, capture_definition_sync

    timeout = ctx.options.capture_timeout
    request = PreflightRequest(
        host_queue=host_queue(),
        capture=CaptureRequest(
            workspace=str(ctx.workspace), definition=definition, timeout=timeout
        ),
    )
    try:
        result = _run(ctx, request, "capture", timeout)
    except _DefinitionRefused:
        try:
            return capture_definition_sync(str(ctx.workspace), definition, timeout)
        except CaptureTimeout as err:
            raise CommandError(str(err)) from err
        except DefinitionError as err:
            raise bad_input(str(err)) from err
    assert result.capture is not None
    return result.capture


def smoke(
    ctx: Context, definition: str, tasks: list[TaskSpec], limit: int, time_cap: float
) -> SmokeResult:
    request = PreflightRequest(
        host_queue=host_queue(),
        smoke=SmokeRequest(
            workspace=str(ctx.workspace),
            definition=definition,
            tasks=tasks,
            limit=limit,
            time_cap=time_cap,
        ),
    )
    result = _run(ctx, request, "smoke", time_cap)
    assert result.smoke is not None
    return result.smoke


def _run(ctx: Context, request: PreflightRequest, step: str, seconds: float) -> PreflightResult:
    from temporalio.client import WorkflowFailureError
    from temporalio.exceptions import ApplicationError, TimeoutError

    try:
        return ask_worker(
            ctx,
            Preflight.run,
            request,
            step=step,
            seconds=seconds + ANSWER_MARGIN_S,
            result_type=PreflightResult,
        )
    except WorkflowFailureError as err:
        cause = err.cause
        while cause is not None and not isinstance(cause, ApplicationError | TimeoutError):
            cause = cause.cause
        if isinstance(cause, ApplicationError) and cause.type == "DefinitionError":
            raise _DefinitionRefused(cause.message) from err
        if isinstance(cause, ApplicationError) and cause.type == "CaptureTimeout":
            # It hung on the worker: trying it once more in this shell would hang as long again.
            raise CommandError(cause.message) from err
        if isinstance(cause, ApplicationError):
            raise CommandError(f"The {step} failed on the Steward worker: {cause.message}") from err
        raise CommandError(
            f"The Steward worker on this host did not finish the {step} in time; check it with "
            "`steward worker status` (or start it: `steward worker start`) and launch again."
        ) from err
