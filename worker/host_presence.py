"""This host's presence in the host registry (workflows/ledgers/host_registry.py): what it offers, said
as the Steward worker starts and every HEARTBEAT_S after, and `stopping` as it stops cleanly.

The first heartbeat starts the registry (signal-with-start); a heartbeat that cannot be sent
(the server briefly away) is logged and the next one tries again: a host is lost only after a
run's whole host_timeout of silence.
"""

from __future__ import annotations

import asyncio
import os
from datetime import UTC, datetime
from importlib.metadata import PackageNotFoundError, version

import psutil
import structlog
from temporalio.client import Client
from temporalio.common import WorkflowIDConflictPolicy, WorkflowIDReusePolicy
from temporalio.service import RPCError

from steward.worker.connect import host_id, host_queue
from steward.worker.version import steward_version
from steward.workflows.contracts import WORKFLOW_TASK_QUEUE
from steward.workflows.ledgers.capacity_ledger import CapacityLedger
from steward.workflows.ledgers.host_registry import HOST_REGISTRY_ID, HostRegistry
from steward.workflows.names import Signal
from steward.workflows.policy.capacity import domain_id, free
from steward.workflows.policy.hosts import HEARTBEAT_S, HostInfo, HostRegistryInput

log = structlog.get_logger("steward.host")


def _version(package: str) -> str:
    try:
        return version(package)
    except PackageNotFoundError:
        return ""


async def sandboxes_free(client: Client) -> int | None:
    """The Docker sandboxes this host's capacity ledger still has room for (None: no ledger
    yet, or no bound)."""
    handle = client.get_workflow_handle_for(CapacityLedger.run, domain_id("docker", host_queue()))
    try:
        view = await handle.query(CapacityLedger.view)
    except RPCError:
        return None
    room = free(view.ledger, "sandboxes")
    return None if room is None else int(room)


def describe_host(
    started_at: datetime, stopping: bool = False, sandboxes: int | None = None
) -> HostInfo:
    # The CPUs this process may use: a worker pinned with taskset offers what it was given.
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return HostInfo(
        host_id=host_id(),
        queue=host_queue(),
        cpus=cpus or 1,
        memory_gb=round(psutil.virtual_memory().total / 2**30, 1),
        steward_version=steward_version(),
        inspect_version=_version("inspect_ai"),
        started_at=started_at,
        stopping=stopping,
        sandboxes_free=sandboxes,
    )


async def announce(client: Client, info: HostInfo) -> None:
    await client.start_workflow(
        HostRegistry.run,
        HostRegistryInput(),
        id=HOST_REGISTRY_ID,
        task_queue=WORKFLOW_TASK_QUEUE,
        id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
        id_reuse_policy=WorkflowIDReusePolicy.ALLOW_DUPLICATE,
        start_signal=Signal.HOST_HEARTBEAT,
        start_signal_args=[info],
    )


async def keep_present(client: Client, stop: asyncio.Event) -> None:
    """Heartbeat until `stop` is set, then say this host is stopping."""
    started_at = datetime.now(UTC)
    while not stop.is_set():
        try:
            await announce(
                client, describe_host(started_at, sandboxes=await sandboxes_free(client))
            )
        except Exception as err:  # noqa: BLE001 - the next heartbeat tries again
            log.warning("host heartbeat not sent", error=str(err))
        try:
            await asyncio.wait_for(stop.wait(), HEARTBEAT_S)
        except TimeoutError:
            pass
    try:
        await asyncio.wait_for(announce(client, describe_host(started_at, stopping=True)), 5)
    except Exception as err:  # noqa: BLE001 - silence says the same, only later
        log.warning("host stop not announced", error=str(err))
