"""The tools `steward mcp` offers an agent: each one `steward` command of this workspace, run as
the agent (`STEWARD_ROLE=agent`, `--by` its name) with `--json`, its JSON document returned as
it is. So a tool says and refuses exactly what the command says and refuses (an operator's
decision, a signoff), and there is one implementation of each act, the CLI's."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from steward.cli.output import FAILED, OK, TIMED_OUT

Arguments = dict[str, Any]


@dataclass(frozen=True)
class AgentTool:
    name: str
    description: str
    command: Callable[[Arguments, str], list[str]]  # (arguments, agent name) -> steward's args
    properties: dict[str, dict[str, Any]]
    required: tuple[str, ...] = ()
    read_only: bool = False
    ok_codes: frozenset[int] = frozenset({OK})
    seconds: float = 900.0  # the command is stopped after this long (tend waits 5m at most)

    def input_schema(self) -> dict[str, Any]:
        return {
            "type": "object",
            "properties": self.properties,
            "required": list(self.required),
            "additionalProperties": False,
        }


def _text(description: str) -> dict[str, Any]:
    return {"type": "string", "description": description}


def _number(description: str) -> dict[str, Any]:
    return {"type": "integer", "minimum": 0, "description": description}


REASON = _text("Why, in a sentence (kept in the journal and shown to the operator).")
SINCE = _number(
    "Journal cursor to start after (default: where your last collect left off, by your name)."
)


def _since(arguments: Arguments) -> list[str]:
    return ["--since", str(arguments["since"])] if "since" in arguments else []


TOOLS: tuple[AgentTool, ...] = (
    AgentTool(
        "status",
        "Where the run stands: phase, progress per task, open decisions, last and next tend.",
        lambda a, by: ["status"],
        {},
        read_only=True,
    ),
    AgentTool(
        "tasks",
        "The tasks the workspace's definition resolves to (task, model, samples x epochs); "
        "runs nothing.",
        lambda a, by: ["tasks"],
        {},
        read_only=True,
    ),
    AgentTool(
        "collect",
        "Open decisions, error classes, standing policies and the journal events after your "
        "cursor; tells the run an agent is looking and remembers the new cursor for you.",
        lambda a, by: ["collect", "--by", by, *_since(a)],
        {"since": SINCE},
    ),
    AgentTool(
        "wait",
        "Block until a decision is raised or ruled, the phase changes, a scan ends or a worker "
        "hangs after your cursor; returns those events, or timed_out after the timeout.",
        lambda a, by: ["wait", "--by", by, "--timeout", a.get("timeout", "5m"), *_since(a)],
        {"timeout": _text("How long to wait at most, with a unit (default 5m)."), "since": SINCE},
        read_only=True,
        ok_codes=frozenset({OK, TIMED_OUT}),
        seconds=24 * 3600.0,  # the command's own --timeout ends it
    ),
    AgentTool(
        "show_sample",
        "One sample's error and traceback tail, scores and its transcript's last messages, "
        "from its task's newest log.",
        lambda a, by: [
            "show",
            a["sample"],
            *(["--model", a["model"]] if "model" in a else []),
            *(["--messages", str(a["messages"])] if "messages" in a else []),
        ],
        {
            "sample": _text("TASK/ID or TASK/ID@EPOCH, as collect names the sample."),
            "model": _text("The task's model, when the task runs several."),
            "messages": _number("How many of its last messages to show (default 6)."),
        },
        required=("sample",),
        read_only=True,
    ),
    AgentTool(
        "rule",
        "Give your verdict on a decision as an agent. On an error class it is a proposal the "
        "operator rules on; decisions that are the operator's are refused.",
        lambda a, by: [
            "rule",
            a["decision"],
            a["verdict"],
            "--agent",
            "--by",
            by,
            "--reason",
            a["reason"],
            *(["--when-provider-answers"] if a.get("when_provider_answers") else []),
        ],  # fmt: skip
        {
            "decision": _text("The decision's id, e.g. d-3."),
            "verdict": _text("One of the decision's verdicts (collect lists them)."),
            "reason": REASON,
            "when_provider_answers": {
                "type": "boolean",
                "description": "rerun only: carry it out once the provider answers again "
                "(for samples a provider outage failed).",
            },
        },
        required=("decision", "verdict", "reason"),
    ),
    AgentTool(
        "pause",
        "Stop scheduling new work; running workers finish.",
        lambda a, by: ["pause", "--by", by, "--reason", a["reason"]],
        {"reason": REASON},
        required=("reason",),
    ),
    AgentTool(
        "resume",
        "Schedule work again after a pause; the run tends at once.",
        lambda a, by: ["resume", "--by", by],
        {},
    ),
    AgentTool(
        "ramp_hold",
        "Freeze the climb of sample concurrency (cuts on provider pushback still happen).",
        lambda a, by: ["ramp", "hold", "--by", by, "--reason", a["reason"]],
        {"reason": REASON},
        required=("reason",),
    ),
    AgentTool(
        "ramp_resume",
        "Let sample concurrency climb again after a hold.",
        lambda a, by: ["ramp", "resume", "--by", by],
        {},
    ),
    AgentTool(
        "tend",
        "Have the run take a turn now (observe, respawn, triage) and return what it did.",
        lambda a, by: ["tend", "--timeout", a.get("timeout", "5m")],
        {"timeout": _text("How long to wait for the tend, with a unit (default 5m).")},
    ),
    AgentTool(
        "signoff_check",
        "Every blocker between the run and its signoff, who owns it and the command that "
        "clears it. Signing off is the operator's.",
        lambda a, by: ["signoff", "--check"],
        {},
        read_only=True,
        ok_codes=frozenset({OK, FAILED}),  # exit 1: something blocks (the document says what)
    ),
    AgentTool(
        "signoff",
        "The operator's act: refused to an agent, with what to tell the operator. Use "
        "signoff_check to see what still blocks it.",
        lambda a, by: ["signoff", "--by", by],
        {},
    ),
    AgentTool(
        "launch_dry_run",
        "What `steward launch` would do now (the delta against the live run, log-store hits); "
        "changes nothing.",
        lambda a, by: ["launch", "--dry-run"],
        {},
        read_only=True,
    ),
)
BY_NAME = {tool.name: tool for tool in TOOLS}


@dataclass
class Outcome:
    document: dict[str, Any]
    code: int

    def failed(self, tool: AgentTool) -> bool:
        """An exit code the tool does not expect, or the error document a command prints when
        it fails or is refused (it names its exit code; `wait`'s timeout is not a failure)."""
        if self.code not in tool.ok_codes:
            return True
        said_failure = "exit_code" in self.document and not self.document.get("timed_out")
        return self.code != OK and said_failure


async def run_steward(workspace: Path, args: list[str], seconds: float) -> Outcome:
    """`steward ARGS --json` in the workspace, as an agent: its JSON document and exit code. A
    command that printed no JSON (it crashed) gives its last output as the error; one that
    overruns `seconds` (or whose caller gave up) is killed."""
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "steward.cli", *args, "--json",
        cwd=workspace,
        env={**os.environ, "STEWARD_ROLE": "agent"},
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        start_new_session=True,
    )  # fmt: skip
    try:
        out, err = await asyncio.wait_for(process.communicate(), seconds)
    except BaseException:  # timed out, or the request was cancelled: leave nothing behind
        if process.returncode is None:
            process.kill()
            await process.wait()
        raise
    code = process.returncode or 0
    try:
        document = json.loads(out)
    except ValueError:
        said = (err or out).decode(errors="replace").strip().splitlines()
        document = {"ok": False, "error": said[-1] if said else f"exited {code}"}
    if not isinstance(document, dict):
        document = {"ok": code == OK, "result": document}
    return Outcome(document, code)


def argument_problem(tool: AgentTool, arguments: Arguments) -> str | None:
    """What is wrong with the arguments, as the one sentence a refused command says."""
    for name in arguments:
        if name not in tool.properties:
            known = ", ".join(tool.properties) or "none"
            return f"{tool.name} takes no argument {name!r} (its arguments: {known})."
    for name in tool.required:
        if name not in arguments or arguments[name] in ("", None):
            return f"{tool.name} needs {name}: {tool.properties[name]['description']}"
    for name, value in arguments.items():
        kind = tool.properties[name]["type"]
        if kind == "integer" and (isinstance(value, bool) or not isinstance(value, int)):
            return f"{tool.name}'s {name} must be a whole number, not {value!r}."
        if kind == "integer" and value < 0:
            return f"{tool.name}'s {name} must be 0 or more, not {value}."
        if kind == "string" and not isinstance(value, str):
            return f"{tool.name}'s {name} must be a string, not {value!r}."
        if kind == "boolean" and not isinstance(value, bool):
            return f"{tool.name}'s {name} must be true or false, not {value!r}."
    return None
