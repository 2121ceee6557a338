"""What the CLI needs of a workspace, from the one place that does it (the CLI never imports
activities directly; the worker hosts them)."""

from activities import docker_pools, log_store
from activities.capture import DefinitionError, capture_definition_sync
from activities.options import OptionsError, definition_hash, load_options
from activities.paths import unwritable
from activities.workspace import (
    DEFAULT_DEFINITION,
    WorkspaceError,
    default_definition,
    find_workspace,
    init_workspace,
    workflow_id_for,
)
from activities.workspace_files import read_journal

__all__ = [
    "DEFAULT_DEFINITION",
    "default_definition",
    "DefinitionError",
    "OptionsError",
    "WorkspaceError",
    "capture_definition_sync",
    "definition_hash",
    "docker_pools",
    "log_store",
    "find_workspace",
    "init_workspace",
    "load_options",
    "read_journal",
    "unwritable",
    "workflow_id_for",
]
