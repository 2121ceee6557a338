"""What the host registry knows (workflows/ledgers/host_registry.py), for a run placing task workers:
read with a query, on the run's own host."""

from __future__ import annotations

from temporalio import activity
from temporalio.service import RPCError

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
