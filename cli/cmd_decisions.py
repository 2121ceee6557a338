"""Commands of judgement: collect what needs deciding, rule on it, sign the run off. Rulings and
signoff are updates, so the run's own validators refuse what it cannot accept (exit 2, nothing
changed); collect reads and tells the run an agent looked."""

from __future__ import annotations

import asyncio
from typing import Annotated

import typer

from steward.cli import render
from steward.cli.context import load_context, ready_context
from steward.cli.output import FAILED, bad_input, command, console, emit, finish
from steward.cli.params import AgentOpt, ByOpt, JsonOpt, ReasonOpt, WorkspaceOpt, role, who
from steward.cli.run_calls import (
    collect_view,
    current_status,
    query_status,
    run_handle,
    update_run,
)
from steward.workflows.contracts import TERMINAL_PHASES, CollectView, CommandNote, SignoffRequest
from steward.workflows.policy.rulings import RuleRequest
from steward.workflows.run.eval_run import EvalRun
from steward.workflows.views.agent_status import blockers_of


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
    agent: AgentOpt = False,
    when_provider_answers: Annotated[
        bool,
        typer.Option(
            "--when-provider-answers",
            help="rerun only: carry it out once the tasks' model provider answers again (the "
            "run probes it: at once, then 10 s, 20 s, 40 s ... up to 5 min apart).",
        ),
    ] = False,
    workspace: WorkspaceOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Answer a decision. Invalid rulings are refused and change nothing."""
    ctx = ready_context(workspace, quiet=as_json)
    request = RuleRequest(
        decision_id=decision,
        verdict=verdict,
        reason=reason,
        by=who(by),
        role=role(agent),
        until="provider_answers" if when_provider_answers else None,
    )
    result = asyncio.run(update_run(ctx, EvalRun.rule, request))
    if result.effect == "proposed":
        said = f"proposed; the operator rules on it as {result.raised}."
    elif request.until is not None:
        said = "ruled; the run applies it once the provider answers a probe (it probes now)."
    else:
        said = "ruled; the run applies it now."
    emit(
        as_json,
        {"ok": True, **result.model_dump(mode="json"), "until": request.until},
        lambda: console.print(f"{result.decision_id}: {result.verdict} {said}", highlight=False),
    )


@command
def collect(
    since: Annotated[
        int | None,
        typer.Option(
            "--since",
            help="Events after this journal number (default: the cursor this --by name was "
            "left at by its last collect, else 0).",
        ),
    ] = None,
    by: ByOpt = "",
    workspace: WorkspaceOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Open decisions and every event since the cursor; reading consumes nothing.

    It tells the run an agent looked (agent items then stay the agent's a while longer) and
    remembers the cursor for the --by name (`collect` and `wait` without --since start there).
    """
    from steward.worker.workspace import read_cursor, read_journal, remember_cursor

    ctx = ready_context(workspace, quiet=as_json)
    name = who(by)
    remembered = read_cursor(ctx.workspace, name) if since is None else None
    since = since if since is not None else (remembered["cursor"] if remembered else 0)

    ended_as = "ended"  # the phase of a run that has ended, as its last state says it

    async def look() -> CollectView | None:
        nonlocal since, ended_as
        handle = await run_handle(ctx)
        status = await query_status(handle, ctx)
        if status.state.phase in TERMINAL_PHASES:
            ended_as = status.state.phase  # status's word for it (signed_off, cancelled...)
            return None  # an ended run: the journal on disk is the whole story
        view = await collect_view(handle, since)
        if remembered and view.cursor < since:  # a new run of the workspace numbers anew
            since = 0
            view = await collect_view(handle, since)
        # A notice, not a command: not `signal_run`, whose liveness check was just made.
        await handle.signal(EvalRun.collected, CommandNote(by=name))
        return view

    view = asyncio.run(look())
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
        "by": name,
        "since": since,
        "cursor": cursor,
        "phase": view.phase if view else ended_as,
        "decisions": view.decisions if view else [],
        "classes": view.classes if view else [],
        "policies": view.policies if view else [],
        "unattended": view.unattended if view else False,
        "events": ordered,
    }
    remember_cursor(ctx.workspace, name, cursor, document["phase"])
    emit(as_json, document, lambda: render.print_collect(document))


AGENT_SIGNOFF = (
    "Only the operator signs a run off, and this command runs as an agent (STEWARD_ROLE=agent); "
    "tell the operator the run is ready (`steward signoff --check` lists what still blocks it)."
)


@command
def signoff(
    by: Annotated[str, typer.Option("--by", help="Who signs the run off.")] = "",
    publish: Annotated[
        bool, typer.Option("--publish", help="Also copy the final logs into the log store.")
    ] = False,
    check: Annotated[
        bool,
        typer.Option(
            "--check",
            help="Change nothing: list every blocker, who owns it and the command that clears "
            "it (agents may); exit 0 when nothing blocks, 1 otherwise.",
        ),
    ] = False,
    workspace: WorkspaceOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Sign the run off: refused, listing every blocker, until it is clean.

    --check only lists the blockers (anyone may, agents included)."""
    if check:
        signoff_check(workspace, as_json)
        return
    if role(False) == "agent":
        raise bad_input(AGENT_SIGNOFF)
    if not by.strip():
        # Typer's own words for a missing option, and the way to only look.
        raise bad_input(
            "Missing option '--by': signoff needs --by NAME (who signs the run off); "
            "`steward signoff --check` lists what still blocks it."
        )
    ctx = load_context(workspace)
    if publish and not ctx.options.log_store:
        raise bad_input(
            "--publish needs a log store: set log_store in _steward.yaml or STEWARD_LOG_STORE."
        )
    ctx.ensure_services(quiet=as_json)
    result = asyncio.run(update_run(ctx, EvalRun.signoff, SignoffRequest(by=by, publish=publish)))
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


def signoff_check(workspace: WorkspaceOpt, as_json: bool) -> None:
    """`steward signoff --check`: the run's signoff blockers (one status query; the same list
    as `status --json`'s signoff_blockers and the signoff's refusal), nothing changed. Exit 0
    when nothing blocks, 1 when something does."""
    ctx = ready_context(workspace, quiet=as_json)
    status = asyncio.run(current_status(ctx))
    blockers = [b.model_dump(mode="json") for b in blockers_of(status)]
    document = {
        "ok": not blockers,
        "schema": "steward.signoff_check/1",
        "ready": not blockers,
        "phase": status.state.phase,
        "blockers": blockers,
    }
    emit(as_json, document, lambda: render.print_signoff_check(document))
    if blockers:
        finish(FAILED)
