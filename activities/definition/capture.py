"""Resolve a definition's tasks with Inspect's capture mode, in a runner process of its own
(forked from the Steward worker's fork server when it runs there: activities/processes/runner_process.py).

Capture runs the user's script, which can hang (a download that never answers, a `input()`, a
lock): it gets `capture_timeout`, and one that overruns it is asked for its Python stack before
it and everything it started are killed, so the refusal says where it was
(activities/definition/stack_dump.py)."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

from temporalio import activity
from temporalio.exceptions import ApplicationError

from steward.activities.definition.sandbox_size import sandbox_size
from steward.activities.definition.stack_dump import where_it_was
from steward.activities.logs.paths import is_url
from steward.activities.processes.runner_launch import REFUSAL_MARK, capture_steering, runner_launch
from steward.activities.processes.runner_process import run_runner
from steward.activities.workspace.options import OptionsError, load_options
from steward.workflows.activity_io import CaptureRequest
from steward.workflows.contracts import Capture, TaskSpec
from steward.workflows.names import Activity
from steward.workflows.options import StewardOptions, format_duration
from steward.workflows.policy.capacity import SandboxSize


class DefinitionError(Exception):
    """The definition cannot be resolved; the message says why, in one sentence."""


class CaptureTimeout(DefinitionError):
    """The definition did not finish resolving within capture_timeout (it may next time: a
    failure rather than bad input); the message says where it was."""


def capture_timeout_of(workspace: str) -> float:
    """The workspace's capture_timeout, as the Steward worker reads its options (the default
    when they do not load: the command that launched the run reported that already)."""
    try:
        return load_options(Path(workspace)).capture_timeout
    except OptionsError:
        return StewardOptions().capture_timeout


def overran(definition: str, workspace: str, timeout: float, stderr: str) -> str:
    """The sentence for a definition that overran `timeout` seconds, naming where it was."""
    where = where_it_was(stderr, workspace, definition)
    place = (
        f"it was at {where}"
        if where
        else "its stack could not be read (it was still starting: Python and Inspect's imports)"
    )
    limit = format_duration(timeout)
    return (
        f"The definition {definition} did not finish resolving its tasks within {limit} "
        f"(capture_timeout); {place}. Fix the definition (it should do no slow work before "
        f"calling eval_set()), or raise capture_timeout (now {limit}) if it needs longer."
    )


def _last_error_line(stderr: str) -> str:
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    return lines[-1] if lines else "no output"


def runner_refusal(stderr: str) -> str | None:
    """The sentence the runner refused the definition with (worker/definition_runner.py)."""
    refusals = [line for line in stderr.splitlines() if line.startswith(REFUSAL_MARK)]
    return refusals[-1].removeprefix(REFUSAL_MARK).strip() if refusals else None


def sandbox_of(entry: object, workspace: str) -> tuple[str | None, SandboxSize | None]:
    """A task's sandbox type and size from its sidecar entry: a bare type (older runners) or
    {"type", "config", "task_dir"}; a task without a directory runs in the workspace."""
    if isinstance(entry, str):
        return entry, sandbox_size(entry, None, str(Path(workspace).resolve()))
    if not isinstance(entry, dict) or not entry.get("type"):
        return None, None
    kind = str(entry["type"])
    config = entry.get("config")
    if not isinstance(config, str | dict):
        config = None
    task_dir = entry.get("task_dir") or str(Path(workspace).resolve())
    return kind, sandbox_size(kind, config, task_dir)


def capture_definition_sync(
    workspace: str, definition: str, timeout: float | None = None
) -> Capture:
    """Run `definition` under INSPECT_EVAL_SET_CAPTURE in `workspace` and read its tasks, within
    `timeout` seconds (None: the workspace's capture_timeout); CaptureTimeout past it."""
    path = Path(workspace) / definition
    if not path.is_file():
        raise DefinitionError(
            f"The definition {path} does not exist; create it or name an existing file."
        )
    if timeout is None:
        timeout = capture_timeout_of(workspace)
    with tempfile.TemporaryDirectory(prefix="steward-capture-") as scratch:
        manifest = Path(scratch) / "capture.json"
        sandboxes_file = Path(scratch) / "sandboxes.json"
        command, env = runner_launch(definition, capture_steering(manifest, sandboxes_file))
        stdout, stderr_file = Path(scratch) / "stdout.log", Path(scratch) / "stderr.log"
        code = run_runner(command, env, workspace, stdout, stderr_file, timeout, dump_stack=True)
        stderr = stderr_file.read_text(errors="replace")
        if code is None:
            raise CaptureTimeout(overran(definition, workspace, timeout, stderr))
        if code != 0:
            refusal = runner_refusal(stderr)
            if refusal:
                raise DefinitionError(refusal)
            raise DefinitionError(
                f"The definition {definition} failed while resolving its tasks: "
                f"{_last_error_line(stderr)}"
            )
        if not manifest.is_file():
            raise DefinitionError(
                f"The definition {definition} ran without calling eval_set(); "
                "end it with a call to inspect_ai.eval_set(...)."
            )
        document = json.loads(manifest.read_text())
        sandboxes = json.loads(sandboxes_file.read_text()) if sandboxes_file.is_file() else {}
        connections_file = Path(f"{sandboxes_file}.connections")  # definition_runner's sidecar
        connections = json.loads(connections_file.read_text()) if connections_file.is_file() else {}
    options = document.get("options", {})
    tasks = []
    for t in document.get("tasks", []):
        sandbox, size = sandbox_of(sandboxes.get(t["identifier"]), workspace)
        tasks.append(
            TaskSpec(
                name=t["name"],
                model=t["model"],
                identifier=t["identifier"],
                registry_name=t.get("registry_name"),
                args_hash=t.get("args_hash"),
                file=t.get("file"),
                samples=t.get("samples") or 0,
                epochs=t.get("epochs") or 1,
                sandbox=sandbox,
                sandbox_size=size,
                own_connections=connections.get(t["identifier"]),
            )
        )
    if not tasks:
        raise DefinitionError(
            f"The definition {definition} resolved no tasks; pass eval_set() at least one."
        )
    log_dir = options.get("log_dir")
    if log_dir and not is_url(log_dir):
        log_dir = str((Path(workspace) / log_dir).resolve())
    return Capture(
        tasks=tasks,
        log_dir=log_dir,
        max_samples=options.get("max_samples"),
        max_sandboxes=options.get("max_sandboxes"),
        max_tasks=options.get("max_tasks"),
        cpus=os.cpu_count() or 1,
    )


@activity.defn(name=Activity.CAPTURE_DEFINITION)
def capture_definition(request: CaptureRequest) -> Capture:
    try:
        return capture_definition_sync(request.workspace, request.definition, request.timeout)
    except DefinitionError as err:
        kind = type(err).__name__  # DefinitionError, or CaptureTimeout (the CLI tells them apart)
        raise ApplicationError(str(err), type=kind, non_retryable=True) from err
