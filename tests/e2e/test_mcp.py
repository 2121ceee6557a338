"""`steward mcp` driven by the official MCP client (the `mcp` SDK's ClientSession) against a
real run: over stdio (the client spawns `steward mcp` in the workspace) and over streamable
HTTP on loopback with the bearer token (refused without it). The agent lists the tools, waits
for a decision (a sample the offline model fails), reads the sample, proposes a verdict, is
refused the operator's acts with the CLI's own sentences, hears the operator's ruling as a
resource-update notification and runs the signoff check."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import anyio
import httpx2
from mcp import ClientSession, StdioServerParameters, stdio_client, types
from mcp.client.streamable_http import streamable_http_client

from harness.helpers import Steward, free_port, make_workspace, wait_for

DECISIONS = "steward://run/decisions"
TOOLS = {
    "status", "tasks", "collect", "wait", "show_sample", "rule", "pause", "resume",
    "ramp_hold", "ramp_resume", "tend", "signoff_check", "signoff", "launch_dry_run",
}  # fmt: skip


def _launch(steward: Steward, root: Path) -> Path:
    # Event-driven tends only (a 1h timer): the failed sample's decision is raised when the
    # worker finishes, not at a tick.
    workspace = make_workspace(
        steward, root, {"alpha": 4}, tend_interval="1h", dotenv="STEWARD_OFFLINE_FAIL=alpha-2\n"
    )
    steward.ok("launch", cwd=workspace)
    return workspace


async def _call(session: ClientSession, name: str, arguments: dict | None = None) -> tuple:
    result = await session.call_tool(name, arguments or {})
    [content] = result.content
    document = json.loads(content.text)
    assert result.structured_content == document
    return document, result.is_error


def _listener(heard: list[str]):
    """A message handler keeping the URIs of the resource-update notifications heard."""

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ResourceUpdatedNotification):
            heard.append(str(message.params.uri))

    return on_message


async def _drive(
    session: ClientSession, heard: list[str], steward: Steward, workspace: Path
) -> None:
    """What an agent does with the run, through the MCP session only (the operator's ruling
    comes from the CLI, as the operator's would)."""

    listed = (await session.list_tools()).tools
    assert {t.name for t in listed} == TOOLS
    for tool in listed:
        assert tool.description and "\n" not in tool.description
        assert tool.input_schema["type"] == "object"
    rule_tool = next(t for t in listed if t.name == "rule")
    assert set(rule_tool.input_schema["required"]) == {"decision", "verdict", "reason"}
    resources = {r.uri for r in (await session.list_resources()).resources}
    assert DECISIONS in resources and "steward://run/analysis" in resources
    with warnings.catch_warnings():  # the 2025 protocol's subscribe, which this session speaks
        warnings.simplefilter("ignore")
        await session.subscribe_resource(DECISIONS)

    # Wait for the decision: each wait returns what woke it; collecting moves the cursor on.
    raised = None
    for _ in range(10):
        woke, failed = await _call(session, "wait", {"timeout": "3m"})
        assert not failed and not woke["timed_out"], woke
        seen, _ = await _call(session, "collect")
        events = woke["events"] + seen["events"]
        raised = next((e for e in events if e["event"] == "decision raised"), None)
        if raised is not None:
            break
    assert raised is not None and raised["owner"] == "agent", raised
    [decision] = [d for d in seen["decisions"] if d["id"] == raised["decision"]]
    [instance] = decision["instances"]
    assert (instance["task"], instance["sample_id"]) == ("alpha", "2")

    shown, failed = await _call(session, "show_sample", {"sample": "alpha/2"})
    assert not failed, shown
    assert "OfflineSampleFailure" in json.dumps(shown), shown

    bad, failed = await _call(session, "rule", {"decision": decision["id"], "verdict": "rerun"})
    assert failed and bad["exit_code"] == 2 and "needs reason" in bad["error"], bad
    proposed, failed = await _call(
        session,
        "rule",
        {"decision": decision["id"], "verdict": "rerun", "reason": "the provider failed once"},
    )
    assert not failed and proposed["effect"] == "proposed" and proposed["raised"], proposed
    # The operator's acts are refused with the CLI's own sentences.
    theirs, failed = await _call(
        session, "rule", {"decision": proposed["raised"], "verdict": "rerun", "reason": "mine"}
    )
    assert failed and theirs["exit_code"] == 2 and "operator's to rule" in theirs["error"]
    signoff, failed = await _call(session, "signoff")
    assert failed and signoff["exit_code"] == 2, signoff
    assert signoff["error"].startswith("Only the operator signs a run off")
    blockers, failed = await _call(session, "signoff_check")
    assert not failed, blockers
    assert proposed["raised"] in json.dumps(blockers), blockers

    # The operator rules: the subscribed agent hears of it without asking.
    await anyio.sleep(2.5)  # the proposal's own notification has come and gone
    heard.clear()
    await anyio.to_thread.run_sync(
        lambda: steward.ok("rule", proposed["raised"], "rerun", "--by", "ops", cwd=workspace)
    )
    ruled_at = time.monotonic()
    with anyio.fail_after(30):
        while DECISIONS not in heard:
            await anyio.sleep(0.1)
    print(f"ruling heard {time.monotonic() - ruled_at:.2f} s after `steward rule` returned")
    read = await session.read_resource(DECISIONS)
    now = json.loads(read.contents[0].text)
    assert proposed["raised"] not in {d["id"] for d in now["decisions"]}, now

    status, failed = await _call(session, "status")
    assert not failed and status["ok"], status


def test_an_agent_minds_a_run_over_stdio(steward: Steward, workspace_root: Path):
    workspace = _launch(steward, workspace_root)
    server = StdioServerParameters(
        command=sys.executable,
        args=["-m", "steward.cli", "mcp", "--by", "claude"],
        env=steward.env,
        cwd=str(workspace),
    )

    heard: list[str] = []

    async def agent() -> None:
        async with stdio_client(server) as (read, write):
            async with ClientSession(read, write, message_handler=_listener(heard)) as session:
                await session.initialize()
                await _drive(session, heard, steward, workspace)

    try:
        anyio.run(agent)
    finally:
        steward("cancel", "--reason", "test over", cwd=workspace, timeout=120)


def test_an_agent_minds_a_run_over_http_with_the_token(steward: Steward, workspace_root: Path):
    workspace = _launch(steward, workspace_root)
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "steward.cli", "mcp", "--http", str(port), "--by", "claude",
         "--json"],
        cwd=workspace, env=steward.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    try:
        announced = json.loads(server.stdout.readline())
        url, token = announced["url"], announced["token"]
        assert url == f"http://127.0.0.1:{port}/mcp" and len(token) >= 32

        # Without the token, or with another one, nothing reaches the server.
        hello = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
        for headers in ({}, {"Authorization": "Bearer not-the-token"}):
            refused = wait_for(lambda h=headers: _post(url, hello, h), what="the server")
            assert refused.status_code == 401, refused.text
            assert "Authorization: Bearer" in refused.json()["error"]

        heard: list[str] = []

        async def agent() -> None:
            client = httpx2.AsyncClient(
                headers={"Authorization": f"Bearer {token}"},
                timeout=httpx2.Timeout(30, read=600),
            )
            async with client, streamable_http_client(url, http_client=client) as (read, write):
                async with ClientSession(read, write, message_handler=_listener(heard)) as session:
                    await session.initialize()
                    await _drive(session, heard, steward, workspace)

        anyio.run(agent)
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        steward("cancel", "--reason", "test over", cwd=workspace, timeout=120)


def _post(url: str, body: dict, headers: dict) -> Any:
    try:
        return httpx2.post(
            url,
            json=body,
            headers={"Accept": "application/json, text/event-stream", **headers},
            timeout=10,
        )
    except httpx2.TransportError:
        return None  # not listening yet
