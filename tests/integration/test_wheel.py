"""The wheel pip builds from this checkout: one top-level name, `steward`, beside its dist-info,
and every module and data file of the tree inside it.

Built with build isolation, as a user's `pip install` builds it: the venv's setuptools is
older than the `setuptools>=68` pyproject.toml requires and has no bdist_wheel, so pip fetches
the declared build backend from the package index (cached after the first build). The sources
are copied first, because setuptools writes build/ and *.egg-info beside them and other work
shares this checkout."""

from __future__ import annotations

import configparser
import shutil
import subprocess
import sys
import tomllib
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())
PACKAGE_DIR: dict[str, str] = PYPROJECT["tool"]["setuptools"]["package-dir"]
VERSION = PYPROJECT["project"]["version"]
DIST_INFO = f"steward_evals-{VERSION}.dist-info"


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Iterator[zipfile.ZipFile]:
    source = tmp_path_factory.mktemp("source")
    shutil.copy(REPO / "pyproject.toml", source)
    shutil.copy(REPO / PYPROJECT["project"]["readme"], source)
    for folder in PACKAGE_DIR.values():
        shutil.copytree(
            REPO / folder, source / folder, ignore=shutil.ignore_patterns("__pycache__")
        )
    out = tmp_path_factory.mktemp("wheel")
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", str(out), str(source)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    [path] = out.glob("*.whl")
    assert path.name == f"steward_evals-{VERSION}-py3-none-any.whl"
    with zipfile.ZipFile(path) as archive:
        yield archive


def test_only_steward_and_its_dist_info_at_the_top(wheel):
    names = wheel.namelist()
    assert {name.split("/")[0] for name in names} == {"steward", DIST_INFO}
    # `steward` is a namespace package: nothing of ours claims the name's __init__.
    assert "steward/__init__.py" not in names
    assert wheel.read(f"{DIST_INFO}/top_level.txt").decode().split() == ["steward"]


def test_entry_points_name_steward_modules(wheel):
    parser = configparser.ConfigParser()
    parser.read_string(wheel.read(f"{DIST_INFO}/entry_points.txt").decode())
    entry_points = {(group, name): parser[group][name] for group in parser.sections() for name in parser[group]}  # fmt: skip
    assert entry_points == {
        ("console_scripts", "steward"): "steward.cli.main:run",
        ("inspect_ai", "steward"): "steward.worker.inspect_plugins",
    }


def test_every_module_of_the_tree_is_in_the_wheel(wheel):
    names = set(wheel.namelist())
    expected = {
        "/".join([*package.split("."), *path.relative_to(REPO / folder).parts])
        for package, folder in PACKAGE_DIR.items()
        for path in (REPO / folder).rglob("*.py")
        if "__pycache__" not in path.parts
    }
    assert expected - names == set()


def test_templates_and_runbook_are_in_the_wheel(wheel):
    names = set(wheel.namelist())
    templates = REPO / "activities" / "workspace" / "templates"
    expected = {
        f"steward/activities/workspace/templates/{path.name}"
        for path in templates.iterdir()
        if path.is_file()
    }
    assert {
        "steward/activities/workspace/templates/AGENTS.md",
        "steward/activities/workspace/templates/status.md",
        "steward/activities/workspace/templates/evalset.py",
        "steward/activities/workspace/templates/gitignore",
    } <= expected
    assert expected - names == set()
    assert "steward/cli/runbook.md" in names
    packed = wheel.read("steward/activities/workspace/templates/gitignore")
    assert packed == (templates / "gitignore").read_bytes()


# Run in a venv where Steward is installed from the wheel (not editable): Inspect then names an
# extension by its installed package, and only literal registrations keep their bare names.
INSTALLED_CHECK = """
import steward.worker.approver as approver
assert "site-packages" in approver.__file__, approver.__file__
from inspect_ai import Task
from inspect_ai.dataset import Sample
from inspect_ai.model import get_model
task = Task(dataset=[Sample(input="x")], approval="steward")
print(task.approval[0].approver.__qualname__)
print(get_model("steward/offline").api.__class__.__module__)
"""


def test_an_installed_wheel_answers_to_the_names_users_write(wheel, tmp_path):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    installed = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target",
         str(next((venv / "lib").glob("python3*")) / "site-packages"), wheel.filename],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert installed.returncode == 0, installed.stderr[-3000:]
    # Steward's dependencies from this venv's site-packages, without its .pth files (the
    # editable install's finder would shadow the wheel).
    deps = next(Path(p) for p in sys.path if p.endswith("site-packages"))
    checked = subprocess.run(
        [str(python), "-c", INSTALLED_CHECK],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(deps), "HOME": str(tmp_path)},
    )
    assert checked.returncode == 0, checked.stderr[-3000:]
    approver_name, model_module = checked.stdout.split()
    assert approver_name.startswith("_make_approver"), approver_name
    assert model_module == "steward.worker.offline_model"
