"""Hawk configurations (hawk.yaml, seed 002) run through the same per-task workers as any
definition, read with Hawk's own config model and built as Hawk's runner builds them; where
Hawk cannot be imported (before Python 3.13, or without the hawk extra) they are refused in one
sentence naming what is needed (tests/e2e/test_bad_input.py checks that on older Pythons)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from harness.helpers import Steward, read_logs, tasks_by_name
from steward.worker import hawk_config

pytestmark = pytest.mark.skipif(
    hawk_config.unavailable_reason() is not None,
    reason=f"Hawk cannot run on this interpreter: {hawk_config.unavailable_reason()}",
)

# A task package as Hawk expects one: an `inspect_ai` entry point named as the config's `name`.
# It is installed as `pip install -e` leaves a package (a dist-info whose direct_url.json says
# editable, so Inspect names its tasks `hawk_demo_tasks/...`), on the definition's sys.path.
TASKS = """from inspect_ai import Task, task
from inspect_ai.dataset import Sample
from inspect_ai.scorer import match
from inspect_ai.solver import generate


def _samples(prefix, count):
    return [Sample(id=i, input=f"Reply with: {prefix}-{i}", target=f"{prefix}-{i}")
            for i in range(1, count + 1)]


@task
def echo_words(count: int = 12):
    return Task(dataset=_samples("word", count), solver=generate(), scorer=match())


@task
def echo_codes(count: int = 8):
    return Task(dataset=_samples("code", count), solver=generate(), scorer=match())
"""
CONFIG = """name: hawk-demo
tasks:
  - package: hawk-demo-tasks
    name: hawk_demo_tasks
    items:
      - name: echo_words
        args: {count: 3}
      - name: echo_codes
        args: {count: 4}
        sample_ids: [2, 4]
models:
  - package: steward-evals
    name: steward
    items:
      - name: offline
epochs: 2
tags: [hawk]
"""
WORDS, CODES = "hawk_demo_tasks/echo_words", "hawk_demo_tasks/echo_codes"


def _hawk_workspace(steward: Steward, directory: Path) -> Path:
    steward.ok("init", str(directory))
    (directory / "evalset.py").unlink()
    (directory / "hawk.yaml").write_text(CONFIG)
    package = directory / "hawk_demo_tasks"
    package.mkdir()
    (package / "__init__.py").write_text(TASKS)
    info = directory / "hawk_demo_tasks-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: hawk-demo-tasks\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[inspect_ai]\nhawk_demo_tasks = hawk_demo_tasks\n")
    editable = {"url": directory.as_uri(), "dir_info": {"editable": True}}
    (info / "direct_url.json").write_text(json.dumps(editable))
    with open(directory / "_steward.yaml", "a") as handle:
        handle.write("\ntend_interval: 2s\nmax_workers: 1\n")
    return directory


def test_a_hawk_config_runs_as_hawk_builds_it(steward: Steward, workspace_root):
    workspace = _hawk_workspace(steward, workspace_root / "hawk")

    listed = steward.ok("tasks", cwd=workspace)  # hawk.yaml is the workspace's definition
    assert {t["name"] for t in listed["tasks"]} == {WORDS, CODES}

    launched = steward.ok("launch", cwd=workspace)
    specs = {t["spec"]["name"]: t["spec"] for t in launched["state"]["tasks"]}
    # Hawk's semantics: registry names `<package name>/<item>`, task args, sample_ids slicing
    # and the config's epochs.
    assert {name: (s["samples"], s["epochs"]) for name, s in specs.items()} == {
        WORDS: (3, 2),
        CODES: (2, 2),
    }
    done = tasks_by_name(steward.wait_phase(workspace, {"finished"}, tend=True))
    assert set(done) == {WORDS, CODES}
    samples = read_logs(workspace / "logs")
    assert {task: sorted(ids) for task, ids in samples.items()} == {
        WORDS: [(1, 1), (1, 2), (2, 1), (2, 2), (3, 1), (3, 2)],
        CODES: [(2, 1), (2, 2), (4, 1), (4, 2)],
    }

    from inspect_ai.log import read_eval_log

    headers = [read_eval_log(str(p), header_only=True) for p in (workspace / "logs").glob("*.eval")]
    assert all("hawk" in h.eval.tags for h in headers)
    assert {h.eval.model for h in headers} == {"steward/offline"}


def test_a_hawk_config_steward_cannot_run_is_one_clear_sentence(steward: Steward, workspace_root):
    workspace = _hawk_workspace(steward, workspace_root / "bad")

    # A task package that is not installed: named, with what to do.
    (workspace / "hawk.yaml").write_text(CONFIG.replace("name: hawk_demo_tasks", "name: nowhere"))
    result = steward("tasks", cwd=workspace)
    assert result.code == 2 and "Traceback" not in result.stderr, result.stderr
    assert "takes tasks from the package 'hawk-demo-tasks', whose Inspect entry point" in result.stderr
    assert "'nowhere' is not installed in Steward's environment" in result.stderr

    # A field Hawk's own model rejects: the field named.
    (workspace / "hawk.yaml").write_text(CONFIG.replace("epochs: 2", "epochs: many"))
    result = steward("tasks", cwd=workspace)
    assert result.code == 2 and "Traceback" not in result.stderr, result.stderr
    assert "hawk.yaml is not a valid Hawk configuration: epochs" in result.stderr

    # Without the package (as if the extra were missing), the refusal names the extra.
    module = sys.modules.pop("hawk", None)
    sys.modules["hawk"] = None  # type: ignore[assignment]
    try:
        assert "steward-evals[hawk]" in (hawk_config.unavailable_reason() or "")
    finally:
        del sys.modules["hawk"]
        if module is not None:
            sys.modules["hawk"] = module
