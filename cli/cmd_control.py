"""Commands that watch and steer the workspace's live run: status, tend, pause and resume, the
ramp's hold, the tend timer, cancel. Each is a query, a signal (`signal_run`) or an update
(`update_run`) on the run; those helpers own the refusals and their exit code."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Annotated, Any

import typer

from steward.cli import launch_plan as launching
from steward.cli import render
from steward.cli.context import Context, ready_context, stopping_context
from steward.cli.output import (
    CommandError,
    bad_input,
    command,
    console,
    emit,
    errors,
    working,
)
from steward.cli.params import ByOpt, JsonOpt, NoEnvCheckOpt, ReasonOpt, WorkspaceOpt, who
from steward.cli.run_calls import (
    current_status,
    live_status,
    query_status,
    run_handle,
    signal_run,
    update_run,
    wait_settled,
)
from steward.workflows.contracts import (
    ENDING_PHASES,
    CancelRequest,
    CommandNote,
    RunStatus,
    TendSummary,
    TimerRequest,
)
from steward.workflows.options import format_duration, parse_duration
from steward.workflows.run.eval_run import EvalRun
from steward.workflows.views.agent_status import agent_status
from steward.workflows.views.ended import as_ended


@command
def status(
    wait: Annotated[
        bool, typer.Option("--wait", help="Wait until the run has finished, stalled or ended.")
    ] = False,
    full: Annotated[
        bool,
        typer.Option(
            "--full",
            help="With --json, also the run's whole internal state (`state`, unversioned).",
        ),
    ] = False,
    workspace: WorkspaceOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Where the run stands: state, per-task progress, signoff blockers, last and next tend.

    --json prints the versioned shape `steward.status/1` (README: "Status for agents")."""
    ctx = ready_context(workspace, quiet=as_json)

    async def ask() -> RunStatus:
        handle = await run_handle(ctx)
        if wait:
            return await wait_settled(handle, ctx, quiet=as_json)
        return await query_status(handle, ctx)

    result = asyncio.run(ask())
    view = agent_status(result, datetime.now(UTC))
    # --full: the internal state beside the view (the view's keys win where both have one).
    internal = result.model_dump(mode="json") if full else {}
    emit(as_json, {"ok": True, **internal, **view}, lambda: render.print_status(result))


