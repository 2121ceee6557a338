"""Run a user's eval-set definition as a script, the way a per-task worker or capture does.

`python -m steward.worker.definition_runner evalset.py` from the workspace directory. The workspace's
`.env` (and its parents') is loaded first without overriding the environment, so credentials
and settings kept there reach processes the Steward worker starts. Inspect's capture or
selection mode comes from the environment variables the caller sets
(activities/processes/runner_launch.py).

Input Steward refuses (a `.env` python-dotenv cannot read, `eval_set()` given no tasks) ends
the runner with one line on stderr starting with REFUSAL_MARK, which capture shows as it is.
"""

from __future__ import annotations

import faulthandler
import functools
import os
import runpy
import sys
from pathlib import Path
from typing import NoReturn

from dotenv import load_dotenv

from steward.activities.processes.runner_launch import (
    CAPTURE_ENV,
    REFUSAL_MARK,
    SANDBOX_SIDECAR_ENV,
)
from steward.activities.processes.runner_process import STACK_DUMP_SIGNAL
from steward.activities.workspace.dotenv_files import dotenv_chain, dotenv_problem


def refuse(sentence: str) -> NoReturn:
    raise SystemExit(REFUSAL_MARK + sentence)  # printed to stderr, exit code 1


def load_dotenv_files(start: Path) -> None:
    """Load the `.env` files from `start` up to the root, nearest first and overriding
    nothing; refuse one python-dotenv cannot read (it would drop the line with a warning)."""
    for env_file in reversed(dotenv_chain(start)):
        problem = dotenv_problem(env_file)
        if problem:
            refuse(problem)
        load_dotenv(env_file, override=False)


def refuse_empty_task_list(definition: Path) -> None:
    """Inspect reads `eval_set([])` (or None) as "no tasks given" and imports the working
    directory's files to find some, which runs this definition again, and again, until
    Python's recursion limit. Refuse it before Inspect sees it, in words the user can act on."""
    import inspect_ai
    from inspect_ai._eval import evalset

    original = evalset.eval_set

    @functools.wraps(original)
    def eval_set(*args, **kwargs):  # type: ignore[no-untyped-def]
        tasks = args[0] if args else kwargs.get("tasks")
        if tasks is None or (isinstance(tasks, list | tuple) and not tasks):
            given = "an empty task list" if tasks is not None else "tasks=None"
            refuse(
                f"The definition {definition} passes eval_set() {given}; give it at least one task."
            )
        return original(*args, **kwargs)

    inspect_ai.eval_set = evalset.eval_set = eval_set


def record_sandboxes(path: str) -> None:
    """In capture mode, also write {task identifier: its sandbox} to `path`.

    Each value is None (no sandbox) or {"type", "config", "task_dir"}: `config` is the config
    file as an absolute path, an inline ComposeConfig dumped to a mapping, or None (the
    provider's own discovery in `task_dir`, the directory the task runs in). Capture sizes the
    sandbox from these (activities/definition/sandbox_size.py).

    Inspect's capture manifest does not carry a task's sandbox, which the sandbox budget needs
    before anything runs; the resolved tasks it is built from do. (Coupled to inspect_ai
    0.3.285's `build_eval_set_capture`; tests/integration/test_sandbox_capture.py guards it.)
    """
    import json

    from inspect_ai._eval import evalset

    build = evalset.build_eval_set_capture

    def build_and_record(resolved_tasks, eval_set_args, **kwargs):  # type: ignore[no-untyped-def]
        capture = build(resolved_tasks, eval_set_args, **kwargs)
        sandboxes = {
            entry.identifier: sandbox_type(task)
            for entry, task in zip(capture.tasks, resolved_tasks, strict=True)
        }
        Path(path).write_text(json.dumps(sandboxes))
        connections = {
            entry.identifier: own_connections(task, eval_set_args)
            for entry, task in zip(capture.tasks, resolved_tasks, strict=True)
        }
        Path(connections_sidecar(path)).write_text(json.dumps(connections))
        return capture

    evalset.build_eval_set_capture = build_and_record


def connections_sidecar(sandboxes_path: str) -> str:
    """Where capture also writes {task identifier: the connections it set itself, or None}."""
    return f"{sandboxes_path}.connections"


def own_connections(task, eval_set_args) -> str | None:  # type: ignore[no-untyped-def]
    """The model connections the definition set itself for `task`, as `max_connections=8` or
    `adaptive_connections=...` (its model's config, the task's, or eval_set()'s), else None."""
    configs = [
        getattr(getattr(task, "model", None), "config", None),
        getattr(task.task, "config", None),
        getattr(eval_set_args, "config", None),
    ]
    for config in configs:
        if config is None:
            continue
        if getattr(config, "max_connections", None) is not None:
            return f"max_connections={config.max_connections}"
        adaptive = getattr(config, "adaptive_connections", None)
        if adaptive is not None:
            shown = (
                adaptive.model_dump(exclude_defaults=True)
                if hasattr(adaptive, "model_dump")
                else adaptive
            )
            return f"adaptive_connections={shown}"
    return None


