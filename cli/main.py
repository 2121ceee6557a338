"""`steward`: the registration table. Every command lives in its group's module (cli/cmd_*.py);
this file only names each one and hangs it under its (sub)command, in the order `--help` lists
them."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from steward.cli import (
    cmd_agent,
    cmd_control,
    cmd_decisions,
    cmd_launch,
    cmd_runs,
    cmd_services,
    cmd_show,
    cmd_workspace,
)
from steward.cli.output import BAD_INPUT, FAILED, OK, errors, finish, refuse_usage

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
service_app = typer.Typer(
    help="The server and the worker as services of your login (systemd, launchd).",
    no_args_is_help=True,
)

COMMANDS = (  # in the order a user meets them; `--help` lists them so
    (app, "init", cmd_workspace.init),
    (app, "tasks", cmd_workspace.tasks),
    (app, "launch", cmd_launch.launch),
    (app, "status", cmd_control.status),
    (app, "tend", cmd_control.tend),
    (app, "pause", cmd_control.pause),
    (app, "resume", cmd_control.resume),
    (app, "cancel", cmd_control.cancel),
    (app, "collect", cmd_decisions.collect),
    (app, "show", cmd_show.show),
    (app, "wait", cmd_agent.wait),
    (app, "rule", cmd_decisions.rule),
    (app, "signoff", cmd_decisions.signoff),
    (app, "runbook", cmd_workspace.runbook),
    (app, "mcp", cmd_agent.mcp),
    (app, "hosts", cmd_runs.hosts),
    (app, "doctor", cmd_services.doctor),
    (app, "stop", cmd_services.stop),
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
    (service_app, "install", cmd_services.service_install),
    (service_app, "uninstall", cmd_services.service_uninstall),
    (service_app, "status", cmd_services.service_status),
)


def _print_version(value: bool) -> None:
    if value:
        from steward.worker.version import steward_version

        print(f"steward {steward_version()}")
        raise typer.Exit()


@app.callback()
def _main(
    show_version: Annotated[
        bool,
        typer.Option(
            "--version",
            callback=_print_version,
            is_eager=True,
            metavar="",  # a plain flag: Typer would show "<bool>" as if it took a value
            help="Print the version and exit.",
        ),
    ] = False,
) -> None:
    pass


# One or two examples under each command's --help.
EXAMPLES = {
    "init": "steward init ~/runs/my-evals  ·  steward init --type flow",
    "tasks": "steward tasks  ·  steward tasks evalset.py --json",
    "launch": "steward launch  ·  steward launch --dry-run  ·  steward launch --no-smoke",
    "status": "steward status  ·  steward status --wait  ·  steward status --json [--full]",
    "rule": "steward rule d-3 rerun --reason 'transient 500s'  ·  steward rule d-4 dismiss",
    "collect": "steward collect --by claude --json  ·  steward collect --since 42 --json",
    "wait": "steward wait --by claude --timeout 10m --json  ·  steward wait --since 42",
    "mcp": "claude mcp add steward -- steward mcp  ·  steward mcp --http 8765",
    "runbook": "steward runbook",
    "signoff": "steward signoff --check  ·  steward signoff --by norah [--publish]",
    "tend": "steward tend  ·  steward tend --timeout 2m",
    "pause": "steward pause --reason 'provider incident'",
    "resume": "steward resume",
    "cancel": "steward cancel --reason 'wrong model'",
    "stop": "steward stop",
    "doctor": "steward doctor  ·  steward doctor --json",
    "hosts": "steward hosts  ·  steward hosts --json",
    "runs delete": "steward runs delete ~/runs/old-evals",
    "ramp hold": "steward ramp hold --reason 'provider looks unhappy'",
    "ramp resume": "steward ramp resume",
    "timer status": "steward timer status --json",
    "timer arm": "steward timer arm --interval 5m",
    "timer disarm": "steward timer disarm",
    "server start": "steward server start",
    "worker start": "steward worker start",
    "service install": "steward service install  ·  loginctl enable-linger $USER",
}
GROUP_NAMES = {
    id(server_app): "server",
    id(worker_app): "worker",
    id(ramp_app): "ramp",
    id(timer_app): "timer",
    id(runs_app): "runs",
    id(service_app): "service",
}

for group, name, function in COMMANDS:
    path = f"{GROUP_NAMES[id(group)]} {name}" if id(group) in GROUP_NAMES else name
    example = EXAMPLES.get(path)
    group.command(name, epilog=f"Example: {example}" if example else None)(function)

# Groups that do something without a subcommand: list the runs, serve in the foreground.
runs_app.callback(invoke_without_command=True)(cmd_runs.runs_main)
worker_app.callback(invoke_without_command=True)(cmd_services.worker_main)

for group in (ramp_app, timer_app, runs_app, server_app, worker_app, service_app):
    app.add_typer(group, name=GROUP_NAMES[id(group)])


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
