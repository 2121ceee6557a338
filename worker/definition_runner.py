"""Run a user's eval-set definition as a script, the way a per-task worker or capture does.

`python -m worker.definition_runner evalset.py` from the workspace directory. The workspace's
`.env` (and its parents') is loaded first without overriding the environment, so credentials
and settings kept there reach processes the Steward worker starts. Inspect's capture or
selection mode comes from the environment variables the caller sets.
"""

from __future__ import annotations

import os
import runpy
import sys
from pathlib import Path

from dotenv import load_dotenv


def dotenv_files(start: Path) -> list[Path]:
    """`.env` files from `start` up to the root, nearest first."""
    return [d / ".env" for d in [start, *start.parents] if (d / ".env").is_file()]


SANDBOX_SIDECAR = "STEWARD_CAPTURE_SANDBOXES"


def record_sandboxes(path: str) -> None:
    """In capture mode, also write {task identifier: sandbox type} to `path`.

    Inspect's capture manifest does not carry a task's sandbox, which the sandbox budget needs
    before anything runs; the resolved tasks it is built from do. (Coupled to inspect_ai
    0.3.285's `build_eval_set_capture`; tests/test_capture.py guards it.)
    """
    import json

    from inspect_ai._eval import evalset

    build = evalset.build_eval_set_capture

    def build_and_record(resolved_tasks, eval_set_args, **kwargs):  # type: ignore[no-untyped-def]
        capture = build(resolved_tasks, eval_set_args, **kwargs)
        sandboxes = {
            entry.identifier: _sandbox_type(task)
            for entry, task in zip(capture.tasks, resolved_tasks, strict=True)
        }
        Path(path).write_text(json.dumps(sandboxes))
        return capture

    evalset.build_eval_set_capture = build_and_record


def _sandbox_type(task) -> str | None:  # type: ignore[no-untyped-def]
    """The task's sandbox provider, or its samples' (the first that names one)."""
    if task.sandbox is not None:
        return task.sandbox.type
    for sample in task.task.dataset:
        spec = sample.sandbox
        if spec:
            return spec if isinstance(spec, str) else getattr(spec, "type", None) or str(spec[0])
    return None


def main(argv: list[str]) -> None:
    if len(argv) != 1:
        sys.exit("usage: python -m worker.definition_runner DEFINITION")
    definition = Path(argv[0])
    for env_file in dotenv_files(Path.cwd()):  # nearest first, and nothing overrides
        load_dotenv(env_file, override=False)
    if os.environ.get(SANDBOX_SIDECAR) and os.environ.get("INSPECT_EVAL_SET_CAPTURE"):
        record_sandboxes(os.environ[SANDBOX_SIDECAR])
    # Register Steward's approver before the definition builds its tasks, so policies naming
    # `steward` (or, in a worker, `human`) resolve to it.
    import worker.inspect_plugins  # noqa: F401

    sys.path.insert(0, str(definition.resolve().parent))
    sys.argv = [str(definition)]
    runpy.run_path(str(definition), run_name="__main__")


if __name__ == "__main__":
    main(sys.argv[1:])
