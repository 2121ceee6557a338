"""Where a command stands before it talks to Temporal: the workspace (its options, the Temporal
target, the run's workflow id) or, for machine-wide commands, the options alone; and the
embedded services started when the target needs them.

`ready_context` is the prologue of every command that reaches a workspace's run. The two that
refuse bad input which only the context can reveal (launch, signoff) load it, check, then call
`Context.ensure_services`, so a refusal never waits on starting a server.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from steward.cli import render
from steward.cli.output import CommandError, bad_input, console
from steward.worker import deleted_runs, embedded
from steward.worker.connect import Target, target_for
from steward.worker.workspace import (
    JOURNAL,
    OptionsError,
    WorkspaceError,
    find_workspace,
    load_connection_options,
    load_options,
    workflow_id_for,
)
from steward.workflows.options import StewardOptions


@dataclass
class Context:
    workspace: Path
    options: StewardOptions
    target: Target
    workflow_id: str

    def ensure_services(self, quiet: bool) -> None:
        ensure_services(self.target, self.options, quiet)


def load_context(workspace: Path | None) -> Context:
    try:
        root = find_workspace(workspace or Path.cwd())
        options = load_options(root, sendable=True)  # refused here if a value cannot travel
    except (WorkspaceError, OptionsError) as err:
        raise bad_input(str(err)) from err
    return Context(root, options, target_for(options), _workflow_id(root))


def _workflow_id(root: Path) -> str:
    """The run's workflow id, from the id the workspace keeps (made on first use)."""
    try:
        return workflow_id_for(root)
    except OSError as err:
        raise bad_input(
            f"The workspace {root} cannot be written ({err.strerror or err}: "
            f"{err.filename or root}); make it writable: the run keeps its id, journal and "
            "status there."
        ) from err


def ready_context(workspace: Path | None, quiet: bool) -> Context:
    """The workspace's context, with the services its run lives on running; refused without
    starting them when there is plainly no run to reach (`nothing_there`)."""
    ctx = load_context(workspace)
    refusal = nothing_there(ctx)
    if refusal:
        raise bad_input(refusal)
    ctx.ensure_services(quiet)
    return ctx


def nothing_there(ctx: Context) -> str | None:
    """Why the workspace has no run to reach, when that is known without Temporal (None: ask
    Temporal). With the embedded server down, starting it and the worker only to say so would
    leave two processes running for nothing: the server holds no runs at all, this workspace's
    run was deleted from the list here and nothing was journalled since (a launch since would
    have), or the workspace has never journalled a thing (every launch does). With the server
    up, Temporal is asked (and the run calls read past runs deleted here: run_calls.py)."""
    if not ctx.target.embedded or embedded.server_running():
        return None
    try:
        journal = (ctx.workspace / JOURNAL).stat()
    except OSError:
        journal = None
    deleted = deleted_runs.deleted_at(ctx.workflow_id)
    if deleted is not None and (
        journal is None or datetime.fromtimestamp(journal.st_mtime, UTC) <= deleted
    ):
        return (
            f"The run of {ctx.workspace} was deleted from the list (`steward runs delete`); "
            "start a new one with `steward launch`."
        )
    if not embedded.holds_runs() or journal is None or journal.st_size == 0:
        return f"No run has been launched from {ctx.workspace}; start one with `steward launch`."
    return None


def stopping_context(workspace: Path | None, quiet: bool) -> tuple[Context, str | None]:
    """`cancel`'s prologue: cancel must always work, so options that cannot be read (a broken
    `_steward.yaml`, a bad STEWARD_* value) do not stop it. Their Temporal connection options
    alone then find the run; also returns why the options could not be read (None: they could)."""
    try:
        root = find_workspace(workspace or Path.cwd())
    except WorkspaceError as err:
        raise bad_input(str(err)) from err
    problem = None
    try:
        options = load_options(root)
    except OptionsError as err:
        problem = str(err)
        try:
            options = load_connection_options(root)
        except OptionsError as bad:
            raise bad_input(f"{bad} The run cannot be found without it.") from bad
    ctx = Context(root, options, target_for(options), _workflow_id(root))
    ctx.ensure_services(quiet)
    return ctx, problem


def machine_options(start: Path | None = None) -> StewardOptions:
    """Options outside any particular run: the workspace's if we are in one, else env/.env."""
    base = (start or Path.cwd()).resolve()
    try:
        base = find_workspace(base)
    except WorkspaceError:
        pass
    try:
        return load_options(base)
    except OptionsError as err:
        raise bad_input(str(err)) from err


def ready_machine(quiet: bool) -> Target:
    """The Temporal target of machine-wide commands, its services running."""
    options = machine_options()
    target = target_for(options)
    ensure_services(target, options, quiet)
    return target


def machine_empty() -> bool:
    """The embedded default's server is down and has never stored a run: a machine-wide list
    is empty, said without starting the server and the worker."""
    target = target_for(machine_options())
    return target.embedded and not embedded.server_running() and not embedded.holds_runs()


def ensure_services(target: Target, options: StewardOptions, quiet: bool) -> None:
    """Start the embedded server and worker when they are needed and not running."""
    try:
        started = embedded.ensure_services(target, options.temporal_ui_port, options.metrics_port)
    except embedded.ServiceError as err:
        raise CommandError(str(err)) from err
    if started and not quiet:
        console.print(f"Started {' and '.join(started)}.", highlight=False)
        if target.ui_url:
            render.print_link("Temporal web UI", target.ui_url)
