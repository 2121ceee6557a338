"""Every call the CLI makes to one workspace's run: find it, read its status, signal it, update
it. Calls are typed (`EvalRun.pause`, not "pause"): the workflow class is the contract.

A refusal is the user's one sentence and exit code 2 whichever command meets it: no run was
launched, the run has already ended (before the call, or while it was on its way), an
update's validator said no, or pause, resume or ramp hold met a run that runs nothing, or
what would be sent is too large for Temporal (`refuse_oversize`). An update that fails while
it runs is a failure (exit 1).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, TypeVar

from steward.cli.context import Context
from steward.cli.output import CommandError, bad_input, console
from steward.worker import deleted_runs
from steward.worker.connect import (
    CONNECT_SECONDS,
    ConnectError,
    Target,
    connect,
    connect_failure,
    run_url,
    runs_url,
)
from steward.workflows.contracts import (
    SETTLED_PHASES,
    TERMINAL_PHASES,
    CollectView,
    RunState,
    RunStatus,
    WorkerPulse,
)
from steward.workflows.ledgers.capacity_ledger import CapacityLedger
from steward.workflows.names import Activity
from steward.workflows.payload_limits import (
    PAYLOAD_BUDGET,
    largest_field,
    oversize_send_sentence,
)
from steward.workflows.policy.capacity_contracts import LedgerView
from steward.workflows.policy.worker_watch import with_live_progress
from steward.workflows.run.eval_run import EvalRun

if TYPE_CHECKING:
    from temporalio.client import (
        Client,
        WorkflowExecutionDescription,
        WorkflowHandle,
        WorkflowUpdateFailedError,
    )
    from temporalio.service import RPCError

    RunHandle = WorkflowHandle[EvalRun, RunState]

Result = TypeVar("Result")


async def client_for(target: Target) -> Client:
    try:
        return await asyncio.wait_for(connect(target), CONNECT_SECONDS)
    except ConnectError as err:
        raise bad_input(str(err)) from err
    except Exception as err:  # the SDK raises RuntimeError for unreachable servers
        raise CommandError(
            f"Cannot reach Temporal at {target.address} "
            f"({connect_failure(err, CONNECT_SECONDS)}); "
            + (
                "start it with `steward server start`."
                if target.embedded
                else "check STEWARD_TEMPORAL_ADDRESS."
            )
        ) from err


def ask_worker(
    ctx: Context,
    run: Callable[[Any], Awaitable[Result]],
    request: Any,
    *,
    step: str,
    seconds: float,
    result_type: type[Result],
) -> Result:
    """Run a short helper workflow (`run`, e.g. `Preflight.run`) for this workspace and wait
    for its result: how the CLI asks the Steward worker of its host to do something there."""
    import uuid
    from datetime import timedelta

    from steward.workflows.contracts import WORKFLOW_TASK_QUEUE

    async def ask() -> Result:
        client = await client_for(ctx.target)
        return await client.execute_workflow(
            run,
            request,
            id=f"{ctx.workflow_id}-{step}-{uuid.uuid4().hex[:8]}",
            task_queue=WORKFLOW_TASK_QUEUE,
            execution_timeout=timedelta(seconds=seconds),
            result_type=result_type,
        )

    return asyncio.run(ask())


def eval_run_handle(client: Client, workflow_id: str) -> RunHandle:
    return client.get_workflow_handle_for(EvalRun.run, workflow_id)


async def run_handle(ctx: Context) -> RunHandle:
    """The workspace's latest run, or a clear error when it never launched."""
    from temporalio.service import RPCError, RPCStatusCode

    handle = eval_run_handle(await client_for(ctx.target), ctx.workflow_id)
    try:
        description = await handle.describe()
    except RPCError as err:
        if err.status == RPCStatusCode.NOT_FOUND:
            raise bad_input(
                f"No run has been launched from {ctx.workspace}; start one with `steward launch`."
            ) from err
        raise
    if deleted_runs.is_deleted(description.run_id):  # Temporal has not caught up yet
        raise bad_input(
            f"The run of {ctx.workspace} was deleted from the list (`steward runs delete`); "
            "start a new one with `steward launch`."
        )
    return handle


async def live_run(ctx: Context, signal: Callable[..., Any] | None = None) -> RunHandle:
    """The workspace's run, refused when it has already ended, or when `signal` steers what
    runs and nothing runs any more."""
    handle = await run_handle(ctx)
    state = (await query_status(handle, ctx)).state
    if state.phase in TERMINAL_PHASES:
        raise _ended(ctx, f"is already {state.phase}")
    refusal = steering_refusal(ctx, signal, state)
    if refusal:
        raise bad_input(refusal)
    return handle


