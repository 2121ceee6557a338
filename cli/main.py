"""`steward`: the registration table. Every command lives in its group's module (cli/cmd_*.py);
this file only names each one and hangs it under its (sub)command, in the order `--help` lists
them."""

from __future__ import annotations

import sys

import typer

from . import cmd_control, cmd_decisions, cmd_launch, cmd_runs, cmd_services, cmd_workspace
from .output import BAD_INPUT, FAILED, OK, errors, finish, refuse_usage

app = typer.Typer(
    help="Steward: durable supervision of long Inspect AI eval runs on Temporal.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
server_app = typer.Typer(help="The embedded Temporal dev server.", no_args_is_help=True)
worker_app = typer.Typer(help="The Steward worker (foreground without a subcommand).")
ramp_app = typer.Typer(help="The automatic ramp of sample concurrency.", no_args_is_help=True)
timer_app = typer.Typer(help="The run's own tend timer.", no_args_is_help=True)
runs_app = typer.Typer(help="Every run the Temporal server knows (list without a subcommand).")

COMMANDS = (
    (app, "init", cmd_workspace.init),
    (app, "tasks", cmd_workspace.tasks),
    (app, "launch", cmd_launch.launch),
    (app, "status", cmd_control.status),
    (app, "rule", cmd_decisions.rule),
    (app, "collect", cmd_decisions.collect),
    (app, "runbook", cmd_workspace.runbook),
    (app, "signoff", cmd_decisions.signoff),
    (app, "tend", cmd_control.tend),
    (app, "pause", cmd_control.pause),
    (app, "resume", cmd_control.resume),
    (app, "cancel", cmd_control.cancel),
    (ramp_app, "hold", cmd_control.ramp_hold),
    (ramp_app, "resume", cmd_control.ramp_resume),
    (timer_app, "status", cmd_control.timer_status),
    (timer_app, "arm", cmd_control.timer_arm),
    (timer_app, "disarm", cmd_control.timer_disarm),
    (runs_app, "delete", cmd_runs.runs_delete),
    (server_app, "start", cmd_services.server_start),
    (server_app, "stop", cmd_services.server_stop),
    (server_app, "status", cmd_services.server_status),
    (worker_app, "start", cmd_services.worker_start),
    (worker_app, "stop", cmd_services.worker_stop),
    (worker_app, "status", cmd_services.worker_status),
)
for group, name, function in COMMANDS:
    group.command(name)(function)

# Groups that do something without a subcommand: list the runs, serve in the foreground.
runs_app.callback(invoke_without_command=True)(cmd_runs.runs_main)
worker_app.callback(invoke_without_command=True)(cmd_services.worker_main)

for group, name in (
    (server_app, "server"),
    (worker_app, "worker"),
    (ramp_app, "ramp"),
    (timer_app, "timer"),
    (runs_app, "runs"),
):
    app.add_typer(group, name=name)


def run() -> None:
    try:
        # Not standalone: Click's usage errors come back here, where --json can answer them.
        code = app(standalone_mode=False)
    except typer.TyperException as err:  # Click's errors (Typer vendors Click)
        refuse_usage(err, sys.argv[1:])
    except typer.Abort:
        errors.print("Aborted.")
        finish(FAILED)
    except SystemExit as exit_:
        code = (
            exit_.code if isinstance(exit_.code, int) else (0 if exit_.code is None else BAD_INPUT)
        )
    finish(code if isinstance(code, int) else OK)
