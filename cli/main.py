"""`steward`: the command line. Thin: parse, call Temporal, render."""

from __future__ import annotations

import asyncio
import functools
import getpass
import os
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated

import typer

from workflows.contracts import (
    TERMINAL_PHASES,
    CancelRequest,
    CommandNote,
    RunSettings,
    TendSummary,
)
from workflows.decisions import RuleRequest, RuleResult
from workflows.eval_run_state import unsupervised
from workflows.options import run_settings

from . import launching, pools, render, runs
from .output import BAD_INPUT, FAILED, OK, CommandError, bad_input, console, emit, fail, finish

app = typer.Typer(
    help="Steward: durable supervision of long Inspect AI eval runs on Temporal.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
server_app = typer.Typer(help="The embedded Temporal dev server.", no_args_is_help=True)
ramp_app = typer.Typer(help="The automatic ramp of sample concurrency.", no_args_is_help=True)
worker_app = typer.Typer(help="The Steward worker (foreground without a subcommand).")
app.add_typer(server_app, name="server")
app.add_typer(worker_app, name="worker")
app.add_typer(ramp_app, name="ramp")
timer_app = typer.Typer(help="The run's own tend timer.", no_args_is_help=True)
app.add_typer(timer_app, name="timer")

JsonOpt = Annotated[bool, typer.Option("--json", help="Print one JSON document (for agents).")]
WorkspaceOpt = Annotated[
    Path | None,
    typer.Option("--workspace", "-w", help="Workspace directory (default: the current one)."),
]
ByOpt = Annotated[str, typer.Option("--by", help="Who is acting (recorded in the journal).")]
ReasonOpt = Annotated[str, typer.Option("--reason", help="Why (shown in status and the journal).")]
NoEnvCheckOpt = Annotated[
    bool,
    typer.Option(
        "--no-env-check",
        help="Skip checking that the workers will see the model providers' credentials.",
    ),
]


def command(fn: Callable) -> Callable:
    """Run a command body: map failures to one sentence and an exit code, then leave."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        as_json = bool(kwargs.get("as_json"))
        try:
            fn(*args, **kwargs)
        except CommandError as err:
            fail(err, as_json)
        except KeyboardInterrupt:
            fail(CommandError("interrupted"), as_json)
        except Exception as err:  # a bug or an outage: one line, unless debugging
            if os.environ.get("STEWARD_DEBUG"):
                raise
            fail(
                CommandError(
                    f"unexpected {type(err).__name__}: {err} (set STEWARD_DEBUG=1 for details)"
                ),
                as_json,
            )
        finish(OK)

    return wrapper


def _who(by: str) -> str:
    return by or getpass.getuser()


# ---------------------------------------------------------------- workspace
@app.command()
@command
def init(
    directory: Annotated[Path, typer.Argument(help="Where to create the workspace.")] = Path("."),
    force: Annotated[
        bool, typer.Option("--force", help="Overwrite an existing workspace's files.")
    ] = False,
    kind: Annotated[
        str,
        typer.Option(
            "--type",
            help="evalset: an eval_set() script (evalset.py); flow: an Inspect Flow config "
            "(config.py and tasks.py; needs the flow extra).",
        ),
    ] = "evalset",
    as_json: JsonOpt = False,
) -> None:
    """Create a workspace: _steward.yaml, AGENTS.md, CLAUDE.md, the definition, journal, status."""
    from worker.workspace import WorkspaceError, default_definition, init_workspace

    try:
        written = init_workspace(directory, force=force, kind=kind)
    except WorkspaceError as err:
        raise bad_input(str(err)) from err
    definition = default_definition(directory.resolve())
    emit(
        as_json,
        {"ok": True, "workspace": str(directory.resolve()), "files": written},
        lambda: console.print(
            f"Workspace ready in {directory.resolve()}: {', '.join(written)}\n"
            f"Edit {definition} (and _steward.yaml if needed), then `steward launch`.",
            highlight=False,
        ),
    )


@app.command()
@command
def tasks(
    definition: Annotated[
        str | None,
        typer.Argument(help="Definition file (default: evalset.py, else a Flow config.py)."),
    ] = None,
    workspace: WorkspaceOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Resolve the definition's tasks with Inspect's capture mode (nothing runs)."""
    from worker.workspace import DefinitionError, capture_definition_sync, default_definition

    ctx = runs.load_context(workspace)
    definition = definition or default_definition(ctx.workspace)
    launching.refuse_unsupported(ctx, definition)
    try:
        capture = capture_definition_sync(str(ctx.workspace), definition)
    except DefinitionError as err:
        raise bad_input(str(err)) from err
    emit(
        as_json,
        {"ok": True, "tasks": [t.model_dump() for t in capture.tasks], "log_dir": capture.log_dir},
        lambda: render.print_tasks(capture.tasks),
    )


# ---------------------------------------------------------------- the run
@app.command()
@command
def launch(
    definition: Annotated[
        str | None,
        typer.Argument(help="Definition file (default: evalset.py, else a Flow config.py)."),
    ] = None,
    workspace: WorkspaceOpt = None,
    by: ByOpt = "",
    smoke_only: Annotated[
        bool, typer.Option("--smoke", help="Rehearse: run the smoke and launch nothing.")
    ] = False,
    no_smoke: Annotated[bool, typer.Option("--no-smoke", help="Skip the smoke run.")] = False,
    accept: Annotated[
        list[str] | None,
        typer.Option(
            "--accept",
            help="Waive a smoke failure: a check (model, sandbox, task, timeout, definition), "
            "a task name, or TASK:CHECK. Repeatable.",
        ),
    ] = None,
    accept_archive: Annotated[
        bool,
        typer.Option(
            "--accept-archive",
            help="Commit a relaunch that moves results to logs-archive/ (removed or superseded).",
        ),
    ] = False,
    dry_run: Annotated[
        bool,
        typer.Option("--dry-run", help="Print the delta and the store hits; change nothing."),
    ] = False,
    no_timer: Annotated[
        bool,
        typer.Option(
            "--no-timer", help="Launch without the tend timer (tend with `steward tend`)."
        ),
    ] = False,
    no_env_check: NoEnvCheckOpt = False,
    docker_pools: Annotated[
        str,
        typer.Option(
            "--docker-pools",
            help="When Docker's address pools are too few for the run: ask (on a terminal; else "
            "decline), accept (merge the finer pools into daemon.json) or decline (print them).",
        ),
    ] = "ask",
    daemon_json: Annotated[
        Path | None, typer.Option("--daemon-json", help="The Docker daemon.json to advise on.")
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Launch the workspace's eval set as a durable run; on a live run, commit the edit's delta.

    Resolves the definition, reuses what the log store answers, smokes the new work (2 samples
    a task), then starts the run, or changes the live one (only new or changed work runs; moving
    results to logs-archive/ needs --accept-archive)."""
    from worker.workspace import default_definition
    from workflows.delta import AmendRequest, AmendResult, gate

    ctx = runs.load_context(workspace)
    definition = definition or default_definition(ctx.workspace)
    launching.refuse_unsupported(ctx, definition)
    if not (ctx.workspace / definition).is_file():
        raise bad_input(
            f"The definition {ctx.workspace / definition} does not exist; create it or name another file."
        )
    if docker_pools not in pools.CHOICES:
        raise bad_input(
            f"--docker-pools must be one of {', '.join(pools.CHOICES)}, not {docker_pools!r}."
        )
    runs.ensure_services(ctx.target, ctx.options, quiet=as_json)
    plan = launching.make_plan(ctx, definition)
    document = plan.document()
    if dry_run:
        emit(as_json, {"ok": True, "dry_run": True, **document}, lambda: _print_dry_run(plan))
        return
    if plan.live is not None:
        refusal = gate(plan.delta, accept_archive)
        if refusal:
            if not as_json:
                launching.print_plan(plan)
            raise bad_input(refusal)
    to_run = plan.to_run()
    if not no_env_check:
        models = [t.model for t in plan.capture.tasks]
        document["credentials"] = launching.check_credentials(ctx, models, as_json)
    if to_run and (smoke_only or (ctx.options.smoke and not no_smoke)):
        document["smoke"] = launching.smoke(ctx, definition, to_run, accept or [], as_json)
    if smoke_only:
        emit(
            as_json,
            {"ok": True, **document},
            lambda: console.print("Rehearsed; nothing was launched.", highlight=False),
        )
        return
    if plan.live is not None:
        if not plan.delta.changed and not plan.store_hits:
            emit(
                as_json,
                {"ok": True, **plan.live.model_dump(mode="json"), **document, "amended": None},
                lambda: render.print_status(plan.live),
            )
            return
        result = _update(
            ctx,
            "amend",
            AmendRequest(
                capture=plan.capture,
                rows=plan.delta.rows,
                definition_hash=plan.definition_hash,
                store_hits=plan.store_hits,
                by=_who(by),
            ),
            AmendResult,
        )
        status = asyncio.run(runs.current_status(ctx))
        emit(
            as_json,
            {
                "ok": True,
                **status.model_dump(mode="json"),
                **document,
                "amended": result.model_dump(),
            },
            lambda: _print_amended(plan, result, status),
        )
        return
    status = asyncio.run(
        runs.start_run(
            ctx,
            definition,
            _settings(ctx),
            _who(by),
            log_dir=plan.log_dir,
            capture=plan.capture,
            definition_hash=plan.definition_hash,
            store_hits=plan.store_hits,
            timer=not no_timer,
        )
    )
    if status.state.phase == "failed":
        raise bad_input(status.state.error or "the run failed to start")
    if not as_json:
        launching.print_plan(plan)
        render.print_status(status)
    advice = pools.check_docker_pools(
        status, ctx.options.samples_ramp, docker_pools, daemon_json, quiet=as_json
    )
    if as_json:
        emit(
            True,
            {"ok": True, **status.model_dump(mode="json"), **document, "docker_pools": advice},
            lambda: None,
        )


def _settings(ctx: runs.Context) -> RunSettings:
    return run_settings(ctx.options)


def _print_dry_run(plan) -> None:
    if plan.live is None:
        names = ", ".join(t.name for t in plan.capture.tasks)
        console.print(
            f"Would launch a new run of {names} (logs in {plan.log_dir}).", highlight=False
        )
    launching.print_plan(plan)
    console.print("Dry run: nothing was changed.", highlight=False)


def _print_amended(plan, result, status) -> None:
    launching.print_plan(plan)
    parts = [
        f"{label}: {', '.join(names)}"
        for label, names in (
            ("runs", result.added),
            ("archived", result.archived),
            ("restored", result.restored),
            ("from the store", result.reused),
        )
        if names
    ]
    console.print("Committed. " + ("; ".join(parts) or "Nothing to run."), highlight=False)
    render.print_status(status)


@app.command()
@command
def status(
    wait: Annotated[
        bool, typer.Option("--wait", help="Wait until the run has finished, stalled or ended.")
    ] = False,
    workspace: WorkspaceOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Where the run stands: state, per-task progress, last and next tend."""
    ctx = runs.load_context(workspace)
    runs.ensure_services(ctx.target, ctx.options, quiet=as_json)

    async def go():
        handle = await runs.run_handle(ctx)
        return await (
            runs.wait_settled(handle, ctx, quiet=as_json)
            if wait
            else runs.query_status(handle, ctx)
        )

    result = asyncio.run(go())
    warning = unsupervised(result.state, result.tend_interval, datetime.now(UTC))
    emit(
        as_json,
        {"ok": True, **result.model_dump(mode="json"), "unsupervised": warning},
        lambda: render.print_status(result),
    )


RoleOpt = Annotated[
    bool,
    typer.Option(
        "--agent",
        help="Act as an agent (also STEWARD_ROLE=agent): an agent's verdict on an error class "
        "is a proposal the operator rules on.",
    ),
]


def _role(agent: bool) -> str:
    return "agent" if agent or os.environ.get("STEWARD_ROLE", "").lower() == "agent" else "operator"


def _update(ctx: runs.Context, name: str, payload, result_type):
    """Run an update on the live run; a refusal by its validator is the user's one sentence."""
    from temporalio.client import WorkflowUpdateFailedError

    async def go():
        handle = await runs.run_handle(ctx)
        await runs.require_live(handle, ctx)
        try:
            return await handle.execute_update(name, payload, result_type=result_type)
        except WorkflowUpdateFailedError as err:
            raise bad_input(str(err.cause.message if err.cause else err)) from err

    return asyncio.run(go())


@app.command()
@command
def rule(
    decision: Annotated[str, typer.Argument(help="The decision id (see `steward collect`).")],
    verdict: Annotated[
        str,
        typer.Argument(
            help="rerun, exclude, zero, score, accept, dismiss; retry, give_up; "
            "cancel_tool, cancel; approve, reject, terminate."
        ),
    ],
    reason: ReasonOpt = "",
    by: ByOpt = "",
    agent: RoleOpt = False,
    workspace: WorkspaceOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Answer a decision. Invalid rulings are refused and change nothing."""
    ctx = runs.load_context(workspace)
    runs.ensure_services(ctx.target, ctx.options, quiet=as_json)
    request = RuleRequest(
        decision_id=decision, verdict=verdict, reason=reason, by=_who(by), role=_role(agent)
    )
    result = _update(ctx, "rule", request, RuleResult)
    emit(
        as_json,
        {"ok": True, **result.model_dump(mode="json")},
        lambda: console.print(
            f"{result.decision_id}: {result.verdict} "
            + (
                f"proposed; the operator rules on it as {result.raised}."
                if result.effect == "proposed"
                else "ruled; the run applies it now."
            ),
            highlight=False,
        ),
    )


@app.command()
@command
def collect(
    since: Annotated[
        int, typer.Option("--since", help="Events after this journal number (the cursor).")
    ] = 0,
    workspace: WorkspaceOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Open decisions and every event since the cursor. Reading consumes nothing; it tells the
    run an agent looked (agent items then stay the agent's for two more tends)."""
    from workflows.contracts import CollectView

    ctx = runs.load_context(workspace)
    runs.ensure_services(ctx.target, ctx.options, quiet=as_json)

    async def go() -> CollectView | None:
        handle = await runs.run_handle(ctx)
        status = await runs.query_status(handle, ctx)
        if status.state.phase in TERMINAL_PHASES:
            return None
        view = await handle.query("collect_view", since, result_type=CollectView)
        await handle.signal("collected", CommandNote(by=_who("")))
        return view

    from worker.workspace import read_journal

    view = asyncio.run(go())
    events = {e["seq"]: e for e in read_journal(ctx.workspace, since)}
    if view is not None:
        for event in view.events:  # held by the workflow, not yet on disk
            events.setdefault(
                event.seq,
                {"seq": event.seq, "at": event.at.isoformat(), "event": event.event, **event.data},
            )
    ordered = [events[seq] for seq in sorted(events)]
    cursor = max([since, *events, view.cursor if view else 0])
    document = {
        "ok": True,
        "cursor": cursor,
        "phase": view.phase if view else "ended",
        "decisions": view.decisions if view else [],
        "classes": view.classes if view else [],
        "policies": view.policies if view else [],
        "unattended": view.unattended if view else False,
        "events": ordered,
    }
    emit(as_json, document, lambda: render.print_collect(document))


@app.command()
@command
def runbook(as_json: JsonOpt = False) -> None:
    """The mechanics for an agent attaching to a run (ships with the package)."""
    from importlib.resources import files

    text = files("cli").joinpath("runbook.md").read_text()
    emit(as_json, {"ok": True, "runbook": text}, lambda: console.print(text, markup=False))


@app.command()
@command
def signoff(
    by: Annotated[str, typer.Option("--by", help="Who signs the run off (required).")] = "",
    publish: Annotated[
        bool, typer.Option("--publish", help="Also copy the final logs into the log store.")
    ] = False,
    workspace: WorkspaceOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Sign the run off: refused, listing every blocker, until it is clean."""
    from workflows.contracts import Signoff, SignoffRequest

    if not by.strip():
        raise bad_input("signoff needs --by NAME (who signs the run off).")
    ctx = runs.load_context(workspace)
    if publish and not ctx.options.log_store:
        raise bad_input(
            "--publish needs a log store: set log_store in _steward.yaml or STEWARD_LOG_STORE."
        )
    runs.ensure_services(ctx.target, ctx.options, quiet=as_json)
    result = _update(ctx, "signoff", SignoffRequest(by=by, publish=publish), Signoff)
    emit(
        as_json,
        {"ok": True, **result.model_dump(mode="json")},
        lambda: console.print(
            f"Signed off by {result.by}: {len(result.logs)} log(s) kept, "
            f"{len(result.archived)} archived"
            + (f", {len(result.published)} published." if publish else "."),
            highlight=False,
        ),
    )


@app.command()
@command
def tend(workspace: WorkspaceOpt = None, as_json: JsonOpt = False) -> None:
    """Run one tend now and print what it did."""
    from temporalio.client import WorkflowUpdateFailedError

    ctx = runs.load_context(workspace)
    runs.ensure_services(ctx.target, ctx.options, quiet=as_json)

    async def go() -> TendSummary:
        handle = await runs.run_handle(ctx)
        await runs.require_live(handle, ctx)
        try:
            return await handle.execute_update("tend", result_type=TendSummary)
        except WorkflowUpdateFailedError as err:
            raise CommandError(str(err.cause.message if err.cause else err)) from err

    summary = asyncio.run(go())
    emit(
        as_json, {"ok": True, **summary.model_dump(mode="json")}, lambda: render.print_tend(summary)
    )


@timer_app.command("status")
@command
def timer_status(workspace: WorkspaceOpt = None, as_json: JsonOpt = False) -> None:
    """Whether the tend timer is armed, its interval, and the next tend."""
    ctx = runs.load_context(workspace)
    runs.ensure_services(ctx.target, ctx.options, quiet=as_json)
    status = asyncio.run(runs.current_status(ctx))
    document = timer_view(status)
    emit(as_json, {"ok": True, **document}, lambda: render.print_timer(document))


def timer_view(status) -> dict:
    from workflows.options import format_duration

    timer = status.state.timer
    configured = status.tend_interval
    armed_at = timer.interval or configured
    return {
        "armed": timer.armed,
        "interval": format_duration(armed_at) if timer.armed else None,
        "configured": format_duration(configured),
        "differs": timer.armed and armed_at != configured,
        "next_tend_at": status.state.next_tend_at.isoformat()
        if status.state.next_tend_at
        else None,
    }


@timer_app.command("arm")
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
    """Arm the tend timer (arming again leaves exactly one); the run's credentials are checked
    first, as at launch: scheduled tends start workers."""
    from workflows.contracts import TimerRequest
    from workflows.options import parse_duration

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
    said = f"Timer armed ({interval or 'tend_interval'})."
    if not no_env_check:
        ctx = runs.load_context(workspace)
        runs.ensure_services(ctx.target, ctx.options, quiet=as_json)
        live = asyncio.run(runs.live_status(ctx))
        if live is not None:
            launching.check_credentials(ctx, [t.spec.model for t in live.state.tasks], True)
    _signal(workspace, "timer_arm", TimerRequest(interval=seconds, by=_who(by)), as_json, said)


@timer_app.command("disarm")
@command
def timer_disarm(workspace: WorkspaceOpt = None, by: ByOpt = "", as_json: JsonOpt = False) -> None:
    """Stop scheduled tends; the run then tends only on `steward tend`."""
    from workflows.contracts import TimerRequest

    said = "Timer disarmed; `steward tend` runs a tend, `steward timer arm` re-arms."
    _signal(workspace, "timer_disarm", TimerRequest(by=_who(by)), as_json, said)


def _signal(workspace: Path | None, name: str, payload, as_json: bool, said: str) -> None:
    ctx = runs.load_context(workspace)
    runs.ensure_services(ctx.target, ctx.options, quiet=as_json)

    async def go() -> None:
        handle = await runs.run_handle(ctx)
        await runs.require_live(handle, ctx)
        await handle.signal(name, payload)

    asyncio.run(go())
    emit(
        as_json,
        {"ok": True, "signal": name, "workflow_id": ctx.workflow_id},
        lambda: console.print(said),
    )


@app.command()
@command
def pause(
    reason: ReasonOpt = "",
    workspace: WorkspaceOpt = None,
    by: ByOpt = "",
    as_json: JsonOpt = False,
) -> None:
    """Stop scheduling new work; running workers finish."""
    _signal(
        workspace,
        "pause",
        CommandNote(reason=reason, by=_who(by)),
        as_json,
        "Paused: nothing new will be spawned; running workers finish.",
    )


@app.command()
@command
def resume(workspace: WorkspaceOpt = None, by: ByOpt = "", as_json: JsonOpt = False) -> None:
    """Schedule work again; the next tend converges from what it finds."""
    _signal(workspace, "resume", CommandNote(by=_who(by)), as_json, "Resumed.")


@ramp_app.command("hold")
@command
def ramp_hold(
    reason: ReasonOpt = "",
    workspace: WorkspaceOpt = None,
    by: ByOpt = "",
    as_json: JsonOpt = False,
) -> None:
    """Freeze the concurrency climb; the cut on provider pushback stays active."""
    _signal(
        workspace,
        "ramp_hold",
        CommandNote(reason=reason, by=_who(by)),
        as_json,
        "Ramp held: no task climbs until `steward ramp resume`; pushback still cuts.",
    )


@ramp_app.command("resume")
@command
def ramp_resume(workspace: WorkspaceOpt = None, by: ByOpt = "", as_json: JsonOpt = False) -> None:
    """Re-arm the concurrency climb."""
    _signal(workspace, "ramp_resume", CommandNote(by=_who(by)), as_json, "Ramp re-armed.")


@app.command()
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
    """Stop the workers (30 s grace, then killed) and end the run CANCELLED."""
    ctx = runs.load_context(workspace)
    runs.ensure_services(ctx.target, ctx.options, quiet=as_json)

    async def go():
        handle = await runs.run_handle(ctx)
        await runs.require_live(handle, ctx)
        await handle.signal("cancel", CancelRequest(reason=reason, by=_who(by)))
        if wait:
            await handle.result()
        return await runs.query_status(handle, ctx)

    result = asyncio.run(go())
    emit(
        as_json,
        {"ok": True, **result.model_dump(mode="json")},
        lambda: console.print(f"Run {result.state.phase}.", highlight=False),
    )


runs_app = typer.Typer(help="Every run the Temporal server knows (list without a subcommand).")
app.add_typer(runs_app, name="runs")


@runs_app.callback(invoke_without_command=True)
def runs_main(ctx: typer.Context, as_json: JsonOpt = False) -> None:
    """Every run the Temporal server knows: workspace, state (queued ones with their place in
    line and why), progress."""
    if ctx.invoked_subcommand is None:
        _list_runs(as_json=as_json)


@command
def _list_runs(as_json: bool = False) -> None:
    options = runs.machine_options()
    target = runs.target_for(options)
    runs.ensure_services(target, options, quiet=as_json)
    rows = asyncio.run(runs.list_runs(target))
    emit(as_json, {"ok": True, "runs": rows}, lambda: render.print_runs(rows))


@runs_app.command("delete")
@command
def runs_delete(
    run: Annotated[
        str | None,
        typer.Argument(help="A workflow id or workspace directory (default: this workspace)."),
    ] = None,
    by: ByOpt = "",
    as_json: JsonOpt = False,
) -> None:
    """Remove a queued or ended run from the list (a queued one leaves the queue first).
    The workspace's files and logs stay."""
    options = runs.machine_options()
    target = runs.target_for(options)
    runs.ensure_services(target, options, quiet=as_json)
    workflow_id = asyncio.run(runs.delete_run(target, run, _who(by)))
    emit(
        as_json,
        {"ok": True, "deleted": workflow_id},
        lambda: console.print(f"Deleted {workflow_id} from the list.", highlight=False),
    )


# ---------------------------------------------------------------- services
def _service_result(as_json: bool, statuses: list) -> None:
    emit(
        as_json,
        {"ok": True, "services": [s.as_dict() for s in statuses]},
        lambda: [
            console.print(
                f"{s.name}: {s.detail} (pid {s.pid or '—'}, log {s.log})", highlight=False
            )
            for s in statuses
        ],
    )


def _start_service(as_json: bool, start: Callable) -> None:
    from worker import embedded

    try:
        _service_result(as_json, [start()])
    except embedded.ServiceError as err:
        raise CommandError(str(err)) from err


def _status_result(as_json: bool, status) -> None:
    """Print a service's status; exit 1 when it is not running (scripts can test it)."""
    _service_result(as_json, [status])
    if not status.running:
        finish(FAILED)


def _stop_result(as_json: bool, stopped: bool) -> None:
    emit(
        as_json,
        {"ok": True, "stopped": stopped},
        lambda: console.print("Stopped." if stopped else "Not running."),
    )


def _embedded_target():
    options = runs.machine_options()
    target = runs.target_for(options)
    if not target.embedded:
        raise bad_input(
            f"STEWARD_TEMPORAL_ADDRESS points at {target.address}; the embedded server is not used. "
            "Unset it to manage the embedded server."
        )
    return options, target


@server_app.command("start")
@command
def server_start(as_json: JsonOpt = False) -> None:
    """Start the embedded Temporal dev server (SQLite file and web UI in Steward's data dir)."""
    from worker import embedded

    options, target = _embedded_target()
    _start_service(as_json, lambda: embedded.start_server(target, options.temporal_ui_port))


@server_app.command("stop")
@command
def server_stop(as_json: JsonOpt = False) -> None:
    """Stop the embedded Temporal dev server (its SQLite file stays)."""
    from worker import embedded

    _stop_result(as_json, embedded.stop_server())


@server_app.command("status")
@command
def server_status(as_json: JsonOpt = False) -> None:
    """Is the embedded server up? (gRPC health check)"""
    from worker import embedded

    _, target = _embedded_target()
    _status_result(as_json, embedded.server_status(target))


@worker_app.callback(invoke_without_command=True)
def worker_main(ctx: typer.Context) -> None:
    """Run the Steward worker in the foreground."""
    if ctx.invoked_subcommand is not None:
        return
    from worker.temporal_worker import serve

    options = runs.machine_options()
    target = runs.target_for(options)
    try:
        asyncio.run(serve(target))
    except KeyboardInterrupt:
        pass
    finish(OK)


@worker_app.command("start")
@command
def worker_start(as_json: JsonOpt = False) -> None:
    """Run the Steward worker detached (pid and log in Steward's data dir)."""
    from worker import embedded

    target = runs.target_for(runs.machine_options())
    _start_service(as_json, lambda: embedded.start_worker(target))


@worker_app.command("stop")
@command
def worker_stop(as_json: JsonOpt = False) -> None:
    """Stop the detached Steward worker (task workers keep running; the next worker adopts them)."""
    from worker import embedded

    _stop_result(as_json, embedded.stop_worker())


@worker_app.command("status")
@command
def worker_status(as_json: JsonOpt = False) -> None:
    """Is the detached Steward worker running?"""
    from worker import embedded

    _status_result(as_json, embedded.worker_status())


def run() -> None:
    try:
        app()
    except SystemExit as exit_:
        code = (
            exit_.code if isinstance(exit_.code, int) else (0 if exit_.code is None else BAD_INPUT)
        )
        finish(code)
