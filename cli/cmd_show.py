"""`steward show SAMPLE`: one sample of the run — its error, scores and the tail of its
transcript — without Inspect's viewer. SAMPLE is named as `collect` names a decision's
instances: `TASK/ID` or `TASK/ID@EPOCH` (the run's task name; `TASK#ID@EPOCH` too).

The log is read by `python -m steward.worker.sample_view` in a process of its own
(worker/sample_view.py says why): the CLI never imports Inspect."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from dataclasses import dataclass
from typing import Annotated, Any

import typer

from steward.cli.context import ready_context
from steward.cli.output import CommandError, bad_input, command, console, emit
from steward.cli.params import JsonOpt, WorkspaceOpt
from steward.cli.run_calls import current_status
from steward.workflows.contracts import TaskSpec

VIEW_MODULE = "steward.worker.sample_view"
VIEW_TIMEOUT_S = 120.0


@dataclass(frozen=True)
class SampleRef:
    task: str  # as the user gave it: a task name (or identifier)
    sample_id: str
    epoch: int | None  # None: the lowest epoch the log holds


def parse_sample(text: str, tasks: list[str]) -> SampleRef:
    """`TASK/ID[@EPOCH]` (or `TASK#ID[@EPOCH]`) against the run's task names and identifiers:
    the longest name followed by `/` or `#` is the task (names may hold a `/`)."""
    matches = [t for t in tasks if text.startswith((t + "/", t + "#"))]
    if not matches:
        if "/" not in text and "#" not in text:
            raise bad_input(
                f"Give SAMPLE as TASK/ID or TASK/ID@EPOCH (as `steward collect` names a "
                f"decision's instances), not {text!r}; tasks: {', '.join(sorted(set(tasks)))}."
            )
        head = text.split("#", 1)[0] if "#" in text else text.rsplit("/", 1)[0]
        raise bad_input(
            f"No task {head!r} in this run; its tasks: {', '.join(sorted(set(tasks)))}."
        )
    task = max(matches, key=len)
    rest = text[len(task) + 1 :]
    sample_id, epoch = rest, None
    if "@" in rest:
        head, tail = rest.rsplit("@", 1)
        if tail.isdigit():
            sample_id, epoch = head, int(tail)
    if not sample_id:
        raise bad_input(f"{text!r} names no sample id; give it as TASK/ID or TASK/ID@EPOCH.")
    return SampleRef(task, sample_id, epoch)


def _task_spec(ref: SampleRef, specs: list[TaskSpec], model: str | None) -> TaskSpec:
    found = [s for s in specs if ref.task in (s.name, s.identifier)]
    if model is not None:
        found = [s for s in found if s.model == model]
    if len(found) == 1:
        return found[0]
    models = ", ".join(sorted(s.model for s in found)) or "none"
    if not found:
        raise bad_input(f"No task {ref.task!r} runs model {model!r}; its models: {models}.")
    raise bad_input(f"{ref.task} runs {len(found)} models ({models}); pick one with --model.")


def read_sample(request: dict[str, Any], cwd: str) -> dict[str, Any]:
    """Run the sample view in a process of its own; its document, or its refusal as ours."""
    try:
        done = subprocess.run(
            [sys.executable, "-m", VIEW_MODULE, json.dumps(request)],
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=VIEW_TIMEOUT_S,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired as err:
        raise CommandError(f"reading the log took over {VIEW_TIMEOUT_S:g} s; try again") from err
    try:
        document = json.loads(done.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise CommandError(f"reading the log failed: {last}") from None
    if done.returncode == 2:
        raise bad_input(document["problem"])
    if done.returncode != 0 or not document.get("ok"):
        raise CommandError(f"reading the log failed: {document.get('problem', done.stderr)}")
    return document


@command
def show(
    sample: Annotated[
        str, typer.Argument(help="TASK/ID or TASK/ID@EPOCH, as `steward collect` names them.")
    ],
    messages: Annotated[
        int, typer.Option("--messages", "-n", help="How many of its last messages to show.", min=0)
    ] = 6,
    model: Annotated[
        str | None, typer.Option("--model", help="The task's model, when it runs several.")
    ] = None,
    workspace: WorkspaceOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """One sample: its error and traceback tail, scores, and its transcript's last messages."""
    ctx = ready_context(workspace, quiet=as_json)
    state = asyncio.run(current_status(ctx)).state
    specs = [t.spec for t in state.tasks]
    names = [s.name for s in specs] + [s.identifier for s in specs]
    if not specs:
        raise bad_input("The run has no tasks yet (it is still resolving them); try again soon.")
    ref = parse_sample(sample, names)
    spec = _task_spec(ref, specs, model)
    document = read_sample(
        {
            "log_dir": state.log_dir,
            "identifier": spec.identifier,
            "task": spec.name,
            "sample_id": ref.sample_id,
            "epoch": ref.epoch,
            "messages": messages,
        },
        str(ctx.workspace),
    )
    document["model"] = spec.model
    emit(as_json, document, lambda: _print(document))


def _print(document: dict[str, Any]) -> None:
    say = console.print
    where = "" if document["newest_log"] else " (not in the newest log)"
    say(
        f"[bold]{document['task']}[/] sample {document['sample_id']} epoch {document['epoch']}: "
        f"{document['status']}{where}",
        highlight=False,
    )
    say(f"log: {document['log']} ({document['log_status']})", highlight=False, soft_wrap=True)
    error = document["error"]
    if error is not None:
        retried = f" after {document['retries']} retries" if document["retries"] else ""
        say(f"[bold red]error{retried}:[/] {error['message']}", highlight=False, soft_wrap=True)
        for line in error["traceback_tail"]:
            say(f"  {line}", highlight=False, markup=False, soft_wrap=True)
    for name, score in document["scores"].items():
        answer = f" (answer: {score['answer']})" if score["answer"] else ""
        say(f"score {name}: {score['value']}{answer}", highlight=False, markup=False)
    tail = document["transcript_tail"]
    if tail:
        say(f"last {len(tail)} of {document['messages_total']} messages:", highlight=False)
    for message in tail:
        calls = "".join(
            f"\n    -> {c['function']}({c['arguments']})" for c in message.get("tool_calls", [])
        )
        say(f"  [{message['role']}] {message['text']}{calls}", markup=False, soft_wrap=True)
