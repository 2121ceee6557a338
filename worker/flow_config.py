"""Inspect Flow configurations (`config.py` building a `FlowSpec`) as Steward definitions.

A Flow config is resolved the way Flow's own in-process runner resolves it (load the spec,
apply its defaults, instantiate its tasks, run the after-instantiate hooks) and handed to
`inspect_ai.eval_set()` with the options it sets. From there it is an eval set like any other:
Inspect's capture and selection modes, so the per-task workers, see the same tasks Flow would
run. Flow's own runner is not used: it shells out to `uv` to freeze requirements and may build
virtualenvs, neither of which a supervised offline worker can rely on.

Needs the `flow` extra (`pip install 'steward-evals[flow]'`, inspect-flow 0.14). The resolver reads
some of inspect-flow's private modules (there is no public "spec -> tasks" call in 0.14), so
the extra pins the version; tests/e2e/test_flow.py guards the coupling.
"""

from __future__ import annotations

import ast
import os
import sys
from pathlib import Path
from typing import Any

MISSING = (
    "{path} is an Inspect Flow configuration, but the inspect-flow package is not installed; "
    "install Steward's flow extra (pip install 'steward-evals[flow]')."
)


class FlowUnavailable(Exception):
    """inspect-flow is not installed; the message names the extra to install."""


def is_flow_config(path: Path) -> bool:
    """A Python file that imports inspect_flow and never calls eval_set() itself (read from
    its syntax tree, so comments and docstrings mentioning either do not count)."""
    if path.suffix != ".py":
        return False
    try:
        tree = ast.parse(path.read_text())
    except (OSError, SyntaxError, ValueError):
        return False
    imports_flow = calls_eval_set = False
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imports_flow |= any(alias.name.split(".")[0] == "inspect_flow" for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            imports_flow |= (node.module or "").split(".")[0] == "inspect_flow"
        elif isinstance(node, ast.Call):
            func = node.func
            name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
            calls_eval_set |= name == "eval_set"
    return imports_flow and not calls_eval_set


def _require_flow() -> None:
    try:
        import inspect_flow  # noqa: F401
    except ImportError as err:
        raise FlowUnavailable(err) from err


def resolve(config: Path) -> tuple[list[Any], dict[str, Any]]:
    """(inspect_ai tasks, eval_set keyword arguments) of a Flow config, without running it."""
    _require_flow()
    from inspect_flow import FlowOptions
    from inspect_flow._config.load import ConfigOptions, int_load_spec
    from inspect_flow._runner.instantiate import instantiate_tasks
    from inspect_flow._runner.resolve import resolve_spec
    from inspect_flow._types.after_instantiate import run_after_instantiate_hooks
    from inspect_flow._util.not_given import default_none
    from inspect_flow._util.path_util import absolute_path_relative_to
    from inspect_flow.api import init

    # No .env search of Flow's own: the definition runner already loaded the workspace's chain.
    init(log_level="warning", display="none", dotenv_base_dir=None)
    base_dir = str(config.resolve().parent)
    spec = resolve_spec(int_load_spec(str(config), options=ConfigOptions()), base_dir=base_dir)
    if spec.env:
        os.environ.update(spec.env)  # as Flow's in-process runner does
    tasks = run_after_instantiate_hooks(
        [instantiated.task for instantiated in instantiate_tasks(spec, base_dir=base_dir)]
    )
    options = spec.options or FlowOptions()
    # Only what the config sets: unset options keep eval_set's (and Steward's) defaults, so
    # an unset max_tasks runs every task at once, as for any definition.
    kwargs = {
        name: value
        for name in type(options).model_fields
        if (value := default_none(getattr(options, name))) is not None
    }
    if "scanner" in kwargs:
        from inspect_flow._runner.scanner import resolve_scanner

        kwargs["scanner"] = resolve_scanner(kwargs["scanner"])
    if "bundle_dir" in kwargs:
        kwargs["bundle_dir"] = absolute_path_relative_to(kwargs["bundle_dir"], base_dir=base_dir)
    if default_none(spec.log_dir):
        kwargs["log_dir"] = absolute_path_relative_to(spec.log_dir, base_dir=base_dir)
    return tasks, _eval_set_arguments(kwargs)


def _eval_set_arguments(kwargs: dict[str, Any]) -> dict[str, Any]:
    """Keep the options eval_set() takes (FlowOptions also holds Flow-only ones)."""
    import inspect

    from inspect_ai import eval_set

    accepted = inspect.signature(eval_set).parameters
    return {name: value for name, value in kwargs.items() if name in accepted}


def run(config: Path) -> None:
    """What a worker does with a Flow config: eval_set() of its tasks."""
    from inspect_ai import eval_set

    try:
        tasks, kwargs = resolve(config)
    except FlowUnavailable:
        sys.exit(MISSING.format(path=config))
    except Exception as err:  # one line for capture to report (Flow prints its own to stdout)
        message = " ".join(str(err).split()) or type(err).__name__
        sys.exit(f"Flow could not resolve {config.name}: {message}")
    eval_set(tasks, **kwargs)
