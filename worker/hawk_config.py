"""Hawk configurations (`hawk.yaml`: METR's Hawk eval-set config) as Steward definitions.

A Hawk config is read with Hawk's own model of it (`hawk.core.types.EvalSetConfig`, so it is
validated exactly as `hawk eval-set` validates it) and its tasks are built the way Hawk's runner
builds them (hawk/runner/run_eval_set.py: every task item crossed with every solver or agent and
every model, each task made from Inspect's registry as `<package name>/<item>`, sliced to its
`sample_ids`), then handed to `inspect_ai.eval_set()` with the options the config sets. From there
it is an eval set like any other: the per-task workers see the same tasks.

What Hawk's runner does on Kubernetes and Steward does not: it installs the config's packages
into a fresh virtualenv (Steward runs the definition in its own environment, so the packages
must be installed there: a missing one is refused naming it), patches sandboxes for its
cluster (a non-standard `isolation` is refused), and sets the infrastructure options (log
directory, max_samples/max_tasks/max_sandboxes, eval_set_id), which Steward owns.

Needs the `hawk` extra (`pip install 'steward-evals[hawk]'`): Hawk 3.7 needs Python 3.13 or
newer, so on older Pythons a Hawk config is refused with one sentence naming the Python it needs.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

HAWK_FILES = ("hawk.yaml", "hawk.yml")
NEEDS_PYTHON = (3, 13)
EXTRA = "pip install 'steward-evals[hawk]'"
# Options Hawk's runner takes from its infrastructure config, not the user's: Steward sets these.
INFRA_OPTIONS = frozenset(
    {"eval_set_id", "log_dir", "max_samples", "max_tasks", "max_sandboxes", "max_subprocesses"}
)


class HawkUnavailable(Exception):
    """Hawk cannot be used here; the message says why and what to do (one sentence)."""


def is_hawk_config(path: Path | str) -> bool:
    """A YAML definition: Steward's other definitions are Python files (`hawk.yaml` by name,
    or any .yaml/.yml file given as the definition, as `hawk eval-set` takes any name)."""
    return Path(path).suffix in (".yaml", ".yml") and Path(path).name != "_steward.yaml"


def unavailable_reason() -> str | None:
    """Why a Hawk config cannot run in this Python (None when it can)."""
    if sys.version_info < NEEDS_PYTHON:
        here = ".".join(map(str, sys.version_info[:3]))
        need = ".".join(map(str, NEEDS_PYTHON))
        return (
            f"Hawk needs Python {need} or newer and Steward runs on Python {here}; install "
            f"Steward in a Python {need} environment with its hawk extra ({EXTRA})"
        )
    if importlib.util.find_spec("hawk") is None:
        return f"the hawk package is not installed; install Steward's hawk extra ({EXTRA})"
    return None


def _refuse(config: Path, problem: str) -> HawkUnavailable:
    return HawkUnavailable(f"{config.name} is a Hawk configuration, but {problem}.")


def load(config: Path) -> Any:
    """The config as Hawk's EvalSetConfig; a bad one is one sentence naming the field."""
    reason = unavailable_reason()
    if reason:
        raise _refuse(config, reason)
    import pydantic
    import yaml
    from hawk.core.types import EvalSetConfig

    try:
        document = yaml.safe_load(config.read_text())
    except yaml.YAMLError as err:
        raise HawkUnavailable(f"{config.name} is not valid YAML: {_one_line(err)}.") from err
    if not isinstance(document, dict):
        raise HawkUnavailable(f"{config.name} must be a mapping of Hawk eval-set fields.")
    try:
        return EvalSetConfig.model_validate(document)
    except pydantic.ValidationError as err:
        first = err.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "(top level)"
        raise HawkUnavailable(
            f"{config.name} is not a valid Hawk configuration: {where}: {_one_line(first['msg'])}."
        ) from err


def _one_line(value: object) -> str:
    return " ".join(str(value).split()).rstrip(".")