# Signals that steer what runs, and what a run that runs nothing lacks for them. (Signals have
# no validators, so the CLI refuses them; a run ending on the way makes them harmless no-ops.)
STEERING = {
    EvalRun.pause: "nothing to pause",
    EvalRun.resume: "nothing to resume",
    EvalRun.ramp_hold: "no ramp to hold",
}
RUNNING_PHASES = frozenset({"capturing", "queued", "running", "stalled"})


def steering_refusal(ctx: Context, signal: Callable[..., Any] | None, state: RunState) -> str:
    lacking = STEERING.get(signal) if signal is not None else None
    if lacking is None or state.phase in RUNNING_PHASES:
        return ""
    if signal is EvalRun.resume and state.paused:
        return ""  # a pause can always be undone: a ruling may give a finished run work again
    if state.phase == "finished":
        return (
            f"The run of {ctx.workspace} is finished and waits for signoff, so there is "
            f"{lacking}; sign it off with `steward signoff --by NAME`."
        )
    return f"The run of {ctx.workspace} is {state.phase}, so there is {lacking}."


async def signal_run(ctx: Context, signal: Callable[..., Any], payload: Any) -> RunHandle:
    """Signal the live run (e.g. `EvalRun.pause`); the handle is returned for waiting on it."""
    from temporalio.service import RPCError

    refuse_oversize(f"The `{signal.__name__}` signal", payload)
    handle = await live_run(ctx, signal)
    try:
        await handle.signal(signal, payload)
    except RPCError as err:
        if not _closed(err):
            raise
        raise _ended(ctx, "has ended") from err
    return handle


async def update_run(ctx: Context, update: Callable[..., Awaitable[Result]], *args: Any) -> Result:
    """Run an update on the live run (e.g. `EvalRun.rule`) and return its typed result."""
    from temporalio.client import WorkflowUpdateFailedError
    from temporalio.service import RPCError

    for arg in args:
        refuse_oversize(f"The `{update.__name__}` request", arg)
    handle = await live_run(ctx)
    try:
        return await handle.execute_update(update, args=args)
    except WorkflowUpdateFailedError as err:
        raise _update_failure(err) from err
    except RPCError as err:
        if not _closed(err):
            raise
        raise _ended(ctx, "has ended") from err


def refuse_oversize(what: str, payload: Any) -> None:
    """Refuse (exit 2) what Temporal could not take, before it is sent: measured as the
    client encodes it, and named by its largest field (a `--reason`, a launch's capture)."""
    from temporalio.contrib.pydantic import pydantic_data_converter

    [encoded] = pydantic_data_converter.payload_converter.to_payloads([payload])
    size = encoded.ByteSize()
    if size <= PAYLOAD_BUDGET:
        return
    as_json = payload.model_dump(mode="json") if hasattr(payload, "model_dump") else payload
    raise bad_input(oversize_send_sentence(what, size, largest_field(as_json)))


def _ended(ctx: Context, how: str) -> CommandError:
    return bad_input(f"The run of {ctx.workspace} {how}; launch a new one with `steward launch`.")


def _closed(err: RPCError) -> bool:
    """The run closed between the liveness check and the call (the same refusal)."""
    from temporalio.service import RPCStatusCode

    return err.status == RPCStatusCode.NOT_FOUND


def _update_failure(err: WorkflowUpdateFailedError) -> CommandError:
    from temporalio.exceptions import ApplicationError

    cause = err.cause
    if isinstance(cause, ApplicationError):  # the validator (or the handler) refused
        return bad_input(cause.message)
    if cause is None:
        return CommandError(str(err))
    root = cause
    while root.__cause__ is not None:  # e.g. an activity's own error under "activity failed"
        root = root.__cause__
    return CommandError(str(cause) if root is cause else f"{cause}: {root}")


async def query_status(handle: RunHandle, ctx: Context) -> RunStatus:
    from temporalio.client import WorkflowExecutionStatus

    description = await handle.describe()
    if description.status == WorkflowExecutionStatus.RUNNING:
        status = await handle.query(EvalRun.status)
        cap = status.state.capacity
        if status.state.phase == "queued" and cap.domain_id:
            # The place in line moves as runs ahead start: ask the ledger, not the run.
            view = await ledger_view(await client_for(ctx.target), cap.domain_id)
            if view is not None and ctx.workflow_id in view.positions:
                cap.position = view.positions[ctx.workflow_id]
                cap.reason = view.reasons.get(ctx.workflow_id, cap.reason)
        status.web_ui = run_url(ctx.target, ctx.workflow_id, description.run_id)
        status.web_ui_runs = runs_url(ctx.target)
        return with_live_progress(status, await worker_pulses(description), datetime.now(UTC))
    if description.status == WorkflowExecutionStatus.COMPLETED:
        state = await handle.result()
    else:  # terminated, timed out or failed outside Steward's own handling
        state = RunState(
            phase="failed", error=f"the workflow ended {description.status.name.lower()}"
        )
    return RunStatus(
        workflow_id=ctx.workflow_id,
        run_id=description.run_id,
        workspace=str(ctx.workspace),
        state=state,
        tend_interval=ctx.options.tend_interval,
        web_ui=run_url(ctx.target, ctx.workflow_id, description.run_id),
        web_ui_runs=runs_url(ctx.target),
    )


