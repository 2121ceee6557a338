"""The services Steward runs on: the embedded Temporal dev server and the Steward worker, each
started detached (pid and log in Steward's data dir), stopped, or asked about; the worker also
in the foreground. A status exits 1 when the service is not running, so scripts can test it."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Annotated

import typer
from rich.markup import escape

from steward.cli.context import machine_options
from steward.cli.output import (
    FAILED,
    OK,
    CommandError,
    bad_input,
    command,
    console,
    emit,
    errors,
    fail,
    finish,
)
from steward.cli.params import JsonOpt
from steward.worker import embedded
from steward.worker.connect import Target, target_for
from steward.workflows.options import StewardOptions, format_duration, parse_duration

NotifyOpt = Annotated[
    bool,
    typer.Option(
        "--notify",
        help="Be the watchdog: tell the live runs' notification destinations once when "
        "supervision goes down and once when it is back (what `steward service install` "
        "runs every minute).",
    ),
]
WatchdogIntervalOpt = Annotated[
    str,
    typer.Option(
        "--watchdog-interval",
        help="How often the watchdog (`steward doctor --notify`) checks, e.g. 60s or 5m.",
    ),
]
MIN_WATCHDOG_INTERVAL_S = 10.0


def _services_result(as_json: bool, statuses: list) -> None:
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


def _start(as_json: bool, start: Callable) -> None:
    try:
        _services_result(as_json, [start()])
    except embedded.ServiceError as err:
        raise CommandError(str(err)) from err


def _status(as_json: bool, status) -> None:
    _services_result(as_json, [status])
    if not status.running:
        finish(FAILED)


def _stopped(as_json: bool, stopped: bool) -> None:
    emit(
        as_json,
        {"ok": True, "stopped": stopped},
        lambda: console.print("Stopped." if stopped else "Not running."),
    )


def _embedded_target() -> tuple[StewardOptions, Target]:
    options = machine_options()
    target = target_for(options)
    if not target.embedded:
        raise bad_input(
            f"STEWARD_TEMPORAL_ADDRESS points at {target.address}; the embedded server is not used. "
            "Unset it to manage the embedded server."
        )
    return options, target


@command
def server_start(as_json: JsonOpt = False) -> None:
    """Start the embedded Temporal dev server (SQLite file and web UI in Steward's data dir)."""
    options, target = _embedded_target()
    _start(as_json, lambda: embedded.start_server(target, options.temporal_ui_port))


@command
def server_stop(as_json: JsonOpt = False) -> None:
    """Stop the Steward worker, then the embedded Temporal dev server (its SQLite file stays).

    The worker goes first, so it is never left polling a server that is gone.
    """
    worker, server = _stop_both()
    _stopped_both(as_json, {"stopped": server, "worker_stopped": worker}, worker, server)


@command
def stop(as_json: JsonOpt = False) -> None:
    """Stop the services Steward started here: the worker, then the embedded Temporal dev server.

    Task workers keep running and runs keep their state; `steward status` (or any command that
    needs them) starts the services again, and the new worker adopts the task workers.
    """
    worker, server = _stop_both()
    _stopped_both(as_json, {"stopped": {"worker": worker, "temporal": server}}, worker, server)


def _stop_both() -> tuple[bool, bool]:
    """The worker first: stopped after the server, it would poll a server that is gone."""
    return embedded.stop_worker(), embedded.stop_server()


def _stopped_both(as_json: bool, document: dict, worker: bool, server: bool) -> None:
    emit(
        as_json,
        {"ok": True, **document},
        lambda: console.print(
            f"Steward worker: {'stopped' if worker else 'not running'}. "
            f"Temporal dev server: {'stopped' if server else 'not running'}."
        ),
    )


@command
def doctor(notify: NotifyOpt = False, as_json: JsonOpt = False) -> None:
    """Check what Steward runs on, and say what to do about each problem.

    Temporal (does it answer), the workers polling Steward's task queues (as Temporal sees
    them), ports, the data directory and versions. Exits 1 when something needs fixing.
    With --notify it is also the watchdog: it tells the live runs' Apprise destinations once
    per outage (Temporal or the Steward worker down) and once when supervision is back.
    """
    from steward.worker.doctor import examine

    options = machine_options()
    report = examine(options)
    document = report.as_dict()
    watched = None
    if notify:
        from steward.worker.watchdog import watch

        watched = watch(options, report)
        document["watchdog"] = watched.as_dict()
    emit(as_json, document, lambda: render_doctor(report, watched))
    if not report.ok:
        finish(FAILED)


def render_doctor(report, watched=None) -> None:
    """Each check on lines that fit the terminal (at most 100 columns), continued indented
    under its name; a URL or a path is never broken (one longer than the line stands alone)."""
    width = max(40, min(console.width, 100))
    for check in report.checks:
        mark = "[green]ok[/green] " if check.ok else "[red]fix[/red]"
        first, *rest = _wrapped(f"{check.name}: {check.detail}", width - 5)
        console.print(f"{mark}  {escape(first)}", highlight=False, soft_wrap=True)
        _print_lines(rest, "     ")
        if check.fix:
            first, *rest = _wrapped(check.fix, width - 8)
            _print_lines([first], "      → ")
            _print_lines(rest, "        ")
    if watched is None:
        return
    said = (
        f"; sent '{watched.notice}' to {watched.destinations} destination(s)"
        if watched.notice and watched.delivered
        else f"; '{watched.notice}' not delivered"
        if watched.notice
        else ""
    )
    first, *rest = _wrapped(f"watchdog: {watched.result}{said}", width)
    _print_lines([first], "")
    _print_lines(rest, "     ")


def _wrapped(text: str, width: int) -> list[str]:
    """`text` in lines of `width`, broken only between words (never inside a URL or path)."""
    import textwrap

    return textwrap.wrap(text, width, break_long_words=False, break_on_hyphens=False) or [""]


def _print_lines(lines: list[str], indent: str) -> None:
    for line in lines:
        console.print(indent + line, markup=False, highlight=False, soft_wrap=True)


@command
def server_status(as_json: JsonOpt = False) -> None:
    """Is the embedded server up? (gRPC health check)"""
    _, target = _embedded_target()
    _status(as_json, embedded.server_status(target))


def worker_main(ctx: typer.Context) -> None:
    """Run the Steward worker in the foreground."""
    if ctx.invoked_subcommand is not None:
        return
    from steward.worker.temporal_worker import serve

    options = machine_options()
    if options.metrics_port is not None:
        from steward.worker.log_setup import configure_worker_logging
        from steward.worker.metrics import MetricsError

        try:
            configure_worker_logging(metrics_port=options.metrics_port)
        except MetricsError as err:
            fail(CommandError(str(err)), False)
    try:
        asyncio.run(serve(target_for(options)))
    except KeyboardInterrupt:
        pass
    finish(OK)


@command
def worker_start(as_json: JsonOpt = False) -> None:
    """Run the Steward worker detached (pid and log in Steward's data dir)."""
    options = machine_options()
    target = target_for(options)
    _start(as_json, lambda: embedded.start_worker(target, options.metrics_port))


@command
def worker_stop(as_json: JsonOpt = False) -> None:
    """Stop the detached Steward worker (task workers keep running; the next worker adopts them)."""
    _stopped(as_json, embedded.stop_worker())


@command
def worker_status(as_json: JsonOpt = False) -> None:
    """Is the detached Steward worker running?"""
    _status(as_json, embedded.worker_status())


@command
def service_install(
    watchdog_interval: WatchdogIntervalOpt = "60s", as_json: JsonOpt = False
) -> None:
    """Run the server, the worker and the watchdog as services of your login.

    They are restarted on failure; the watchdog tells the runs' destinations when they are down.

    Linux: systemd user units and a timer; macOS: launchd agents. Prints what it wrote and ran,
    and what you still have to run where the service manager does not answer.
    """
    from steward.worker import service_units
    from steward.worker.connect import data_dir

    try:
        interval = parse_duration(watchdog_interval)
    except ValueError as err:
        raise bad_input(
            f"--watchdog-interval {watchdog_interval!r} is not a duration; use one such as 60s."
        ) from err
    if interval < MIN_WATCHDOG_INTERVAL_S:
        raise bad_input(
            f"--watchdog-interval {watchdog_interval} is shorter than "
            f"{format_duration(MIN_WATCHDOG_INTERVAL_S)}; a check takes a few seconds, use 10s "
            "or more."
        )
    machine_options()  # a broken options file is refused before anything is written
    try:
        outcome = service_units.install(data_dir(), watchdog_interval=interval)
    except service_units.UnitsError as err:
        raise bad_input(str(err)) from err
    _service_result(as_json, outcome, "enabled")


@command
def service_uninstall(as_json: JsonOpt = False) -> None:
    """Stop and remove the services `steward service install` wrote."""
    from steward.worker import service_units

    outcome = service_units.uninstall()
    _service_result(as_json, outcome, "removed")


def _service_result(as_json: bool, outcome, done: str) -> None:
    """What was written and run; where the service manager did not take it, exit 1 with one
    sentence saying so, why, and that the commands above are the ones to run by hand."""
    emit(as_json, {"ok": outcome.applied, **outcome.as_dict()}, lambda: _print_outcome(outcome))
    if outcome.applied:
        return
    # Launchd loads agent by agent; systemd's daemon-reload alone enables nothing.
    some = any(
        line.endswith(": ok") and "daemon-reload" not in line for line in outcome.ran
    ) or any(line.startswith("removed") for line in outcome.written)
    if not as_json:
        errors.print(
            f"{'Not everything' if some else 'Nothing'} was {done}: {outcome.reason}. "
            "Run the commands above (run:) by hand where the service manager answers.",
            highlight=False,
            soft_wrap=True,
            markup=False,
        )
    finish(FAILED)


@command
def service_status(as_json: JsonOpt = False) -> None:
    """Whether the services and the watchdog are installed and active, and what it last found."""
    from steward.worker import service_units
    from steward.worker.connect import data_dir
    from steward.worker.watchdog import load_state

    found = service_units.status()
    last = load_state(data_dir())
    found[service_units.WATCHDOG]["last_check_at"] = last.last_check_at
    found[service_units.WATCHDOG]["last_result"] = last.last_result or None

    def said(name: str, s: dict) -> str:
        line = (
            f"{name}: {'installed' if s['installed'] else 'not installed'}"
            + (f", {s['active']}" if s["active"] else "")
            + f" ({s['unit']})"
        )
        if name == service_units.WATCHDOG and s["last_check_at"]:
            line += f"; last check {s['last_check_at']:%Y-%m-%d %H:%M:%S %Z}: {s['last_result']}"
        return line

    emit(
        as_json,
        {"ok": True, "manager": service_units.manager(), "services": found},
        lambda: [
            console.print(said(name, s), highlight=False, soft_wrap=True, markup=False)
            for name, s in found.items()
        ],
    )


def _print_outcome(outcome) -> None:
    for line in outcome.written:
        console.print(
            f"wrote: {line}" if not line.startswith("removed") else line,
            highlight=False,
            soft_wrap=True,
            markup=False,
        )
    for line in outcome.ran:
        console.print(f"ran:   {line}", highlight=False, soft_wrap=True, markup=False)
    for line in outcome.todo:
        console.print(f"run:   {line}", highlight=False, soft_wrap=True, markup=False)
