"""The smoke run `steward launch` does first: a few samples of every task, under a wall-clock cap.

It runs in the Steward worker of the workspace's host (workflows/prelaunch/preflight.py). One process,
forked from the worker's fork server when it is warm, runs the definition in Inspect's
selection mode (started as a per-task worker is, see activities/processes/runner_launch.py) with every
given task selected, `limit` samples each and its logs in `<workspace>/.steward/smoke/<stamp>/`,
apart from the run's. Its logs then say, per task,
whether configuration, infrastructure and model access work; each failure is classified as a
`model`, `sandbox`, `task`, `timeout` or `definition` check. An eval failure never raises: it is
what the result reports.
"""

from __future__ import annotations

import json
import re
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from temporalio import activity

from steward.activities.processes.runner_launch import (
    runner_launch,
    selection_document,
    worker_steering,
)
from steward.activities.processes.runner_process import run_runner
from steward.workflows.activity_io import SelectedTask
from steward.workflows.contracts import TaskSpec
from steward.workflows.names import Activity
from steward.workflows.policy.layout import smoke_dir_of
from steward.workflows.prelaunch.preflight import (  # noqa: F401  (re-exported: the smoke's whole interface)
    CHECK_KINDS,
    CheckKind,
    SmokeCheck,
    SmokeRequest,
    SmokeResult,
    describe,
    waived,
)

# ---------- classifying an error ----------
# An error in the sandbox machinery: Inspect's sandbox package in the traceback, or words only
# a sandbox provider says. Checked before the model patterns, since a Docker daemon's
# "permission denied" or "connection refused" is not the model's.
_SANDBOX = re.compile(
    r"inspect_ai[/.]util[/.]_sandbox|\bsandbox|\bdocker\b|docker[ -]?compose|\bcompose\b"
    r"|\bkubernetes\b|\bk8s\b|\bhelm\b|\bpodman\b",
    re.IGNORECASE,
)
# Model access: credentials, authorization, reaching the provider, naming a model it knows.
_MODEL = re.compile(
    r"api[_ -]?key|authenticat|unauthori[sz]ed|\b401\b|\b403\b|forbidden|permission ?denied"
    r"|access denied|invalid[_ ]?(?:api|credentials|token)|credentials"
    r"|connection refused|connect(?:ion)?error|apiconnectionerror|connection error"
    r"|failed to connect|name or service not known|nodename nor servname|temporary failure in name"
    r"|no model provider|model api \S+ of model .* not recognized|unknown model|model[_ ]not[_ ]found"
    r"|\bmodel\b[^.\n]{0,60}(?:does not exist|not found)|defined in the environment"
    r"|environment variable .*(?:not set|missing|required)"
    # a provider's constructor failing: its configuration or credentials
    r"|inspect_ai/model/_providers/[^\"]+\", line \d+, in __init__",
    re.IGNORECASE,
)
_MARKUP = re.compile(r"\[/?(?:bold|blue|red|green|yellow|italic|dim|link[^\]]*)\]")


def classify(message: str, traceback: str = "") -> Literal["model", "sandbox", "task"]:
    """The check an error belongs to, from its message and (the tail of) its traceback."""
    text = f"{message}\n{_traceback_tail(traceback)}"
    if _SANDBOX.search(text):
        return "sandbox"
    if _MODEL.search(text):
        return "model"
    return "task"


def _traceback_tail(traceback: str, frames: int = 6) -> str:
    """The last frames and the exception line: where the error came from, not the eval loop."""
    lines = [line for line in traceback.splitlines() if line.strip()]
    return "\n".join(lines[-frames * 2 :])


def _clean(message: str, width: int = 300) -> str:
    text = " ".join(_MARKUP.sub("", message).split())
    return text if len(text) <= width else text[: width - 1] + "…"


_EXCEPTION_LINE = re.compile(r"^([\w.]*(?:Error|Exception|Exit|Interrupt)\w*)(?::\s*(.*))?$")


