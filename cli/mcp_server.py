"""`steward mcp`: the workspace's run served to an agent over the Model Context Protocol (the
official `mcp` SDK's low-level server), on stdio or on streamable HTTP bound to 127.0.0.1 behind
a bearer token.

Tools are `steward` commands run as the agent (cli/mcp_tools.py). Resources are what an agent
keeps an eye on: the run's status, its open decisions, the journal's tail and analysis.md. A
background look at the run (its collect query and the journal's cursor, every second: queries
add nothing to the run's history) sends `notifications/resources/updated` to the clients
subscribed to a resource when it changed: decisions when one is raised, ruled or closed; status
when the phase changes (or the decisions do); the journal when it grows; analysis.md when it is
rewritten. Clients of the 2025 protocol subscribe with `resources/subscribe`; clients of the
2026-07-28 one listen with `subscriptions/listen`, and both hear the same events.
"""

from __future__ import annotations

import hmac
import json
import logging
import secrets
from collections import defaultdict
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from mcp import types
from mcp.server import Server, ServerRequestContext
from mcp.server.session import ServerSession
from mcp.server.stdio import stdio_server
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, ResourceUpdated
from mcp.shared.exceptions import MCPError
from mcp.types import INVALID_PARAMS

from steward.cli.agent_events import as_dict
from steward.cli.context import Context
from steward.cli.mcp_tools import BY_NAME, TOOLS, argument_problem, run_steward
from steward.cli.output import BAD_INPUT, CommandError
from steward.cli.run_calls import client_for, collect_view, eval_run_handle
from steward.workflows.names import SearchKey

log = logging.getLogger("steward.mcp")

STATUS, DECISIONS, JOURNAL, ANALYSIS = (
    "steward://run/status",
    "steward://run/decisions",
    "steward://run/journal",
    "steward://run/analysis",
)
RESOURCES = (
    types.Resource(
        uri=STATUS,
        name="status",
        description="Where the run stands (`steward status --json`); updated on a phase change.",
        mime_type="application/json",
    ),
    types.Resource(
        uri=DECISIONS,
        name="decisions",
        description="The open decisions, the run's phase and journal cursor; updated when a "
        "decision is raised, ruled or closed.",
        mime_type="application/json",
    ),
    types.Resource(
        uri=JOURNAL,
        name="journal",
        description="The newest journal events; updated as the journal grows.",
        mime_type="application/json",
    ),
    types.Resource(
        uri=ANALYSIS,
        name="analysis.md",
        description="The run's analysis: facts per task (kept by Steward) and your write-up.",
        mime_type="text/markdown",
    ),
)
LOOK_SECONDS = 1.0
JOURNAL_TAIL = 50
NO_EVENTS = 1 << 62  # a cursor past every event: the collect query then returns none


@dataclass
class Look:
    """What the background look saw; a change of a part notifies its resources."""

    phase: str = ""
    decisions: tuple = ()
    cursor: int = 0
    analysis: tuple = ()
    view: dict[str, Any] = field(default_factory=dict)

    def changed(self, before: Look) -> list[str]:
        """The resources to notify: the decisions document carries the phase, and status the
        open decisions, so either change touches both."""
        uris = []
        if self.decisions != before.decisions or self.phase != before.phase:
            uris += [DECISIONS, STATUS]
        if self.cursor != before.cursor:
            uris.append(JOURNAL)
        if self.analysis != before.analysis:
            uris.append(ANALYSIS)
        return uris


