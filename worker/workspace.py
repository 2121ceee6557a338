"""What the CLI needs of a workspace, from the one place that does it (the CLI never imports
activities directly; the worker hosts them)."""

from steward.activities.capacity import docker_pools
from steward.activities.definition.capture import (
    CaptureTimeout,
    DefinitionError,
    capture_definition_sync,
)
from steward.activities.logs import log_store
from steward.activities.logs.paths import unwritable
from steward.activities.workspace.agent_cursors import read_cursor, remember_cursor
from steward.activities.workspace.options import (
    OptionsError,
    definition_hash,
    load_connection_options,
    load_options,
)
from steward.activities.workspace.workspace import (
    DEFAULT_DEFINITION,
    WorkspaceError,
    default_definition,
    find_workspace,
    init_workspace,
    workflow_id_for,
)
from steward.activities.workspace.workspace_files import JOURNAL, read_journal

__all__ = [
    "CaptureTimeout",
    "DEFAULT_DEFINITION",
    "JOURNAL",
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
    "load_connection_options",
    "load_options",
    "read_cursor",
    "read_journal",
    "remember_cursor",
    "unwritable",
    "workflow_id_for",
]