def stderr_error(stderr: str) -> tuple[str, str]:
    """(what failed, its traceback) from a failed process's stderr: the last exception, its
    type's short name with its message (which may run over several lines), else the last line."""
    lines = [_MARKUP.sub("", line).rstrip() for line in stderr.splitlines()]
    lines = [line for line in lines if line.strip()]
    for index in range(len(lines) - 1, -1, -1):
        found = _EXCEPTION_LINE.match(lines[index].strip())
        if found and not lines[index].startswith(" "):
            kind = found.group(1).rsplit(".", 1)[-1]
            text = " ".join(
                [(found.group(2) or "").strip(), *(line.strip() for line in lines[index + 1 :])]
            ).strip()
            text = re.sub(r"^ERROR:\s*", "", text)
            return f"{kind}: {text}" if text else kind, "\n".join(lines[: index + 1])
    return (lines[-1].strip() if lines else ""), ""


# ---------- running ----------
def _new_smoke_dir(workspace: str) -> Path:
    root = Path(smoke_dir_of(workspace))
    root.mkdir(parents=True, exist_ok=True)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    for n in range(1000):
        path = root / (stamp if n == 0 else f"{stamp}-{n}")
        try:
            path.mkdir()
            return path
        except FileExistsError:
            continue
    raise RuntimeError(f"cannot create a smoke directory under {root}")


def _selection(tasks: list[TaskSpec], eval_set_id: str, log_dir: str, limit: int) -> dict:
    selected = [
        SelectedTask(
            identifier=spec.identifier,
            registry_name=spec.registry_name or None,
            args_hash=spec.args_hash or None,
        )
        for spec in tasks
    ]
    overrides = {
        "log_dir": log_dir,
        "limit": limit,
        "max_samples": max(4, limit * len(tasks)),
        # All at once: in selection mode Inspect runs one task at a time unless told (measured:
        # four tasks' smoke 10-12 s one after another, 4-6 s together).
        "max_tasks": len(tasks),
    }
    return selection_document(eval_set_id, selected, overrides)


def run_smoke(
    workspace: str,
    definition: str,
    tasks: list[TaskSpec],
    limit: int = 2,
    time_cap: float = 300.0,
    eval_set_id: str = "smoke",
) -> SmokeResult:
    """Run `limit` samples of each of `tasks` in one process, within `time_cap` seconds, and
    report what failed. Never raises for an eval's failure."""
    smoke_dir = _new_smoke_dir(workspace)
    runner_dir = smoke_dir / "runner"  # not a log: kept out of the log listing
    runner_dir.mkdir()
    selection = runner_dir / "selection.json"
    selection.write_text(
        json.dumps(_selection(tasks, eval_set_id, str(smoke_dir.resolve()), limit), indent=1)
    )
    stdout_path, stderr_path = runner_dir / "stdout.log", runner_dir / "stderr.log"
    command, env = runner_launch(definition, worker_steering(selection.resolve(), workspace))

    started = time.monotonic()
    returncode = run_runner(command, env, workspace, stdout_path, stderr_path, time_cap)
    timed_out = returncode is None
    seconds = time.monotonic() - started
    stderr = stderr_path.read_text(errors="replace")

    checks, completed = _judge(tasks, smoke_dir, timed_out, returncode, stderr, time_cap)
    return SmokeResult(
        ok=not checks,
        checks=checks,
        tasks=[spec.name for spec in tasks],
        log_dir=str(smoke_dir),
        seconds=round(seconds, 2),
        samples=completed,
    )


@activity.defn(name=Activity.SMOKE_TASKS)
def smoke_tasks(request: SmokeRequest) -> SmokeResult:
    """The smoke, run on the workspace's host for `steward launch` (workflows/prelaunch/preflight.py)."""
    return run_smoke(
        request.workspace,
        request.definition,
        request.tasks,
        limit=request.limit,
        time_cap=request.time_cap,
    )


