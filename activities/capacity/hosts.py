"""What the host registry knows (workflows/ledgers/host_registry.py), for a run placing task workers:
read with a query, on the run's own host."""

from __future__ import annotations

import os
import socket
from pathlib import Path

from temporalio import activity
from temporalio.service import RPCError

from steward.workflows.activity_io import HostStorageRequest
from steward.workflows.ledgers.host_registry import HOST_REGISTRY_ID, HostRegistry
from steward.workflows.names import Activity
from steward.workflows.policy.hosts import HostInfo


@activity.defn(name=Activity.LIST_HOSTS)
async def list_hosts(run_id: str) -> list[HostInfo]:
    """The hosts the registry knows (asked by the run `run_id`); none when it has never been
    started."""
    handle = activity.client().get_workflow_handle_for(HostRegistry.run, HOST_REGISTRY_ID)
    try:
        return await handle.query(HostRegistry.hosts)
    except RPCError:  # no registry yet (no worker has announced itself)
        return []


def storage_problem(request: HostStorageRequest) -> str | None:
    """Why this host cannot run the run's task workers, in one sentence, or None: it must see
    the workspace's definition and be able to write the log storage."""
    where = f"host {os.environ.get('STEWARD_HOST_ID') or socket.gethostname()}"
    definition = Path(request.workspace) / request.definition
    if not definition.is_file() or not os.access(definition, os.R_OK):
        return (
            f"{where} cannot read the definition {definition}: mount the workspace at the same "
            "path there (shared_storage), or leave the host out of `hosts`"
        )
    if "://" in request.log_dir:
        import fsspec

        try:
            fs, path = fsspec.core.url_to_fs(request.log_dir)
            fs.ls(path)
        except FileNotFoundError:
            return None  # not made yet: the first worker makes it
        except Exception as err:  # noqa: BLE001 - any failure to reach it is the reason
            return f"{where} cannot reach the log storage {request.log_dir}: {err}"
        return None
    logs = Path(request.log_dir)
    probe = logs if logs.exists() else logs.parent
    if not probe.is_dir() or not os.access(probe, os.W_OK | os.X_OK):
        return (
            f"{where} cannot write the log directory {request.log_dir}: mount it at the same path "
            "there (shared_storage), or leave the host out of `hosts`"
        )
    return None


@activity.defn(name=Activity.CHECK_HOST_STORAGE)
def check_host_storage(request: HostStorageRequest) -> str | None:
    """Run on the host in question (its own queue)."""
    return storage_problem(request)
