"""Commands about the workspace itself, before or beside any run: create one, resolve what its
definition would run, and print the runbook. None of them needs Temporal."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from steward.cli import launch_plan as launching
from steward.cli import render
from steward.cli.context import load_context
from steward.cli.output import CommandError, bad_input, command, console, emit
from steward.cli.params import DefinitionArg, DefinitionKind, JsonOpt, WorkspaceOpt
from steward.cli.step_progress import timed_step


@command
def init(
    directory: Annotated[Path, typer.Argument(help="Where to create the workspace.")] = Path("."),
    force: Annotated[
        bool, typer.Option("--force", help="Overwrite an existing workspace's files.")
    ] = False,
    kind: Annotated[
        DefinitionKind,
        typer.Option(
            "--type",
            help="evalset: an eval_set() script (evalset.py); flow: an Inspect Flow config "
            "(config.py and tasks.py; needs the flow extra).",
        ),
    ] = DefinitionKind.evalset,
    as_json: JsonOpt = False,
) -> None:
    """Create a workspace: _steward.yaml, AGENTS.md, CLAUDE.md, the definition, journal, status."""
    from steward.worker.workspace import WorkspaceError, default_definition, init_workspace

    try:
        written = init_workspace(directory, force=force, kind=kind.value)
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


@command
def tasks(
    definition: DefinitionArg = None, workspace: WorkspaceOpt = None, as_json: JsonOpt = False
) -> None:
    """Resolve the definition's tasks with Inspect's capture mode (nothing runs)."""
    from steward.worker.workspace import (
        CaptureTimeout,
        DefinitionError,
        capture_definition_sync,
        default_definition,
    )

    ctx = load_context(workspace)
    definition = definition or default_definition(ctx.workspace)
    launching.refuse_unsupported(ctx, definition)
    try:
        with timed_step(f"resolving {definition} (capture)", as_json):
            capture = capture_definition_sync(
                str(ctx.workspace), definition, ctx.options.capture_timeout
            )
    except CaptureTimeout as err:  # it may resolve next time: a failure, not bad input
        raise CommandError(str(err)) from err
    except DefinitionError as err:
        raise bad_input(str(err)) from err
    emit(
        as_json,
        {"ok": True, "tasks": [t.model_dump() for t in capture.tasks], "log_dir": capture.log_dir},
        lambda: render.print_tasks(capture.tasks),
    )


@command
def runbook(as_json: JsonOpt = False) -> None:
    """The mechanics for an agent attaching to a run (ships with the package)."""
    from importlib.resources import files

    text = files("steward.cli").joinpath("runbook.md").read_text()
    # Soft-wrapped: each paragraph is one line, and the reader's terminal wraps it.
    emit(
        as_json,
        {"ok": True, "runbook": text},
        lambda: console.print(text, markup=False, highlight=False, soft_wrap=True),
    )