class RunWatch:
    """The workspace's run as the server sees it: one Temporal client, the latest run of the
    workspace's workflow id (a relaunch is followed), the subscribers to notify."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self._handle: Any = None
        self.last = Look()
        self.sessions: dict[str, set[ServerSession]] = defaultdict(set)
        self.bus = InMemorySubscriptionBus()

    async def handle(self) -> Any:
        if self._handle is None:
            self._handle = eval_run_handle(await client_for(self.ctx.target), self.ctx.workflow_id)
        return self._handle

    async def look(self) -> Look:
        """The run now: its collect view while its workflow runs, else just how it ended."""
        from temporalio.client import WorkflowExecutionStatus
        from temporalio.service import RPCError, RPCStatusCode

        analysis = self.ctx.workspace / "analysis.md"
        try:
            stat = analysis.stat()
            seen_analysis: tuple = (stat.st_mtime_ns, stat.st_size)
        except OSError:
            seen_analysis = ()
        handle = await self.handle()
        try:
            description = await handle.describe()
        except RPCError as err:
            if err.status != RPCStatusCode.NOT_FOUND:
                raise
            return Look("not launched", analysis=seen_analysis, view={"phase": "not launched"})
        if description.status != WorkflowExecutionStatus.RUNNING:
            # Ended: asking it more would replay its whole history on a worker each time. Its
            # search attribute keeps the phase in status's word (signed_off, cancelled...).
            attributes = {a.key.name: a.value for a in description.typed_search_attributes}
            status_name = description.status.name.lower() if description.status else "closed"
            phase = attributes.get(SearchKey.STATE.name) or f"ended ({status_name})"
            return Look(phase, analysis=seen_analysis, view={"phase": phase, "decisions": []})
        view = await collect_view(handle, NO_EVENTS)
        open_decisions = tuple((d["id"], d["owner"], d["routed"]) for d in view.decisions)
        document = {
            "phase": view.phase,
            "cursor": view.cursor,
            "unattended": view.unattended,
            "decisions": view.decisions,
        }
        return Look(view.phase, open_decisions, view.cursor, seen_analysis, document)

    async def keep_looking(self) -> None:
        """Notify each change the run shows, for as long as the server runs."""
        while True:
            try:
                now = await self.look()
            except Exception as err:  # noqa: BLE001 - Temporal or the worker restarting
                log.warning("could not look at the run: %s", err)
                self._handle = None
            else:
                first, before, self.last = not self.last.phase, self.last, now
                if not first:
                    for uri in now.changed(before):
                        await self.notify(uri)
            await anyio.sleep(LOOK_SECONDS)

    async def notify(self, uri: str) -> None:
        await self.bus.publish(ResourceUpdated(uri=uri))
        for session in list(self.sessions[uri]):
            try:
                await session.send_resource_updated(uri)
            except Exception:  # noqa: BLE001 - the client went away: forget it
                self.sessions[uri].discard(session)

    async def read(self, uri: str) -> tuple[str, str]:
        """(mime type, text) of a resource."""
        if uri == STATUS:
            outcome = await run_steward(self.ctx.workspace, ["status"], 120)
            return "application/json", json.dumps(outcome.document, indent=1)
        if uri == DECISIONS:
            return "application/json", json.dumps((await self.look()).view, indent=1)
        if uri == JOURNAL:
            return "application/json", json.dumps(await self.journal_tail(), indent=1)
        if uri == ANALYSIS:
            path = self.ctx.workspace / "analysis.md"
            text = path.read_text() if path.is_file() else "(no analysis.md yet)\n"
            return "text/markdown", text
        raise _no_resource(uri)

    async def journal_tail(self) -> dict[str, Any]:
        """The newest events: the journal file's, then those the run holds until its next write."""
        from steward.worker.workspace import JOURNAL as JOURNAL_FILE

        events = _last_lines(self.ctx.workspace / JOURNAL_FILE, JOURNAL_TAIL)
        if self.last.view.get("cursor") is not None:  # the run's workflow was running
            newest = events[-1]["seq"] if events else 0
            held = await collect_view(await self.handle(), newest)
            events += [as_dict(e) for e in held.events]
        events = events[-JOURNAL_TAIL:]
        return {"cursor": events[-1]["seq"] if events else 0, "events": events}


def _uris() -> list[str]:
    return [r.uri for r in RESOURCES]


def _no_resource(uri: str) -> MCPError:
    return MCPError(INVALID_PARAMS, f"No resource {uri!r}; the resources are {', '.join(_uris())}.")


def _last_lines(path: Path, count: int) -> list[dict[str, Any]]:
    try:
        with open(path, "rb") as handle:
            size = handle.seek(0, 2)
            handle.seek(max(0, size - 256 * 1024))
            lines = handle.read().decode("utf-8", errors="replace").splitlines()
    except FileNotFoundError:
        return []
    events = []
    for line in lines[-(count + 1) :]:
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if isinstance(event, dict) and isinstance(event.get("seq"), int):
            events.append(event)
    return events[-count:]


def instructions(ctx: Context, by: str) -> str:
    return (
        f"Steward minds the Inspect eval run of the workspace {ctx.workspace}. You act as the "
        f"agent {by!r}. Start with `collect` (the open decisions and what happened), then loop: "
        "`wait` until something happens, `collect`, act. Your verdict on an error class is a "
        "proposal the operator rules on; stalled tasks, approvals, cost caps and signoff are the "
        "operator's (`signoff_check` lists what blocks signoff and who clears it). Subscribe to "
        f"{DECISIONS} to hear of decisions raised or ruled. The runbook: `steward runbook`."
    )


