"""Hosts: the machines whose Steward workers a run may place task workers on, as plain data.

Each `steward worker` announces itself to the host registry (workflows/ledgers/host_registry.py) as
it starts and every HEARTBEAT_S after, with what it has to offer; a host silent for a run's
`host_timeout` is lost to that run, and its tasks go elsewhere. The placement of task workers
over the live hosts is a pure decision here (`place`), as are who counts as alive and which
hosts a run's `hosts` option admits.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Literal

from pydantic import BaseModel, Field

HEARTBEAT_S = 10.0  # how often a Steward worker tells the registry it is there
SILENT_AFTER_S = 3 * HEARTBEAT_S  # `steward hosts` calls a host this quiet "silent"
FORGET_AFTER_S = 24 * 3600.0  # a host silent this long leaves the registry's list


class HostInfo(BaseModel):
    """What a Steward worker says of its host (the registry adds when it last heard it)."""

    host_id: str
    queue: str  # the host's activity task queue (worker/connect.py's host_queue)
    cpus: int = 1
    memory_gb: float = 0.0
    sandboxes_free: int | None = None  # Docker sandboxes it may still start (None: unbounded)
    steward_version: str = ""
    inspect_version: str = ""
    started_at: datetime | None = None
    stopping: bool = False  # said by a worker stopping cleanly: no new placements there
    last_seen: datetime | None = None


class HostLost(BaseModel):
    """The registry to a run: this host has been silent for the run's host_timeout."""

    host_id: str
    queue: str
    last_seen: datetime


class Subscription(BaseModel):
    """A run to the registry: tell me when one of these hosts goes silent this long."""

    run_id: str
    hosts: list[str]
    timeout_s: float


class HostRegistryInput(BaseModel):
    hosts: dict[str, HostInfo] = Field(default_factory=dict)
    subscriptions: dict[str, Subscription] = Field(default_factory=dict)  # by run id
    told: dict[str, list[str]] = Field(default_factory=dict)  # run id -> hosts it was told of


def silent_for(host: HostInfo, now: datetime) -> float:
    return (now - host.last_seen).total_seconds() if host.last_seen else float("inf")


def is_live(host: HostInfo, now: datetime, timeout_s: float) -> bool:
    return not host.stopping and silent_for(host, now) < timeout_s


def admitted(
    hosts: list[HostInfo], allowed: list[str] | Literal["any"] | None, home: str
) -> list[HostInfo]:
    """The hosts a run's `hosts` option lets it use (home: the workspace's host id, always
    allowed). None admits only the home host."""
    if allowed is None:
        return [h for h in hosts if h.host_id == home]
    if allowed == "any":
        return list(hosts)
    names = set(allowed) | {home}
    return [h for h in hosts if h.host_id in names]


def next_expiry(
    hosts: dict[str, HostInfo], subscriptions: dict[str, Subscription],
    told: dict[str, list[str]], now: datetime,
) -> timedelta | None:  # fmt: skip
    """How long until the next subscribed host turns lost (None: nothing to wait for)."""
    waits = [
        sub.timeout_s - silent_for(hosts[h], now)
        for run_id, sub in subscriptions.items()
        for h in sub.hosts
        if h in hosts and h not in told.get(run_id, []) and hosts[h].last_seen
    ]
    return timedelta(seconds=max(0.0, min(waits))) if waits else None


def newly_lost(
    hosts: dict[str, HostInfo], subscriptions: dict[str, Subscription],
    told: dict[str, list[str]], now: datetime,
) -> list[tuple[str, HostLost]]:  # fmt: skip
    """(run id, loss) for each subscribed host silent past that run's timeout, not yet told."""
    losses = []
    for run_id, sub in subscriptions.items():
        for name in sub.hosts:
            host = hosts.get(name)
            if host is None or host.last_seen is None or name in told.get(run_id, []):
                continue
            if silent_for(host, now) >= sub.timeout_s:
                losses.append(
                    (run_id, HostLost(host_id=name, queue=host.queue, last_seen=host.last_seen))
                )
    return losses


class HostLoad(BaseModel):
    """A live host as placement sees it: what it offers and what the run already runs there."""

    host_id: str
    queue: str
    cpus: int
    sandboxes_free: int | None = None
    workers: int = 0  # this run's task workers on it now


def place(
    groups: list[list[str]], hosts: list[HostLoad], last_host: dict[str, str],
    sandboxed: set[str] | None = None,
) -> list[str | None]:  # fmt: skip
    """The host for each group of tasks to spawn (task identifiers), in order; None where no
    host can take it (no live host, or only hosts without sandbox room for a sandboxed task).

    A group goes back to the host its first task last ran on while that host is live (its
    files and warm caches are there); otherwise to the host with the most free CPU per worker,
    counting the workers placed so far, so tasks spread. A host with no sandbox room left
    takes no sandboxed task."""
    sandboxed = sandboxed or set()
    load = {h.host_id: h.model_copy() for h in hosts}
    chosen: list[str | None] = []
    for group in groups:
        needs_sandbox = any(t in sandboxed for t in group)
        room = [
            h
            for h in load.values()
            if not needs_sandbox or h.sandboxes_free is None or h.sandboxes_free > 0
        ]
        previous = next((last_host[t] for t in group if t in last_host), None)
        host = next((h for h in room if h.host_id == previous), None)
        if host is None and room:
            host = min(room, key=lambda h: (-h.cpus / (h.workers + 1), h.workers, h.host_id))
        if host is None:
            chosen.append(None)
            continue
        host.workers += 1
        if needs_sandbox and host.sandboxes_free is not None:
            host.sandboxes_free -= 1
        chosen.append(host.host_id)
    return chosen