def sandbox_type(task) -> dict | None:  # type: ignore[no-untyped-def]
    """The resolved task's sandbox, or its samples' (the first that names one), as
    {"type", "config", "task_dir"}; a sample's own config of the task's type overrides the
    task's, as Inspect does when it runs the sample."""
    spec = _as_spec(task.sandbox)
    for sample in task.task.dataset:
        sample_spec = _as_spec(sample.sandbox)
        if sample_spec is None:
            continue
        if spec is None:
            spec = sample_spec
        elif sample_spec[1] is not None and _overrides(spec, sample_spec):
            spec = (spec[0], sample_spec[1])
        break
    if spec is None:
        return None
    task_dir = _task_dir(task)
    return {"type": spec[0], "config": _config_value(spec[1], task_dir), "task_dir": task_dir}


def _as_spec(spec) -> tuple[str, object] | None:  # type: ignore[no-untyped-def]
    """(type, config) of a sandbox given as a string, a tuple or a SandboxEnvironmentSpec."""
    if not spec:
        return None
    if isinstance(spec, str):
        return spec, None
    if isinstance(spec, tuple | list):
        return str(spec[0]), (spec[1] if len(spec) > 1 else None)
    kind = getattr(spec, "type", None)
    return (str(kind), getattr(spec, "config", None)) if kind else None


def _overrides(task_spec: tuple[str, object], sample_spec: tuple[str, object]) -> bool:
    """Whether Inspect runs a sample with its own config rather than the task's."""
    if sample_spec[0] == task_spec[0]:
        return True
    try:
        from inspect_ai.util._sandbox.compose import (
            is_docker_compatible_config,
            is_docker_compatible_sandbox_type,
        )

        return is_docker_compatible_config(sample_spec[1]) and is_docker_compatible_sandbox_type(
            task_spec[0]
        )
    except Exception:
        return False


def _task_dir(task) -> str:  # type: ignore[no-untyped-def]
    """The directory the task runs in (and its relative sandbox config is read from)."""
    run_dir = getattr(task.task, "__task_run_dir__", None)  # inspect's TASK_RUN_DIR_ATTR
    if not run_dir and getattr(task, "task_file", None):
        run_dir = str(Path(task.task_file).parent)
    return str(Path(run_dir or os.getcwd()).resolve())


def _config_value(config, task_dir: str) -> str | dict | None:  # type: ignore[no-untyped-def]
    """A config file as an absolute path, an inline compose config as a mapping, else None."""
    if config is None:
        return None
    values = getattr(config, "values", None)  # a k8s config object names its Helm values file
    if isinstance(config, str | os.PathLike) or isinstance(values, str | os.PathLike):
        file = config if isinstance(config, str | os.PathLike) else values
        return str((Path(task_dir) / Path(file).expanduser()).resolve())
    dump = getattr(config, "model_dump", None)
    if callable(dump):
        try:
            document = dump(mode="json", by_alias=True, exclude_none=True)
        except Exception:
            return None
        if isinstance(document, dict) and isinstance(document.get("services"), dict):
            return document
    return None


def main(argv: list[str]) -> None:
    if len(argv) != 1:
        sys.exit("usage: python -m steward.worker.definition_runner DEFINITION")
    definition = Path(argv[0])
    if os.environ.get(CAPTURE_ENV):
        # A capture that overruns capture_timeout is asked where it is before it is killed
        # (activities/processes/runner_process.py): every thread's stack, to stderr.
        faulthandler.register(STACK_DUMP_SIGNAL, file=sys.stderr, all_threads=True)
    load_dotenv_files(Path.cwd())
    refuse_empty_task_list(definition)
    if os.environ.get(SANDBOX_SIDECAR_ENV) and os.environ.get(CAPTURE_ENV):
        record_sandboxes(os.environ[SANDBOX_SIDECAR_ENV])
    # Register Steward's approver before the definition builds its tasks, so policies naming
    # `steward` (or, in a worker, `human`) resolve to it.
    import steward.worker.inspect_plugins  # noqa: F401
    from steward.worker import approver

    approver.follow_environment()  # a forked worker's environment is its own only now
    from steward.activities.logs import log_owners

    log_owners.guard()  # a worker whose task logs a later worker claimed stops at once

    sys.path.insert(0, str(definition.resolve().parent))
    sys.argv = [str(definition)]
    from steward.worker import flow_config, hawk_config

    if hawk_config.is_hawk_config(definition):
        try:
            hawk_config.run(definition)
        except hawk_config.HawkUnavailable as err:
            refuse(str(err))
    elif flow_config.is_flow_config(definition):
        flow_config.run(definition)
    else:
        runpy.run_path(str(definition), run_name="__main__")


if __name__ == "__main__":
    main(sys.argv[1:])
