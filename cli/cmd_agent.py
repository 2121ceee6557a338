"""Commands for agents minding a run: `wait` blocks until something they act on happens, and
`mcp` serves every command an agent may use over the Model Context Protocol.

`wait` polls the run's collect query (no history event, however often) and the journal file
every half second, so it returns within about a second of the event; it reads from the cursor
`steward collect --by NAME` remembered for that name, or `--since N`, and never moves it:
collecting is what says an agent has seen something."""

from __future__ import annotations

import asyncio
import json
import sys
import time
from dataclasses import dataclass, field
from typing import Annotated, Any

import typer

from steward.cli.agent_events import ENDED, JournalTail, as_dict, phase_change, sentence, wakes
from steward.cli.context import Context, load_context, ready_context
from steward.cli.output import (
    TIMED_OUT,
    CommandError,
    bad_input,
    command,
    console,
    emit,
    finish,
)
from steward.cli.params import ByOpt, JsonOpt, WorkspaceOpt, who
from steward.cli.run_calls import collect_view, run_handle
from steward.workflows.contracts import TERMINAL_PHASES
from steward.workflows.options import parse_duration

POLL_SECONDS = 0.5
MOST_EVENTS = 50  # a wait from an old cursor says the newest this many and counts the rest


@dataclass
class Woken:
    events: list[dict[str, Any]] = field(default_factory=list)
    cursor: int = 0
    phase: str = ""
    omitted: int = 0


