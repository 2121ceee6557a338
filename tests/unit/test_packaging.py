"""What pyproject.toml installs: one import package, `steward`, holding every room of the tree.

Steward once installed four generic top-level packages (`cli`, `worker`, ...), and a workspace
with its own `worker/` package shadowed Steward's Inspect plugin. These checks keep the
packaging honest as rooms are added: a folder of modules missing from `packages` would be
missing from the wheel, and an entry point outside `steward.` would be a top-level name again.
(tests/integration/test_wheel.py builds the wheel itself.)"""

from __future__ import annotations

import ast
import importlib.metadata
import importlib.util
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())
SETUPTOOLS = PYPROJECT["tool"]["setuptools"]
ROOTS = {"steward.workflows": "workflows", "steward.activities": "activities",
         "steward.worker": "worker", "steward.cli": "cli"}  # fmt: skip
# A folder of files the wheel carries but nobody imports as modules.
DATA_PACKAGES = {"steward.activities.workspace.templates"}


def _source_folders(root: str) -> list[Path]:
    return [
        folder
        for folder in [REPO / root, *(REPO / root).rglob("*")]
        if folder.is_dir() and folder.name != "__pycache__"
    ]


def _dotted(folder: Path, package: str, root: str) -> str:
    return ".".join([package, *folder.relative_to(REPO / root).parts])


def _folder(package: str) -> Path:
    """The checkout's folder of a dotted steward package."""
    parts = package.split(".")
    return REPO / ROOTS[".".join(parts[:2])] / Path(*parts[2:])


def test_package_dir_maps_the_four_roots_under_steward():
    assert SETUPTOOLS["package-dir"] == ROOTS


def test_packages_are_exactly_the_tree_s_python_folders_and_the_templates():
    in_tree = {
        _dotted(folder, package, root)
        for package, root in ROOTS.items()
        for folder in _source_folders(root)
        if (folder / "__init__.py").exists()
    }
    assert set(SETUPTOOLS["packages"]) == in_tree | DATA_PACKAGES
    assert len(SETUPTOOLS["packages"]) == len(set(SETUPTOOLS["packages"]))


def test_every_folder_of_modules_is_a_package():
    """A room created without an `__init__.py` would be neither listed above nor shipped."""
    data_folders = {_folder(package) for package in DATA_PACKAGES}
    missing = [
        str(folder.relative_to(REPO))
        for root in ROOTS.values()
        for folder in _source_folders(root)
        if folder not in data_folders
        and any(folder.glob("*.py"))
        and not (folder / "__init__.py").exists()
    ]
    assert missing == []


def test_package_data_names_listed_packages_and_existing_files():
    for package, patterns in SETUPTOOLS["package-data"].items():
        assert package in SETUPTOOLS["packages"]
        for pattern in patterns:
            assert list(_folder(package).glob(pattern)), f"{package}: nothing matches {pattern}"


def _entry_points() -> dict[tuple[str, str], str]:
    """(group, name) -> "module:attr" (or "module") over the scripts, gui-scripts and every
    entry-point group, named by the groups installed metadata uses."""
    project = PYPROJECT["project"]
    found = {("console_scripts", k): v for k, v in project.get("scripts", {}).items()}
    found |= {("gui_scripts", k): v for k, v in project.get("gui-scripts", {}).items()}
    for group, points in project.get("entry-points", {}).items():
        found |= {(group, k): v for k, v in points.items()}
    return found


def test_every_entry_point_and_script_points_into_steward():
    points = _entry_points()
    assert ("console_scripts", "steward") in points and ("inspect_ai", "steward") in points
    for name, target in points.items():
        module, _, attribute = target.partition(":")
        assert module.startswith("steward."), f"{name} points outside steward: {target}"
        spec = importlib.util.find_spec(module)
        assert spec is not None and spec.origin, f"{name}: {module} is not importable"
        # ...and it is this checkout's file, mapped through package-dir.
        root = ROOTS[".".join(module.split(".")[:2])]
        assert Path(spec.origin).is_relative_to(REPO / root), spec.origin
        if attribute:
            tree = ast.parse(Path(spec.origin).read_text())
            defined = {
                node.name
                for node in tree.body
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
            }
            assert attribute in defined, f"{name}: {module} defines no {attribute}"


def test_installed_environment_registers_no_bare_top_level_plugin():
    """A leftover install of the old distribution (`steward`, plugin `worker.inspect_plugins`)
    would bring the shadowing back; `make setup` uninstalls it."""
    ours = importlib.metadata.distribution(PYPROJECT["project"]["name"])
    assert ours.read_text("top_level.txt").split() == ["steward"]
    installed = {(e.group, e.name): e.value for e in ours.entry_points}
    assert installed == _entry_points()  # else the install is stale: `make setup`
    bare = [
        e.value
        for e in importlib.metadata.entry_points(group="inspect_ai")
        if e.value.split(".")[0] in {"cli", "worker", "workflows", "activities"}
    ]
    assert bare == []