def load_packages(config: Path, spec: Any) -> None:
    """Every package the config takes tasks, solvers or agents from must be installed where
    Steward runs (Hawk installs them itself); each is loaded here through its entry point, so
    its items are in Inspect's registry even where Inspect had already enumerated the entry
    points (a worker forked from a warm process). A model package without an entry point of
    that name is one of Inspect's own providers (`openai`, `anthropic`, ...)."""
    from hawk.core.types import PackageConfig

    registered = {ep.name: ep for ep in importlib.metadata.entry_points(group="inspect_ai")}
    kinds = {"tasks": spec.tasks, "solvers": spec.solvers, "agents": spec.agents}
    kinds["models"] = spec.models
    for kind, packages in kinds.items():
        for package in packages or []:
            if not isinstance(package, PackageConfig):
                continue  # `package: inspect-ai`: Inspect's own items
            if package.name in registered:
                registered[package.name].load()
            elif kind != "models":
                raise HawkUnavailable(
                    f"{config.name} takes {kind} from the package {package.package!r}, whose "
                    f"Inspect entry point {package.name!r} is not installed in Steward's "
                    f"environment; install it there (pip install {package.package!r}): Steward "
                    "runs the definition in its own environment, not in a virtualenv of Hawk's."
                )
    strictest = [spec.isolation, *(item.isolation for p in spec.tasks for item in p.items)]
    levels = {getattr(i, "level", "standard") for i in strictest if i is not None}
    if levels - {"standard"}:
        raise HawkUnavailable(
            f"{config.name} asks for isolation {sorted(levels - {'standard'})[0]!r}, which "
            "Hawk's Kubernetes runner applies and Steward does not; remove `isolation` to run "
            "it under Steward."
        )


def resolve(config: Path) -> tuple[list[Any], dict[str, Any]]:
    """(inspect_ai tasks, eval_set keyword arguments) of a Hawk config, without running it."""
    spec = load(config)
    if not any(package.items for package in spec.tasks):
        raise HawkUnavailable(f"{config.name} lists no tasks; give `tasks` at least one item.")
    load_packages(config, spec)
    import inspect_ai
    import inspect_ai._eval.context
    import inspect_ai._eval.task.util
    import inspect_ai.agent
    import inspect_ai.model
    import inspect_ai.model._util
    import inspect_ai.util
    from hawk.core.providers import NO_MODEL
    from hawk.core.types import EpochsConfig, EvalSetConfig
    from hawk.runner import common

    models = [
        common.get_model_from_config(package, item)
        for package in spec.models or []
        for item in package.items
    ] or [None]
    roles = {
        role: common.get_model_from_config(role_config, role_config.items[0])
        for role, role_config in (spec.model_roles or {}).items()
    } or None
    resolved_roles = inspect_ai.model._util.resolve_model_roles(roles)

    def model_context(model: Any) -> None:  # as Hawk's runner: no model configured, NoModel
        active = model if model is not None else inspect_ai.model.get_model(NO_MODEL)
        inspect_ai._eval.context.init_model_context(active, resolved_roles, active.config)

    model_context(models[0])
    solvers: list[Any] = [
        inspect_ai.util.registry_create(
            "solver", common.get_qualified_name(package, item), **(item.args or {})
        )
        for package in spec.solvers or []
        for item in package.items
    ]
    solvers += [
        inspect_ai.agent.as_solver(
            inspect_ai.util.registry_create(
                "agent", common.get_qualified_name(package, item), **(item.args or {})
            )
        )
        for package in spec.agents or []
        for item in package.items
    ]
    tasks = []
    for package in spec.tasks:
        for item in package.items:
            for solver in solvers or [None]:
                for model in models:
                    model_context(model)
                    task = inspect_ai.util.registry_create(
                        "task", common.get_qualified_name(package, item), **(item.args or {})
                    )
                    overrides: dict[str, Any] = {}
                    if item.sample_ids is not None:
                        overrides["dataset"] = inspect_ai._eval.task.util.slice_dataset(
                            task.dataset, limit=None, sample_id=item.sample_ids
                        )
                    if model is not None:
                        overrides["model"] = model
                    if solver is not None:
                        overrides["solver"] = solver
                    tasks.append(inspect_ai.task_with(task, **overrides) if overrides else task)

    epochs = spec.epochs
    if isinstance(epochs, EpochsConfig):
        epochs = inspect_ai.Epochs(epochs=epochs.epochs, reducer=epochs.reducer)
    metadata = (spec.metadata or {}) | ({"name": spec.name} if spec.name else {})
    kwargs: dict[str, Any] = {
        "model_roles": roles,
        "tags": spec.tags,
        "metadata": metadata or None,
        "approval": _approval(spec.approval),
        "epochs": epochs,
        "limit": spec.limit,
        "sample_shuffle": spec.sample_shuffle,
        "message_limit": spec.message_limit,
        "token_limit": spec.token_limit,
        "time_limit": spec.time_limit,
        "working_limit": spec.working_limit,
        "cost_limit": spec.cost_limit,
        "max_retries": spec.max_retries,
        "retry_attempts": spec.retry_attempts,
        "log_images": spec.log_images,
        "adaptive_connections": EvalSetConfig.parse_adaptive_connections(
            spec.adaptive_connections
        ),
        "model_cost_config": _model_costs(spec.model_cost_config),
    }
    # Fields with a value Hawk always passes (its defaults differ from eval_set's only if set).
    for name in ("score", "log_realtime", "log_model_api"):
        if name in spec.model_fields_set:
            kwargs[name] = getattr(spec, name)
    kwargs |= _forwardable_extra(spec)
    kwargs = {name: value for name, value in kwargs.items() if value is not None}
    return tasks, _eval_set_arguments(kwargs)