async def worker_pulses(description: WorkflowExecutionDescription) -> list[WorkerPulse]:
    """The watches' last heartbeats: each live worker's progress, read from the run's pending
    activities (heartbeats never enter the history)."""
    from temporalio.contrib.pydantic import pydantic_data_converter

    pulses = []
    for pending in description.raw_description.pending_activities:
        details = pending.heartbeat_details.payloads
        if pending.activity_type.name != Activity.WATCH_WORKER or not details:
            continue
        try:
            [pulse] = await pydantic_data_converter.decode(details, [WorkerPulse])
        except Exception:  # noqa: BLE001 - a pulse from another version: show without it
            continue
        pulses.append(pulse)
    return pulses


async def collect_view(handle: RunHandle, since: int) -> CollectView:
    """What an agent sees (open decisions, classes, the journal events the run still holds
    after `since`): a query, so it costs the run no history event however often it is asked."""
    return await handle.query(EvalRun.collect_view, since)


async def current_status(ctx: Context) -> RunStatus:
    return await query_status(await run_handle(ctx), ctx)


async def live_status(ctx: Context) -> RunStatus | None:
    """The workspace's run while its workflow is open (queued, running, finished awaiting
    signoff), else None: a launch then starts a new run."""
    from temporalio.client import WorkflowExecutionStatus
    from temporalio.service import RPCError, RPCStatusCode

    handle = eval_run_handle(await client_for(ctx.target), ctx.workflow_id)
    try:
        description = await handle.describe()
    except RPCError as err:
        if err.status == RPCStatusCode.NOT_FOUND:
            return None
        raise
    if description.status != WorkflowExecutionStatus.RUNNING:
        return None
    if deleted_runs.is_deleted(description.run_id):
        return None
    return await query_status(handle, ctx)


async def wait_settled(handle: RunHandle, ctx: Context, quiet: bool = False) -> RunStatus:
    """Poll until the run needs nobody's patience any more (finished, stalled or ended).

    At a terminal the per-task table stays on screen and follows the run (as fresh as the
    run's own progress: the watches' heartbeats); piped, a line per change; quiet, nothing."""
    if quiet or not console.is_terminal:
        return await _wait_printing_lines(handle, ctx, quiet)
    from rich.live import Live

    from steward.cli.render import waiting_table

    status = await query_status(handle, ctx)
    with Live(waiting_table(status), console=console, refresh_per_second=2, transient=True) as live:
        while status.state.phase not in SETTLED_PHASES:
            await asyncio.sleep(1.0)
            status = await query_status(handle, ctx)
            live.update(waiting_table(status))
    return status


async def _wait_printing_lines(handle: RunHandle, ctx: Context, quiet: bool) -> RunStatus:
    """Off a terminal (a pipe, a log, CI): what it waits for, then a line each time the run's
    numbers change (samples done, errors, in flight, tends), as fresh as the workers'
    heartbeats; quiet, nothing."""
    if not quiet:
        console.print(
            "Waiting until the run finishes, stalls or ends; a line each time its numbers change.",
            highlight=False,
        )
    last = None
    while True:
        status = await query_status(handle, ctx)
        line = waiting_line(status)
        if not quiet and line != last:
            console.print(line, highlight=False, markup=False)
            last = line
        if status.state.phase in SETTLED_PHASES:
            return status
        await asyncio.sleep(1.0)


def waiting_line(status: RunStatus) -> str:
    """One line of `status --wait` off a terminal: the run's state and its numbers."""
    from steward.workflows.run.eval_run_state import describe_state
    from steward.workflows.views.ended import as_ended
    from steward.workflows.views.vocabulary import tends_text

    state = as_ended(status).state
    errors = sum(t.progress.errored for t in state.tasks)
    in_flight = sum(t.progress.in_flight for t in state.tasks)
    return (
        f"{describe_state(state)}: {state.samples_done}/{state.samples_total} samples, "
        f"{errors} error(s), {in_flight} in flight ({tends_text(state.tend_count)})"
    )


async def ledger_view(client: Client, domain_id: str) -> LedgerView | None:
    try:
        return await client.get_workflow_handle_for(CapacityLedger.run, domain_id).query(
            CapacityLedger.view
        )
    except Exception:  # noqa: BLE001 - no ledger (yet): nobody queued there
        return None
