"""`steward runs`: every run the Temporal server knows, not only this workspace's, and taking
a queued or ended one off the list. The Temporal work is in cli/run_list.py."""

from __future__ import annotations

import asyncio
from typing import Annotated

import typer

from steward.cli import render
from steward.cli.context import machine_empty, ready_machine
from steward.cli.output import command, console, emit
from steward.cli.params import ByOpt, JsonOpt, who
from steward.cli.run_list import delete_run, list_hosts, list_runs


def runs_main(ctx: typer.Context, as_json: JsonOpt = False) -> None:
    """Every run the Temporal server knows: workspace, state (queued ones with their place in
    line and why), progress."""
    if ctx.invoked_subcommand is None:
        _list(as_json=as_json)


@command
def _list(as_json: bool = False) -> None:
    # Nothing stored and the server down: the list is empty without starting anything.
    rows = [] if machine_empty() else asyncio.run(list_runs(ready_machine(quiet=as_json)))
    emit(as_json, {"ok": True, "runs": rows}, lambda: render.print_runs(rows))


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
    workflow_id = asyncio.run(delete_run(ready_machine(quiet=as_json), run, who(by)))
    emit(
        as_json,
        {"ok": True, "deleted": workflow_id},
        lambda: console.print(f"Deleted {workflow_id} from the list.", highlight=False),
    )


@command
def hosts(as_json: JsonOpt = False) -> None:
    """The hosts whose Steward workers announced themselves here, and what each offers.

    Each host on this Temporal namespace: what it offers, when it was last heard, and the task
    workers of running runs on it."""
    rows = [] if machine_empty() else asyncio.run(list_hosts(ready_machine(quiet=as_json)))
    emit(as_json, {"ok": True, "hosts": rows}, lambda: render.print_hosts(rows))