def _approval(approval: Any) -> str | None:
    """A policy name or file as given; an inline policy written to a file Inspect reads."""
    if approval is None or isinstance(approval, str):
        return approval
    import yaml

    handle, name = tempfile.mkstemp(prefix="steward-hawk-approval-", suffix=".yaml")
    with os.fdopen(handle, "w") as file:
        yaml.safe_dump(approval.to_inspect_config(), file)
    return name


def _model_costs(costs: dict[str, Any] | None) -> dict[str, Any] | None:
    if not costs:
        return None
    from inspect_ai.model import ModelCost

    return {
        model: ModelCost(
            input=cost.input,
            output=cost.output,
            input_cache_read=cost.input_cache_read,
            input_cache_write=cost.input_cache_write,
        )
        for model, cost in costs.items()
    }


def _forwardable_extra(spec: Any) -> dict[str, Any]:
    """Extra top-level keys Hawk forwards to eval_set(), less those Steward owns."""
    from hawk.core.types import evals, scans

    blocked = scans.RESERVED_SCAN_TOP_LEVEL_KEYS | evals.REJECTED_INSPECT_TOP_LEVEL_KEYS
    return {
        key: value
        for key, value in (spec.model_extra or {}).items()
        if key not in blocked and key not in INFRA_OPTIONS
    }


def _eval_set_arguments(kwargs: dict[str, Any]) -> dict[str, Any]:
    """Keep the options eval_set() takes."""
    import inspect

    from inspect_ai import eval_set

    accepted = inspect.signature(eval_set).parameters
    return {name: value for name, value in kwargs.items() if name in accepted}


def run(config: Path) -> None:
    """What a worker does with a Hawk config: eval_set() of its tasks. HawkUnavailable (the
    caller's refusal, one sentence) when it cannot run here."""
    from inspect_ai import eval_set

    try:
        tasks, kwargs = resolve(config)
    except HawkUnavailable:
        raise
    except Exception as err:  # one line for capture to report
        message = _one_line(err) or type(err).__name__
        sys.exit(f"Hawk's configuration {config.name} could not be resolved: {message}")
    eval_set(tasks, **kwargs)
