"""What agents are given, without Temporal: the cursor each agent name keeps, the journal read
incrementally by `steward wait`, which events wake an agent and how each is said, and the MCP
tools' table (each tool's command parses with the real CLI, its arguments are checked) and the
bearer-token gate of `steward mcp --http`."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import pytest
import typer.main

from steward.activities.workspace.agent_cursors import cursor_path, read_cursor, remember_cursor
from steward.cli.agent_events import (
    SENTENCES,
    WAKE_EVENTS,
    JournalTail,
    phase_change,
    sentence,
    wakes,
)
from steward.cli.main import app
from steward.cli.mcp_tools import TOOLS, AgentTool, Outcome, argument_problem, run_steward


# ---------------------------------------------------------------- cursors
def test_each_name_keeps_its_own_cursor(tmp_path: Path):
    assert read_cursor(tmp_path, "claude") is None
    remember_cursor(tmp_path, "claude", 12, "running")
    remember_cursor(tmp_path, "codex", 3, "finished")
    assert read_cursor(tmp_path, "claude")["cursor"] == 12
    assert read_cursor(tmp_path, "codex") == {
        **read_cursor(tmp_path, "codex"),
        "by": "codex",
        "cursor": 3,
        "phase": "finished",
    }
    remember_cursor(tmp_path, "claude", 40, "finished")
    assert read_cursor(tmp_path, "claude")["cursor"] == 40
    assert sorted(p.name for p in (tmp_path / ".steward/agents").iterdir()) == sorted(
        [cursor_path(tmp_path, "claude").name, cursor_path(tmp_path, "codex").name]
    )  # no temporary file left


def test_a_name_of_any_characters_gets_a_file_of_its_own(tmp_path: Path):
    names = ["../../etc/passwd", "a b", "a/b", "", "ü" * 100]
    paths = {cursor_path(tmp_path, name) for name in names}
    assert len(paths) == len(names)
    for path in paths:
        assert path.parent == tmp_path / ".steward/agents"
        assert re.fullmatch(r"[A-Za-z0-9._-]+\.json", path.name), path.name


def test_an_unreadable_cursor_starts_from_the_beginning(tmp_path: Path):
    path = cursor_path(tmp_path, "claude")
    path.parent.mkdir(parents=True)
    for text in ("{not json", '"a string"', '{"cursor": "7"}'):
        path.write_text(text)
        assert read_cursor(tmp_path, "claude") is None


# ---------------------------------------------------------------- the journal read by wait
def _line(seq: int, event: str = "tend", **data) -> str:
    return json.dumps({"seq": seq, "at": "2026-01-01T00:00:00+00:00", "event": event, **data})


def test_the_journal_is_read_from_where_the_last_read_ended(tmp_path: Path):
    path = tmp_path / "journal.jsonl"
    tail = JournalTail(path, since=2)
    assert tail.read() == []  # no journal yet
    path.write_text("".join(_line(s) + "\n" for s in (1, 2, 3)) + "not json\n")
    assert [e["seq"] for e in tail.read()] == [3]
    assert tail.read() == []
    with open(path, "a") as out:  # a line still being written waits for its newline
        out.write(_line(4) + "\n" + _line(5)[:10])
    assert [e["seq"] for e in tail.read()] == [4]
    with open(path, "a") as out:
        out.write(_line(5)[10:] + "\n")
    assert [e["seq"] for e in tail.read()] == [5]
    path.write_text(_line(6) + "\n")  # replaced by a shorter file: read again from its start
    assert [e["seq"] for e in tail.read()] == [6]


# ---------------------------------------------------------------- what wakes an agent
def test_only_what_an_agent_acts_on_wakes_it():
    events = [
        {"seq": 1, "event": "spawned"},
        {"seq": 2, "event": "decision raised", "decision": "d-1"},
        {"seq": 3, "event": "tend"},
        {"seq": 4, "event": "worker hung", "worker": "w1"},
        {"seq": 5, "event": "scanned"},
    ]
    assert [e["seq"] for e in wakes(events)] == [2, 4, 5]


def test_a_phase_change_wakes_unless_the_journal_already_said_so():
    assert phase_change("running", "running", []) is None
    assert phase_change(None, "running", []) is None
    assert phase_change("running", "stalled", []) == {
        "event": "phase changed",
        "from": "running",
        "to": "stalled",
    }
    assert phase_change("running", "finished", [{"event": "finished"}]) is None
    assert phase_change("finished", "signed_off", [{"event": "signed off"}]) is None
    assert phase_change("ended", "signed_off", []) is None  # collect calls any ended run so


def test_every_waking_event_is_said_in_one_sentence():
    assert set(SENTENCES) == set(WAKE_EVENTS)
    for name in WAKE_EVENTS:
        said = sentence({"seq": 1, "event": name})
        assert said and "\n" not in said and "{" not in said, said
    assert (
        sentence(
            {
                "event": "proposed",
                "decision": "d-1",
                "by": "claude",
                "verdict": "rerun",
                "reason": "a blip",
                "raised": "d-2",
            }
        )
        == "d-1: claude proposed rerun (a blip); the operator rules on it as d-2."
    )
    # An event with no sentence of its own is still said in words, never as a dict.
    assert sentence({"event": "something new", "seq": 3, "worker": "w1"}) == (
        "Something new: worker w1."
    )


# ---------------------------------------------------------------- the MCP tools
EXAMPLE_ARGUMENTS = {
    "since": 3,
    "timeout": "2m",
    "sample": "alpha/2",
    "model": "steward/offline",
    "messages": 4,
    "decision": "d-1",
    "verdict": "rerun",
    "reason": "why not",
    "when_provider_answers": True,
}


def _parses(args: list[str]) -> None:
    """Parse `steward ARGS --json` as the CLI would (running nothing): the (sub)command must
    exist and take these arguments and options."""
    command, name, rest = typer.main.get_command(app), "steward", [*args, "--json"]
    while hasattr(command, "commands"):  # a group: its first argument names the command
        name, *rest = rest
        assert name in command.commands, f"steward has no command {name!r}"
        command = command.commands[name]
    command.make_context(name, rest)


@pytest.mark.parametrize("tool", TOOLS, ids=lambda t: t.name)
def test_each_tool_is_a_command_the_cli_takes(tool: AgentTool):
    assert re.fullmatch(r"[a-z_]+", tool.name)
    assert tool.description and len(tool.description) < 200
    assert set(tool.required) <= set(tool.properties)
    assert all(
        p["type"] in ("string", "integer", "boolean") and p["description"]
        for p in tool.properties.values()
    )
    schema = tool.input_schema()
    assert schema["type"] == "object" and schema["additionalProperties"] is False
    everything = {k: v for k, v in EXAMPLE_ARGUMENTS.items() if k in tool.properties}
    only_required = {k: v for k, v in everything.items() if k in tool.required}
    for arguments in (everything, only_required):
        assert argument_problem(tool, arguments) is None
        _parses(tool.command(arguments, "claude"))


def test_tool_arguments_are_refused_in_one_sentence():
    rule = next(t for t in TOOLS if t.name == "rule")
    assert argument_problem(rule, {"decision": "d-1", "verdict": "rerun"}) == (
        "rule needs reason: Why, in a sentence (kept in the journal and shown to the operator)."
    )
    assert "takes no argument 'force'" in argument_problem(
        rule, {"decision": "d-1", "verdict": "x", "reason": "r", "force": True}
    )
    collect = next(t for t in TOOLS if t.name == "collect")
    assert (
        argument_problem(collect, {"since": "3"})
        == "collect's since must be a whole number, not '3'."
    )
    assert argument_problem(collect, {"since": True}) is not None
    assert argument_problem(collect, {"since": -1}) == "collect's since must be 0 or more, not -1."
    deferred = {"decision": "d-1", "verdict": "rerun", "reason": "r"}
    assert argument_problem(rule, {**deferred, "when_provider_answers": "yes"}) == (
        "rule's when_provider_answers must be true or false, not 'yes'."
    )
    assert rule.command({**deferred, "when_provider_answers": True}, "claude")[-1] == (
        "--when-provider-answers"
    )


def test_what_counts_as_a_tool_failing():
    wait = next(t for t in TOOLS if t.name == "wait")
    check = next(t for t in TOOLS if t.name == "signoff_check")
    status = next(t for t in TOOLS if t.name == "status")
    refused = {"ok": False, "error": "No run has been launched", "exit_code": 2}
    timed_out = {"ok": False, "timed_out": True, "error": "Nothing happened", "exit_code": 3}
    assert Outcome(refused, 2).failed(status)
    assert not Outcome(timed_out, 3).failed(wait)
    assert not Outcome({"ok": False, "ready": False, "blockers": [{}]}, 1).failed(check)
    assert Outcome({"ok": False, "error": "Cannot reach Temporal", "exit_code": 1}, 1).failed(check)
    assert not Outcome({"ok": True, "error": "the sample's own error"}, 0).failed(status)


def test_a_command_the_cli_refuses_comes_back_as_its_error_document(tmp_path: Path):
    outcome = asyncio.run(run_steward(tmp_path, ["no-such-command"], 120))
    assert outcome.code == 2
    assert outcome.document["ok"] is False and "No such command" in outcome.document["error"]


# ---------------------------------------------------------------- the HTTP gate
def test_http_requests_without_the_token_get_401():
    from starlette.applications import Starlette
    from starlette.responses import PlainTextResponse
    from starlette.routing import Route
    from starlette.testclient import TestClient

    from steward.cli.mcp_server import BearerOnly

    inner = Starlette(routes=[Route("/mcp", lambda request: PlainTextResponse("in"))])
    client = TestClient(BearerOnly(inner, "s3cret"))
    for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": "s3cret"}):
        refused = client.get("/mcp", headers=headers)
        assert refused.status_code == 401 and refused.headers["www-authenticate"].startswith(
            "Bearer"
        )
        assert "Authorization: Bearer TOKEN" in refused.json()["error"]
    assert client.get("/mcp", headers={"Authorization": "Bearer s3cret"}).text == "in"