def build_server(ctx: Context, by: str) -> tuple[Server, RunWatch]:
    watch = RunWatch(ctx)

    @asynccontextmanager
    async def lifespan(_: Server) -> AsyncIterator[dict[str, Any]]:
        async with anyio.create_task_group() as group:
            group.start_soon(watch.keep_looking)
            yield {}
            group.cancel_scope.cancel()

    async def list_tools(_: ServerRequestContext, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(
            tools=[
                types.Tool(
                    name=tool.name,
                    description=tool.description,
                    input_schema=tool.input_schema(),
                    annotations=types.ToolAnnotations(read_only_hint=tool.read_only),
                )
                for tool in TOOLS
            ]
        )

    async def call_tool(
        _: ServerRequestContext, params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        tool, arguments = BY_NAME.get(params.name), params.arguments or {}
        problem = (
            f"No tool {params.name!r}; the tools are {', '.join(BY_NAME)}."
            if tool is None
            else argument_problem(tool, arguments)
        )
        if problem is not None or tool is None:
            document, failed = {"ok": False, "error": problem, "exit_code": BAD_INPUT}, True
        else:
            outcome = await run_steward(ctx.workspace, tool.command(arguments, by), tool.seconds)
            document, failed = outcome.document, outcome.failed(tool)
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=json.dumps(document, indent=1))],
            structured_content=document,
            is_error=failed,
        )

    async def list_resources(_: ServerRequestContext, params: Any) -> types.ListResourcesResult:
        return types.ListResourcesResult(resources=list(RESOURCES))

    async def read_resource(
        _: ServerRequestContext, params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        mime, text = await watch.read(str(params.uri))
        return types.ReadResourceResult(
            contents=[types.TextResourceContents(uri=str(params.uri), mime_type=mime, text=text)]
        )

    async def subscribe(
        request: ServerRequestContext, params: types.SubscribeRequestParams
    ) -> types.EmptyResult:
        if str(params.uri) not in _uris():
            raise _no_resource(str(params.uri))
        watch.sessions[str(params.uri)].add(request.session)
        return types.EmptyResult()

    async def unsubscribe(
        request: ServerRequestContext, params: types.UnsubscribeRequestParams
    ) -> types.EmptyResult:
        watch.sessions[str(params.uri)].discard(request.session)
        return types.EmptyResult()

    from steward.worker.version import steward_version

    server = Server(
        "steward",
        version=steward_version(),
        title="Steward",
        instructions=instructions(ctx, by),
        lifespan=lifespan,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_read_resource=read_resource,
        on_subscribe_resource=subscribe,
        on_unsubscribe_resource=unsubscribe,
        on_subscriptions_listen=ListenHandler(watch.bus),
    )
    return server, watch


def serve_stdio(ctx: Context, by: str) -> None:
    server, _ = build_server(ctx, by)

    async def serve() -> None:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    anyio.run(serve)


class BearerOnly:
    """Every HTTP request must carry `Authorization: Bearer TOKEN`, else 401 and nothing
    reaches the MCP server (compared in constant time)."""

    def __init__(self, app: Any, token: str) -> None:
        self.app, self.expected = app, f"Bearer {token}".encode()

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            given = dict(scope.get("headers") or []).get(b"authorization", b"")
            if not hmac.compare_digest(given, self.expected):
                body = json.dumps(
                    {
                        "ok": False,
                        "error": "This Steward MCP server needs `Authorization: Bearer TOKEN` "
                        "(the token `steward mcp --http` printed, or STEWARD_MCP_TOKEN).",
                    }
                ).encode()
                await send(
                    {
                        "type": "http.response.start",
                        "status": 401,
                        "headers": [
                            (b"content-type", b"application/json"),
                            (b"www-authenticate", b'Bearer realm="steward"'),
                        ],
                    }
                )
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)


def serve_http(ctx: Context, by: str, port: int, token: str, announce: Any) -> None:
    """Streamable HTTP at http://127.0.0.1:PORT/mcp, loopback only (Host and Origin checked by
    the SDK against DNS rebinding), every request with the bearer token."""
    import socket

    import uvicorn

    generated = not token
    token = token or secrets.token_urlsafe(32)
    server, _ = build_server(ctx, by)
    app = BearerOnly(server.streamable_http_app(host="127.0.0.1"), token)
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listener.bind(("127.0.0.1", port))
    except OSError as err:
        listener.close()
        raise CommandError(
            f"Cannot listen on 127.0.0.1:{port} ({err.strerror or err}); pick another port with "
            "--http PORT.",
            BAD_INPUT,
        ) from err
    announce(f"http://127.0.0.1:{port}/mcp", token, generated)
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    uvicorn.Server(config).run(sockets=[listener])
