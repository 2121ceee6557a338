"""Where a command stands before it talks to Temporal: the workspace (its options, the Temporal
target, the run's workflow id) or, for machine-wide commands, the options alone; and the
embedded services started when the target needs them.

`ready_context` is the prologue of every command that reaches a workspace's run. The two that
refuse bad input which only the context can reveal (launch, signoff) load it, check, then call
`Context.ensure_services`, so a refusal never waits on starting a server.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from steward.cli import render
from steward.cli.output import CommandError, bad_input, console
from steward.worker import embedded
from steward.worker.connect import Target, target_for
from steward.worker.workspace import (
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
    """The workspace's context, with the services its run lives on running."""
    ctx = load_context(workspace)
    ctx.ensure_services(quiet)
    return ctx


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
