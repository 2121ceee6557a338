"""`steward launch`: one command, four outcomes. It plans first (cli/launch_plan.py: the resolved
definition, the log store's answers, the delta against the live run), then either prints the
plan (--dry-run), rehearses the smoke (--smoke), commits the edit's delta to the live run
(the `amend` update), or starts a new run (cli/launch_start.py)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated, Any

import typer

from steward.cli import (
    launch_plan as launching,
)
from steward.cli import (
    launch_pools as pools,
)
from steward.cli import (
    launch_smoke as smoke_beside,
)
from steward.cli import (
    render,
)
from steward.cli.context import Context, load_context
from steward.cli.launch_plan import LaunchPlan
from steward.cli.launch_start import start_run
from steward.cli.output import bad_input, command, console, emit, working
from steward.cli.params import (
    ByOpt,
    DefinitionArg,
    JsonOpt,
    NoEnvCheckOpt,
    PoolsChoice,
    WorkspaceOpt,
    who,
)
from steward.cli.run_calls import current_status, refuse_oversize, update_run
from steward.workflows.contracts import RunStatus
from steward.workflows.options import run_settings
from steward.workflows.policy.delta import AmendRequest, AmendResult, gate
from steward.workflows.run.eval_run import EvalRun


@command
def launch(
    definition: DefinitionArg = None,
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
        PoolsChoice,
        typer.Option(
            "--docker-pools",
            help="When Docker's address pools are too few for the run: ask (on a terminal; else "
            "decline), accept (merge the finer pools into daemon.json) or decline (print them).",
        ),
    ] = PoolsChoice.ask,
    daemon_json: Annotated[
        Path | None, typer.Option("--daemon-json", help="The Docker daemon.json to advise on.")
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Launch the workspace's eval set as a durable run; on a live run, commit the edit's delta.

    Resolves the definition, reuses what the log store answers, smokes the new work (2 samples
    a task; beside a fresh run's start, which a failed smoke takes back), then starts the run,
    or changes the live one (only new or changed work runs; moving
    results to logs-archive/ needs --accept-archive)."""
    from steward.worker.workspace import default_definition

    ctx = load_context(workspace)
    definition = definition or default_definition(ctx.workspace)
    launching.refuse_unsupported(ctx, definition)
    if not (ctx.workspace / definition).is_file():
        raise bad_input(
            f"The definition {ctx.workspace / definition} does not exist; create it or name another file."
        )
    launching.refuse_unwritable(ctx)
    with working("starting services", as_json):
        ctx.ensure_services(quiet=as_json)
    plan = launching.make_plan(ctx, definition, quiet=as_json)
    launching.refuse_unwritable_log_dir(plan)
    refuse_oversize("The definition's capture", plan.capture)  # before the smoke or the start
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
        with working("checking the workers' credentials", as_json):
            models = [t.model for t in plan.capture.tasks]
            document["credentials"] = launching.check_credentials(ctx, models, as_json)
    smoking = bool(to_run) and (smoke_only or (ctx.options.smoke and not no_smoke))
    # A fresh run's smoke runs beside its start (cli/launch_smoke.py); others smoke first.
    beside = smoking and not smoke_only and smoke_beside.eligible(plan)

    def run_smoke(stopped: str = "nothing was launched") -> dict[str, Any]:
        with working(f"smoke run of {len(to_run)} task(s)", as_json):
            return launching.smoke(ctx, definition, to_run, accept or [], as_json, stopped)

    if smoking and not beside:
        document["smoke"] = run_smoke()
    if smoke_only:
        emit(
            as_json,
            {"ok": True, **document},
            lambda: console.print("Rehearsed; nothing was launched.", highlight=False),
        )
    elif plan.live is not None:
        with working("committing the change to the live run", as_json):
            _relaunch(ctx, plan, document, who(by), as_json)
    else:

        def start() -> RunStatus:
            with working("starting the run and its task workers", as_json):
                return asyncio.run(
                    start_run(
                        ctx,
                        definition,
                        run_settings(ctx.options),
                        who(by),
                        log_dir=plan.log_dir,
                        capture=plan.capture,
                        definition_hash=plan.definition_hash,
                        store_hits=plan.store_hits,
                        timer=not no_timer,
                    )
                )

        if beside:
            status, document["smoke"] = smoke_beside.start_beside_smoke(ctx, plan, start, run_smoke)
            status = asyncio.run(current_status(ctx))  # as it stands after the smoke
        else:
            status = start()
        _report_started(ctx, plan, status, document, docker_pools.value, daemon_json, as_json)


def _relaunch(
    ctx: Context, plan: LaunchPlan, document: dict[str, Any], by: str, as_json: bool
) -> None:
    """Commit the edit's delta to the live run; with nothing to commit, say where it stands."""
    live = plan.live
    assert live is not None
    if not plan.delta.changed and not plan.store_hits:
        emit(
            as_json,
            {"ok": True, **live.model_dump(mode="json"), **document, "amended": None},
            lambda: render.print_status(live),
        )
        return
    request = AmendRequest(
        capture=plan.capture,
        rows=plan.delta.rows,
        definition_hash=plan.definition_hash,
        store_hits=plan.store_hits,
        by=by,
    )
    result = asyncio.run(update_run(ctx, EvalRun.amend, request))
    status = asyncio.run(current_status(ctx))
    emit(
        as_json,
        {"ok": True, **status.model_dump(mode="json"), **document, "amended": result.model_dump()},
        lambda: _print_amended(plan, result, status),
    )


def _report_started(
    ctx: Context,
    plan: LaunchPlan,
    status: RunStatus,
    document: dict[str, Any],
    docker_pools: str,
    daemon_json: Path | None,
    as_json: bool,
) -> None:
    """The new run's status, then advice on Docker's address pools (which may ask)."""
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


def _print_dry_run(plan: LaunchPlan) -> None:
    if plan.live is None:
        names = ", ".join(t.name for t in plan.capture.tasks)
        console.print(
            f"Would launch a new run of {names} (logs in {plan.log_dir}).", highlight=False
        )
    launching.print_plan(plan)
    console.print("Dry run: nothing was changed.", highlight=False)


def _print_amended(plan: LaunchPlan, result: AmendResult, status: RunStatus) -> None:
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