# ---------- reading the logs ----------
def _logs_by_identifier(log_dir: Path) -> dict[str, list[str]]:
    """task identifier -> its logs in `log_dir`, newest first."""
    from inspect_ai._eval.evalset import task_identifier
    from inspect_ai.log import list_eval_logs, read_eval_log

    found: dict[str, list[str]] = {}
    for info in list_eval_logs(str(log_dir), recursive=False):
        try:
            header = read_eval_log(info.name, header_only=True)
        except Exception:
            continue
        found.setdefault(task_identifier(header, None), []).append(info.name)
    return found


def _judge(
    tasks: list[TaskSpec],
    log_dir: Path,
    timed_out: bool,
    returncode: int | None,
    stderr: str,
    time_cap: float,
) -> tuple[list[SmokeCheck], int]:
    logs = _logs_by_identifier(log_dir)
    checks: list[SmokeCheck] = []
    completed = 0
    for spec in tasks:
        paths = logs.get(spec.identifier, [])
        if not paths:
            checks.append(_no_log_check(spec, timed_out, returncode, stderr, time_cap))
            continue
        check, done = _log_check(spec, paths[0], timed_out, returncode, stderr, time_cap)
        completed += done
        if check is not None:
            checks.append(check)
    return checks, completed


def _no_log_check(
    spec: TaskSpec, timed_out: bool, returncode: int | None, stderr: str, time_cap: float
) -> SmokeCheck:
    if timed_out:
        return _check(spec, "timeout", f"did not finish within the {time_cap:g} s smoke cap")
    line, traceback = stderr_error(stderr)
    line = _clean(line)
    if returncode:
        # The definition failed before the task ran; a missing credential shows here too.
        kind = classify(line, traceback)
        return _check(
            spec,
            "definition" if kind == "task" else kind,
            line or f"the definition exited {returncode} without output",
        )
    return _check(
        spec, "definition", "the definition ran but wrote no log for this task" + _tail(line)
    )


def _log_check(
    spec: TaskSpec,
    path: str,
    timed_out: bool,
    returncode: int | None,
    stderr: str,
    time_cap: float,
) -> tuple[SmokeCheck | None, int]:
    from inspect_ai.log import read_eval_log, read_eval_log_sample_summaries

    try:
        header = read_eval_log(path, header_only=True)
    except Exception as err:
        return _check(spec, "task", f"its smoke log cannot be read: {err}"), 0
    try:
        summaries = read_eval_log_sample_summaries(path)
    except Exception:
        summaries = []
    done = sum(1 for s in summaries if s.completed and not s.error)
    errored = [s for s in summaries if s.error]
    if header.status == "success" and not errored:
        return None, done
    if errored:
        sample = errored[0]
        message, traceback = sample.error or "", _sample_traceback(path, sample)
        what = f"sample {sample.id}: {_clean(message)}"
        return _check(spec, classify(message, traceback), what), done
    if header.status == "error" and header.error is not None:
        message, traceback = header.error.message, header.error.traceback
        return _check(spec, classify(message, traceback), _clean(message)), done
    if timed_out:
        return _check(
            spec,
            "timeout",
            f"did not finish within the {time_cap:g} s smoke cap ({done} samples completed)",
        ), done
    line, traceback = stderr_error(stderr)
    line = _clean(line)
    return _check(
        spec,
        classify(line, traceback) if line else "task",
        f"the smoke process ended (exit {returncode}) with the task {header.status}" + _tail(line),
    ), done


def _sample_traceback(path: str, summary) -> str:  # type: ignore[no-untyped-def]
    from inspect_ai.log import read_eval_log_sample

    try:
        sample = read_eval_log_sample(path, summary.id, summary.epoch, exclude_fields={"store"})
    except Exception:
        return ""
    error = sample.error
    return f"{error.traceback}" if error is not None else ""


def _tail(line: str) -> str:
    return f": {line}" if line else ""


def _check(spec: TaskSpec, kind: CheckKind, message: str) -> SmokeCheck:
    return SmokeCheck(task=spec.name, model=spec.model, check=kind, message=message)
