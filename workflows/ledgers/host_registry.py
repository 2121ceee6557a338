"""HostRegistry: one long-lived workflow that knows the hosts of a Temporal namespace.

Every Steward worker signals `heartbeat` (signal-with-start: the first one starts the
registry) as it starts and every HEARTBEAT_S after; `steward hosts` queries the list. A run
that placed task workers on other hosts `subscribe`s to them with its host_timeout; when one of
them has been silent that long the registry signals the run HOST_LOST, once per silence (a host
that speaks again can be lost again). Time here is the workflow's own, so a lost host is seen
by a durable timer, not by anyone polling. It continues as new when its history grows long,
carrying what it knows.
"""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from steward.workflows import metrics
    from steward.workflows.names import Signal, WorkflowType
    from steward.workflows.policy.hosts import (
        FORGET_AFTER_S,
        SILENT_AFTER_S,
        HostInfo,
        HostLost,
        HostRegistryInput,
        Subscription,
        is_live,
        newly_lost,
        next_expiry,
        silent_for,
    )

HOST_REGISTRY_ID = "steward-hosts"


@workflow.defn(name=WorkflowType.HOST_REGISTRY)
class HostRegistry:
    @workflow.init
    def __init__(self, start: HostRegistryInput) -> None:
        self._hosts = dict(start.hosts)
        self._subscriptions = dict(start.subscriptions)
        self._told = {run: list(hosts) for run, hosts in start.told.items()}
        self._changed = False

    @workflow.run
    async def run(self, start: HostRegistryInput) -> None:
        while not workflow.info().is_continue_as_new_suggested():
            self._changed = False
            wait = next_expiry(self._hosts, self._subscriptions, self._told, workflow.now())
            try:
                await workflow.wait_condition(
                    lambda: self._changed or workflow.info().is_continue_as_new_suggested(),
                    timeout=wait + timedelta(milliseconds=100) if wait is not None else None,
                )
            except TimeoutError:
                pass
            await self._tell_losses()
            self._forget_long_silent()
            self._show()
        await workflow.wait_condition(workflow.all_handlers_finished)
        workflow.continue_as_new(
            HostRegistryInput(hosts=self._hosts, subscriptions=self._subscriptions, told=self._told)
        )

    async def _tell_losses(self) -> None:
        for run_id, loss in newly_lost(
            self._hosts, self._subscriptions, self._told, workflow.now()
        ):
            self._told.setdefault(run_id, []).append(loss.host_id)
            try:
                await workflow.get_external_workflow_handle(run_id).signal(Signal.HOST_LOST, loss)
            except Exception:  # noqa: BLE001 - the run has ended: it needs no more news
                self._subscriptions.pop(run_id, None)
                self._told.pop(run_id, None)

    def _forget_long_silent(self) -> None:
        now = workflow.now()
        for name in [n for n, h in self._hosts.items() if silent_for(h, now) > FORGET_AFTER_S]:
            del self._hosts[name]

    def _show(self) -> None:
        """How many hosts it knows and how many spoke lately, as metrics (no command)."""
        now = workflow.now()
        live = sum(is_live(h, now, SILENT_AFTER_S) for h in self._hosts.values())
        metrics.record(metrics.HOSTS_LIVE, live)
        metrics.record(metrics.HOSTS_KNOWN, len(self._hosts))

    # ---------------------------------------------------------------- commands
    @workflow.signal(name=Signal.HOST_HEARTBEAT)
    def heartbeat(self, info: HostInfo) -> None:
        self._hosts[info.host_id] = info.model_copy(update={"last_seen": workflow.now()})
        for told in self._told.values():  # speaking again: it can be lost again
            if info.host_id in told:
                told.remove(info.host_id)
        self._changed = True

    @workflow.signal(name=Signal.HOST_SUBSCRIBE)
    def subscribe(self, subscription: Subscription) -> None:
        if subscription.hosts:
            self._subscriptions[subscription.run_id] = subscription
        else:  # the run has no task workers elsewhere any more
            self._subscriptions.pop(subscription.run_id, None)
            self._told.pop(subscription.run_id, None)
        self._changed = True

    @workflow.query
    def hosts(self) -> list[HostInfo]:
        return sorted(self._hosts.values(), key=lambda h: h.host_id)


__all__ = ["HOST_REGISTRY_ID", "HostLost", "HostRegistry"]