@command
def tend(
    timeout: Annotated[
        str, typer.Option("--timeout", help="Stop waiting after this long (the tend goes on).")
    ] = "5m",
    workspace: WorkspaceOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Run one tend now and print what it did.

    If the workspace could not be written, it says why.
    """
    try:
        seconds = parse_duration(timeout)
    except ValueError as err:
        raise bad_input(f"--timeout {timeout!r} is not a duration; use one such as 5m.") from err
    ctx = ready_context(workspace, quiet=as_json)

    async def tend_once() -> tuple[TendSummary, str | None]:
        try:
            summary = await asyncio.wait_for(update_run(ctx, EvalRun.tend), seconds)
        except TimeoutError as err:
            raise CommandError(
                f"The tend did not finish within {timeout}; it goes on in the run "
                "(`steward status` shows when it is done)."
            ) from err
        # The summary does not say whether the workspace could be written; the state does.
        return summary, (await current_status(ctx)).state.workspace_problem

    with working("tending the run", as_json):
        summary, problem = asyncio.run(tend_once())
    emit(
        as_json,
        {"ok": True, **summary.model_dump(mode="json"), "workspace_problem": problem},
        lambda: render.print_tend(summary, problem),
    )


def _signal(ctx: Context, signal, payload: Any, as_json: bool, said: str) -> None:
    """Send one command signal and say so (the JSON names the signal)."""
    asyncio.run(signal_run(ctx, signal, payload))
    emit(
        as_json,
        {"ok": True, "signal": signal.__name__, "workflow_id": ctx.workflow_id},
        lambda: console.print(said),
    )


@command
def pause(
    reason: ReasonOpt = "",
    workspace: WorkspaceOpt = None,
    by: ByOpt = "",
    as_json: JsonOpt = False,
) -> None:
    """Stop scheduling new work; running workers finish."""
    ctx = ready_context(workspace, quiet=as_json)
    _signal(
        ctx,
        EvalRun.pause,
        CommandNote(reason=reason, by=who(by)),
        as_json,
        "Paused: nothing new will be spawned; running workers finish.",
    )


@command
def resume(workspace: WorkspaceOpt = None, by: ByOpt = "", as_json: JsonOpt = False) -> None:
    """Schedule work again; the next tend converges from what it finds."""
    ctx = ready_context(workspace, quiet=as_json)
    _signal(ctx, EvalRun.resume, CommandNote(by=who(by)), as_json, "Resumed.")


@command
def ramp_hold(
    reason: ReasonOpt = "",
    workspace: WorkspaceOpt = None,
    by: ByOpt = "",
    as_json: JsonOpt = False,
) -> None:
    """Freeze the concurrency climb; the cut on provider pushback stays active."""
    ctx = ready_context(workspace, quiet=as_json)
    _signal(
        ctx,
        EvalRun.ramp_hold,
        CommandNote(reason=reason, by=who(by)),
        as_json,
        "Ramp held: no task climbs until `steward ramp resume`; pushback still cuts.",
    )


@command
def ramp_resume(workspace: WorkspaceOpt = None, by: ByOpt = "", as_json: JsonOpt = False) -> None:
    """Re-arm the concurrency climb."""
    ctx = ready_context(workspace, quiet=as_json)
    _signal(ctx, EvalRun.ramp_resume, CommandNote(by=who(by)), as_json, "Ramp re-armed.")


@command
def cancel(
    reason: ReasonOpt = "",
    wait: Annotated[
        bool, typer.Option("--wait/--no-wait", help="Wait until the run has ended.")
    ] = True,
    workspace: WorkspaceOpt = None,
    by: ByOpt = "",
    as_json: JsonOpt = False,
) -> None:
    """Stop the workers (30 s grace, then killed) and end the run CANCELLED.

    Works while the workspace's options cannot be read: it says so, and cancels anyway."""
    ctx, options_problem = stopping_context(workspace, quiet=as_json)
    if options_problem and not as_json:
        errors.print(f"[yellow]note[/]: {options_problem} Cancelling anyway.", highlight=False)

    async def stop() -> RunStatus:
        handle = await signal_run(ctx, EvalRun.cancel, CancelRequest(reason=reason, by=who(by)))
        if wait:
            await handle.result()
        return await query_status(handle, ctx)

    with working("stopping the run's workers", as_json):
        result = asyncio.run(stop())
    emit(
        as_json,
        {"ok": True, **result.model_dump(mode="json"), "options_problem": options_problem},
        lambda: console.print(_ended_line(result), highlight=False, markup=False),
    )


def _ended_line(status: RunStatus) -> str:
    """What `cancel` says: the run's phase, why, and how far it got."""
    state = status.state
    why = f": {state.cancel_reason or 'no reason given'}" if state.phase == "cancelled" else ""
    return f"Run {state.phase}{why} ({state.samples_done}/{state.samples_total} samples)."


@command
def timer_status(workspace: WorkspaceOpt = None, as_json: JsonOpt = False) -> None:
    """Whether the tend timer is armed, its interval, and the next tend."""
    ctx = ready_context(workspace, quiet=as_json)
    document = _timer_view(asyncio.run(current_status(ctx)))
    emit(as_json, {"ok": True, **document}, lambda: render.print_timer(document))


def _timer_view(status: RunStatus) -> dict[str, Any]:
    status = as_ended(status)  # an ended run has no timer
    timer = status.state.timer
    configured = status.tend_interval
    armed_at = timer.interval or configured
    return {
        "armed": timer.armed,
        "interval": format_duration(armed_at) if timer.armed else None,
        "configured": format_duration(configured),
        "differs": timer.armed and armed_at != configured,
        "ended": status.state.phase in ENDING_PHASES,
        "next_tend_at": status.state.next_tend_at.isoformat()
        if status.state.next_tend_at
        else None,
    }


@command
def timer_arm(
    interval: Annotated[
        str | None,
        typer.Option("--interval", help="Tend this often (e.g. 5m); default: tend_interval."),
    ] = None,
    workspace: WorkspaceOpt = None,
    by: ByOpt = "",
    no_env_check: NoEnvCheckOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Arm the tend timer (arming again leaves exactly one).

    The run's credentials are checked first, as at launch: scheduled tends start workers."""
    seconds = None
    if interval is not None:
        try:
            seconds = parse_duration(interval)
        except ValueError as err:
            raise bad_input(
                f"--interval {interval!r} is not a duration; use one such as 5m."
            ) from err
        if seconds < 1:
            raise bad_input("--interval must be at least 1s.")
    ctx = ready_context(workspace, quiet=as_json)
    if not no_env_check:
        live = asyncio.run(live_status(ctx))
        if live is not None:
            launching.check_credentials(ctx, [t.spec.model for t in live.state.tasks], True)
    said = f"Timer armed ({interval or 'tend_interval'})."
    _signal(ctx, EvalRun.timer_arm, TimerRequest(interval=seconds, by=who(by)), as_json, said)


@command
def timer_disarm(workspace: WorkspaceOpt = None, by: ByOpt = "", as_json: JsonOpt = False) -> None:
    """Stop scheduled tends; the run then tends only on `steward tend`."""
    said = "Timer disarmed; `steward tend` runs a tend, `steward timer arm` re-arms."
    ctx = ready_context(workspace, quiet=as_json)
    _signal(ctx, EvalRun.timer_disarm, TimerRequest(by=who(by)), as_json, said)