@command
def wait(
    since: Annotated[
        int | None,
        typer.Option(
            "--since",
            help="Wake for events after this journal number (default: where `steward collect "
            "--by NAME` left off, else the beginning).",
        ),
    ] = None,
    by: ByOpt = "",
    timeout: Annotated[
        str, typer.Option("--timeout", help="Give up after this long (exit 3), e.g. 30s, 10m.")
    ] = "10m",
    workspace: WorkspaceOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Block until something an agent acts on happens after the cursor; exit 3 at the timeout.

    It wakes for a decision raised, ruled or closed, a phase change, a scan's end, a hung
    worker and the other events the README lists.
    """
    try:
        seconds = parse_duration(timeout)
    except ValueError as err:
        raise bad_input(f"--timeout {timeout!r} is not a duration; use one such as 10m.") from err
    if seconds <= 0:
        raise bad_input(f"--timeout {timeout!r} must be longer than 0; use one such as 10m.")
    ctx = ready_context(workspace, quiet=as_json)
    from steward.worker.workspace import read_cursor

    name = who(by)
    remembered = read_cursor(ctx.workspace, name) if since is None else None
    start = since if since is not None else (remembered["cursor"] if remembered else 0)
    seen_phase = remembered.get("phase") if remembered else None
    woken = asyncio.run(watch(ctx, start, seen_phase, seconds))
    document = {
        "ok": True,
        "by": name,
        "since": start,
        "events": woken.events,
        "omitted": woken.omitted,
        "cursor": woken.cursor,
        "phase": woken.phase,
        "timed_out": False,
    }
    if woken.events:
        emit(as_json, document, lambda: _say(woken))
        return
    said = f"Nothing happened within {timeout} (cursor {woken.cursor}, phase {woken.phase})."
    document.update(ok=False, timed_out=True, error=said, exit_code=TIMED_OUT)
    emit(as_json, document, lambda: console.print(said, highlight=False))
    finish(TIMED_OUT)


def _say(woken: Woken) -> None:
    if woken.omitted:
        console.print(f"({woken.omitted} earlier event(s) not shown)", highlight=False)
    for event in woken.events:
        console.print(sentence(event), highlight=False, soft_wrap=True)
    console.print(f"cursor {woken.cursor}", style="dim", highlight=False)


async def watch(ctx: Context, since: int, seen_phase: str | None, seconds: float) -> Woken:
    """Poll until something an agent acts on happened after `since` (or the phase is not
    `seen_phase`), or `seconds` passed (then: no events)."""
    from steward.worker.workspace import JOURNAL

    handle = await run_handle(ctx)
    deadline = time.monotonic() + seconds
    tail = JournalTail(ctx.workspace / JOURNAL, since)
    found: dict[int, dict[str, Any]] = {}  # seq -> a waking event
    cursor, first, failure = since, True, None
    while True:
        try:
            view = await collect_view(handle, since)
        except Exception as err:  # noqa: BLE001 - the worker may be restarting: keep looking
            failure = err
        else:
            failure = None
            if first and view.cursor < since:
                # The workspace's run started again (a new launch numbers its journal anew).
                since, cursor, seen_phase = 0, 0, None
                tail = JournalTail(ctx.workspace / JOURNAL, 0)
            if first:
                seen_phase = seen_phase or view.phase
                first = False
            fresh = tail.read() + [as_dict(e) for e in view.events if e.seq > since]
            for event in fresh:
                cursor = max(cursor, event["seq"])
            for event in wakes(fresh):
                found.setdefault(event["seq"], event)
            cursor = max(cursor, view.cursor)
            events = [found[seq] for seq in sorted(found)]
            change = phase_change(seen_phase, view.phase, events)
            if change is not None:
                events.append(change)
            if events:
                shown = events[-MOST_EVENTS:]
                return Woken(shown, cursor, view.phase, len(events) - len(shown))
            if view.phase in TERMINAL_PHASES or seen_phase == ENDED:
                raise bad_input(
                    f"The run of {ctx.workspace} has ended ({view.phase}): nothing more will "
                    "happen; `steward collect` shows what it did."
                )
        left = deadline - time.monotonic()
        if left <= 0:
            if failure is not None:
                raise CommandError(f"The run did not answer while waiting: {failure}")
            return Woken([], cursor, view.phase if not first else "")
        await asyncio.sleep(min(POLL_SECONDS, left))


@command
def mcp(
    http: Annotated[
        int | None,
        typer.Option(
            "--http",
            help="Serve streamable HTTP on 127.0.0.1:PORT (bearer token required) instead of "
            "stdio.",
        ),
    ] = None,
    token: Annotated[
        str,
        typer.Option(
            "--token",
            envvar="STEWARD_MCP_TOKEN",
            help="The bearer token HTTP clients must send (default: STEWARD_MCP_TOKEN, else a "
            "new one, printed once).",
            show_default=False,
        ),
    ] = "",
    by: Annotated[
        str, typer.Option("--by", help="The name the agent's tools act and collect as.")
    ] = "agent",
    workspace: WorkspaceOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Serve this workspace's run to an agent over MCP (stdio; --http PORT for HTTP)."""
    if http is not None and not 0 < http < 65536:
        raise bad_input(f"--http {http} is not a port; use one from 1 to 65535.")
    if not by.strip():
        raise bad_input("--by needs a name (the agent's, recorded with what it does).")
    ctx = load_context(workspace)
    ctx.ensure_services(quiet=True)  # stdout is the protocol's on stdio: nothing may be printed
    from steward.cli import mcp_server

    if http is None:
        mcp_server.serve_stdio(ctx, by)
        return
    mcp_server.serve_http(ctx, by, http, token, announce=_announcer(as_json))


def _announcer(as_json: bool):
    """Say where the HTTP server listens, once it does: with --json one JSON line (the server
    runs on, so its reader takes the first line), else two lines for a person."""

    def announce(url: str, token: str, generated: bool) -> None:
        shown = token if generated else None  # a token given is never echoed
        if as_json:
            document = {"ok": True, "transport": "streamable-http", "url": url, "token": shown}
            sys.stdout.write(json.dumps(document) + "\n")
        else:
            console.print(f"Steward MCP server for this workspace at {url}", highlight=False)
            console.print(
                f"bearer token (shown once; or set STEWARD_MCP_TOKEN): {token}"
                if generated
                else "bearer token: the one given (--token or STEWARD_MCP_TOKEN)",
                highlight=False,
                soft_wrap=True,
            )
        sys.stdout.flush()  # the server runs on: whoever started it reads this now

    return announce
