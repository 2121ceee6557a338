"""Create and find workspaces: the user's side of a run."""

from __future__ import annotations

import json
import re
import uuid
from importlib import resources
from pathlib import Path

import yaml

from steward.activities.workspace.options import OPTIONS_FILE
from steward.workflows.options import option_sections
from steward.workflows.policy.layout import workspace_record_of

TEMPLATE_FILES = {  # workspace file -> template name
    "AGENTS.md": "AGENTS.md",
    "CLAUDE.md": "CLAUDE.md",
    "status.md": "status.md",
    ".gitignore": "gitignore",
}
DEFINITION_FILES = {  # workspace type -> its definition's files (workspace file -> template)
    "evalset": {"evalset.py": "evalset.py"},
    "flow": {"config.py": "flow_config.py", "tasks.py": "flow_tasks.py"},
}
DEFAULT_DEFINITION = "evalset.py"
FLOW_DEFINITION = "config.py"
HAWK_DEFINITIONS = ("hawk.yaml", "hawk.yml")  # worker/hawk_config.py


def default_definition(workspace: Path) -> str:
    """evalset.py; else a Flow workspace's config.py; else a Hawk workspace's hawk.yaml (or
    hawk.yml); else evalset.py (to be created)."""
    if (workspace / DEFAULT_DEFINITION).is_file():
        return DEFAULT_DEFINITION
    for other in (FLOW_DEFINITION, *HAWK_DEFINITIONS):
        if (workspace / other).is_file():
            return other
    return DEFAULT_DEFINITION


class WorkspaceError(Exception):
    """Not a workspace, or one that would be overwritten; the message is for the user."""


def options_yaml() -> str:
    lines = [
        "# Steward options for this workspace. Every option is listed with its default;",
        "# uncomment and change what you need. The environment (STEWARD_<OPTION>) and a",
        "# .env in this directory or a parent are read too; this file wins over both.",
        "# Durations need a unit: 30s, 10m, 1h, 2d.",
    ]
    section = None
    for group, name, default, description in option_sections():
        if group != section:
            lines += ["", f"# --- {group} ---"]
            section = group
        written = yaml.safe_dump(default, default_flow_style=True).removesuffix("...\n").strip()
        lines += [f"# {description}", f"# {name}: {written}"]
    return "\n".join(lines) + "\n"


def _template(name: str) -> str:
    return resources.files("steward.activities.workspace").joinpath("templates", name).read_text()


def init_workspace(directory: Path, force: bool = False, kind: str = "evalset") -> list[str]:
    """Create a workspace in `directory` whose definition is an eval_set() script (`evalset`)
    or an Inspect Flow config (`flow`); refuse to overwrite one unless `force`."""
    directory = directory.resolve()
    if kind not in DEFINITION_FILES:
        raise WorkspaceError(f"--type must be one of {', '.join(DEFINITION_FILES)}, not {kind!r}.")
    if directory.exists() and not directory.is_dir():
        raise WorkspaceError(f"{directory} exists and is not a directory; choose another path.")
    templates = {**TEMPLATE_FILES, **DEFINITION_FILES[kind]}
    existing = [name for name in [OPTIONS_FILE, *templates] if (directory / name).exists()]
    if existing and not force:
        raise WorkspaceError(
            f"{directory} already holds a workspace ({', '.join(existing)}); "
            "pass --force to overwrite those files."
        )
    directory.mkdir(parents=True, exist_ok=True)
    written = {OPTIONS_FILE: options_yaml()}
    written.update({name: _template(template) for name, template in templates.items()})
    for name, text in written.items():
        (directory / name).write_text(text)
    journal = directory / "journal.jsonl"
    if force or not journal.exists():
        journal.write_text("")
    workspace_id(directory)
    return [*written, "journal.jsonl"]


def find_workspace(start: Path) -> Path:
    """The nearest directory from `start` upwards holding `_steward.yaml`."""
    start = start.resolve()
    for directory in [start, *start.parents]:
        if (directory / OPTIONS_FILE).is_file():
            return directory
    raise WorkspaceError(
        f"{start} is not inside a Steward workspace (no {OPTIONS_FILE} here or above); "
        "run `steward init` first or pass --workspace."
    )


def workspace_id(workspace: Path) -> str:
    """A stable id for the workspace, kept in its state directory (made on first use)."""
    path = Path(workspace_record_of(str(workspace)))
    if path.is_file():
        return json.loads(path.read_text())["id"]
    path.parent.mkdir(parents=True, exist_ok=True)
    ident = uuid.uuid4().hex[:12]
    path.write_text(json.dumps({"id": ident}))
    return ident


def workflow_id_for(workspace: Path) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", workspace.name.lower()).strip("-")[:40] or "workspace"
    return f"steward-{slug}-{workspace_id(workspace)}"
