"""Steward's layer rules hold on the real tree, and the checker (tests/layer_rules.py) catches a
breach of each planted in a tree of its own."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from tests.layer_rules import (
    LAYERS,
    SourceTree,
    Violation,
    find_circles,
    find_layer_breaches,
    find_private_names,
    find_workflow_io,
    read_tree,
)

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def steward() -> SourceTree:
    tree = read_tree(REPO)
    # Read through pyproject's mapping: a mapping that found nothing would pass every rule.
    assert {module.layer for module in tree.modules.values()} == set(LAYERS)
    assert "steward.activities.scan.scan" in tree.modules
    return tree


def _report(violations: list[Violation]) -> str:
    return "\n".join(str(violation) for violation in violations)


def test_no_import_circle_between_stewards_modules(steward: SourceTree):
    violations = find_circles(steward)
    assert not violations, _report(violations)


def test_no_module_uses_another_modules_private_names(steward: SourceTree):
    violations = find_private_names(steward)
    assert not violations, _report(violations)


def test_imports_follow_the_layer_order(steward: SourceTree):
    violations = find_layer_breaches(steward)
    assert not violations, _report(violations)


def test_workflows_do_no_io_and_read_no_clock(steward: SourceTree):
    violations = find_workflow_io(steward)
    assert not violations, _report(violations)


# --- planted breaches ------------------------------------------------------------------------


def plant(root: Path, files: dict[str, str]) -> SourceTree:
    """A tree shaped like Steward's (pyproject's package-dir, one folder per layer) holding
    `files` (path -> source) and an empty package for every layer."""
    (root / "pyproject.toml").write_text(
        "[tool.setuptools]\npackage-dir = {"
        + ", ".join(f'"steward.{layer}" = "{layer}"' for layer in LAYERS)
        + "}\n"
    )
    for layer in LAYERS:
        (root / layer).mkdir()
        (root / layer / "__init__.py").write_text("")
    for path, source in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(textwrap.dedent(source))
    return read_tree(root)


def _where(violations: list[Violation]) -> list[tuple[str, int, str]]:
    return sorted((v.file, v.line, v.kind) for v in violations)


def test_a_circle_closed_by_a_lazy_relative_import_is_caught(tmp_path: Path):
    tree = plant(
        tmp_path,
        {
            "activities/scan/__init__.py": "",
            "activities/scan/scan.py": """\
                def activity():
                    from .children import in_child
                    return in_child()
                """,
            "activities/scan/children.py": """\
                from steward.activities.scan.scan import activity

                def in_child():
                    return activity
                """,
        },
    )
    [circle] = find_circles(tree)
    assert (circle.file, circle.line, circle.kind) == ("activities/scan/children.py", 1, "circle")
    assert "activities/scan/children.py:1 imports steward.activities.scan.scan" in circle.message
    assert "activities/scan/scan.py:2 imports steward.activities.scan.children" in circle.message
    assert "Fix:" in circle.message


def test_an_import_only_for_type_checking_closes_no_circle(tmp_path: Path):
    tree = plant(
        tmp_path,
        {
            "worker/a.py": "from steward.worker.b import B\n",
            "worker/b.py": """\
                from typing import TYPE_CHECKING

                if TYPE_CHECKING:
                    from steward.worker.a import A
                else:
                    import json
                """,
        },
    )
    assert find_circles(tree) == []
    assert [ref.module for ref in tree.modules["steward.worker.b"].imports] == ["typing", "json"]


def test_a_private_name_from_another_module_is_caught(tmp_path: Path):
    tree = plant(
        tmp_path,
        {
            "worker/offline.py": "_PATTERN = 1\n__version__ = '1'\n_own = _PATTERN\n",
            "worker/simulator.py": """\
                from steward.worker import offline
                from .offline import _PATTERN, __version__

                x = offline._PATTERN, offline.__version__
                """,
        },
    )
    found = find_private_names(tree)
    assert _where(found) == [
        ("worker/simulator.py", 2, "private-name"),
        ("worker/simulator.py", 4, "private-name"),
    ]
    assert "rename to PATTERN" in found[0].message


def test_an_import_up_a_layer_is_caught(tmp_path: Path):
    tree = plant(
        tmp_path,
        {
            "worker/runner.py": "from steward.activities.fork import fork\n",  # allowed
            "activities/fork.py": """\
                def fork():
                    from steward.worker import runner
                """,
            "workflows/run.py": "from steward.activities.fork import fork\n",
        },
    )
    found = find_layer_breaches(tree)
    assert _where(found) == [
        ("activities/fork.py", 2, "layer"),
        ("workflows/run.py", 1, "layer"),
    ]
    assert "imports steward.worker.runner (worker)" in found[0].message
    assert find_workflow_io(tree) == []  # said once, as a layer breach


def test_a_cli_reaching_activities_or_inspect_is_caught(tmp_path: Path):
    tree = plant(
        tmp_path,
        {
            "activities/scan.py": "",
            "worker/workspace.py": "",
            "cli/main.py": """\
                from steward.worker import workspace
                from steward.activities import scan

                def logs():
                    from inspect_ai.log import read_eval_log
                    import inspect_scout
                """,
        },
    )
    found = find_layer_breaches(tree)
    assert _where(found) == [
        ("cli/main.py", 2, "layer"),
        ("cli/main.py", 5, "layer"),
        ("cli/main.py", 6, "layer"),
    ]


def test_workflows_importing_io_or_reading_the_clock_are_caught(tmp_path: Path):
    tree = plant(
        tmp_path,
        {
            "workflows/run.py": """\
                import asyncio
                import os
                from datetime import date, datetime

                from temporalio import activity, workflow
                from steward.workflows.names import Activity

                def tend():
                    when = workflow.now()
                    stamp = datetime.now(), date.today()
                    with open("status.md") as f:
                        return f.read()
                """,
        },
    )
    found = find_workflow_io(tree)
    assert _where(found) == [
        ("workflows/run.py", 2, "workflow-io"),  # os
        ("workflows/run.py", 5, "workflow-io"),  # temporalio.activity, not temporalio.workflow
        ("workflows/run.py", 10, "workflow-io"),  # datetime.now()
        ("workflows/run.py", 10, "workflow-io"),  # date.today()
        ("workflows/run.py", 11, "workflow-io"),  # open()
    ]
    assert "imports temporalio.activity" in found[1].message
