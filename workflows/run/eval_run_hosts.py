"""Task workers on many hosts (a run whose `hosts` option admits more than the workspace's).

Placement: before spawning, the run reads the host registry (workflows/ledgers/host_registry.py),
keeps the hosts that are live and admitted, and places each group of tasks with the pure
policy of workflows/policy/hosts.py. A worker on another host is spawned, watched, observed, retuned
and stopped through that host's queue; the workspace files stay on the workspace's host.

Loss: the run subscribes to the hosts its workers are on; the registry signals HOST_LOST once
one has been silent for the run's host_timeout (a remote activity that cannot start within
host_timeout says the same). The next tend forgets that host's workers (their watches are
cancelled), puts their tasks back to pending and places them on the hosts left; they resume
from their logs on the shared storage. The task logs' owner records (activities/logs/log_owners.py)
make sure a worker of the lost host that comes back writes none of them again. A run whose
`hosts` is unset never calls any of this: its history is what it always was.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.exceptions import ActivityError

with workflow.unsafe.imports_passed_through():
    from steward.workflows.activity_io import (
        HostStorageRequest,
        ObserveRequest,
        SetpointChange,
        SetpointRequest,
        WorkerEnd,
    )
    from steward.workflows.contracts import Notice, Observation, TaskState, WorkerProcess
    from steward.workflows.ledgers.host_registry import HOST_REGISTRY_ID
    from steward.workflows.names import Activity, Signal
    from steward.workflows.policy.hosts import (
        HostInfo,
        HostLoad,
        HostLost,
        Subscription,
        admitted,
        is_live,
        place,
    )
    from steward.workflows.run import eval_run_versions as versions
    from steward.workflows.run.eval_run_context import RunContext, cause_of


OBSERVE_START_WITHIN = timedelta(seconds=5)  # a host slower than this to answer is skipped
# ... and one that took the question up and then went quiet (its link down mid-call) holds the
# tend no longer than this (the default 60 s kept a partitioned host's tasks where they were).
ASK_WITHIN = timedelta(seconds=10)


def placing(ctx: RunContext) -> bool:
    return ctx.settings.hosts is not None


async def placements(ctx: RunContext, groups: list[list[TaskState]]) -> list[HostLoad | None]:
    """Where each group goes (None: the workspace's host, as a run without `hosts` does).
    With no other live host admitted, everything stays home."""
    if not placing(ctx) or not groups:
        return [None] * len(groups)
    known: list[HostInfo] = await ctx.activity(
        Activity.LIST_HOSTS, ctx.run_id, result_type=list[HostInfo]
    )
    heard_again(ctx, known)
    now, state = workflow.now(), ctx.state
    home = next((h.host_id for h in known if h.queue == ctx.input.host_queue), "")
    live = [
        h
        for h in admitted(known, ctx.settings.hosts, home)
        if h.queue == ctx.input.host_queue
        or (is_live(h, now, ctx.settings.host_timeout) and h.host_id not in state.lost_hosts)
    ]
    if versions.checks_host_storage():
        live = await _able(ctx, live)
    if not any(h.queue != ctx.input.host_queue for h in live):
        return [None] * len(groups)
    loads = [
        HostLoad(
            host_id=h.host_id,
            queue=h.queue,
            cpus=h.cpus,
            sandboxes_free=h.sandboxes_free,
            workers=sum(1 for w in state.workers.values() if (w.host or home) == h.host_id),
        )
        for h in live
    ]
    # Where each task last ran: its host, or the workspace's for a task that ran there.
    last = {t.spec.identifier: t.host or home for g in groups for t in g if t.host or t.attempts}
    last = {identifier: host for identifier, host in last.items() if host}
    docker = {t.spec.identifier for g in groups for t in g if t.spec.sandbox == "docker"}
    chosen = place([[t.spec.identifier for t in g] for g in groups], loads, last, docker)
    by_id = {h.host_id: h for h in loads}
    return [
        None if name is None or by_id[name].queue == ctx.input.host_queue else by_id[name]
        for name in chosen
    ]


async def _able(ctx: RunContext, live: list[HostInfo]) -> list[HostInfo]:
    """host-check-v1: the hosts that can see the definition and write the log storage, each
    asked on its own queue (all at once) before it takes a task worker (a host that could not
    was picked, its spawn failed and it was called lost). A refusal is journalled once with
    its reason, and asked again at the next placement (a host put right is used); a host that
    does not answer the question is left out this time."""
    state = ctx.state
    request = HostStorageRequest(
        workspace=ctx.workspace, definition=ctx.input.definition, log_dir=state.log_dir
    )
    remote = [h for h in live if h.queue != ctx.input.host_queue]

    async def ask(host: HostInfo) -> str | None:
        try:
            return await _ask_host(
                ctx, Activity.CHECK_HOST_STORAGE, request, str | None, host.queue
            )
        except ActivityError as err:
            ctx.journal("host not asked", host=host.host_id, problem=cause_of(err))
            return "unasked"

    said = await asyncio.gather(*map(ask, remote))
    answers = dict(zip([h.host_id for h in remote], said, strict=True))
    able = []
    for host in live:
        problem = answers.get(host.host_id)
        if host.queue == ctx.input.host_queue or problem is None:
            if state.refused_hosts.pop(host.host_id, None) is not None:
                ctx.journal("host accepted", host=host.host_id)
            able.append(host)
        elif problem != "unasked" and state.refused_hosts.get(host.host_id) != problem:
            state.refused_hosts[host.host_id] = problem
            ctx.journal("host refused", host=host.host_id, reason=problem)
    return able


async def _ask_host(ctx: RunContext, name: str, request: Any, result_type: Any, queue: str) -> Any:
    """A quick question to another host: once, and only if it takes it up within
    OBSERVE_START_WITHIN (a host going away must not hold up the tend)."""
    return await ctx.activity(
        name,
        request,
        result_type=result_type,
        queue=queue,
        attempts=1,
        start_within=OBSERVE_START_WITHIN,
        timeout=ASK_WITHIN,
    )


async def observe_remote(ctx: RunContext, observation: Observation, ends: list[WorkerEnd]) -> None:
    """Each other host observes its own workers (liveness, control sockets, stuck samples) and
    their tasks; what it saw replaces what the workspace's host could only read from the logs.
    A host that does not answer soon leaves its workers as their watches last said (alive,
    unless one saw the exit). The hosts are asked at once (hosts-at-once-v1), so two hosts cut
    off hold the tend for one ASK_WITHIN, not two."""
    state = ctx.state
    asks: list[tuple[str, list[WorkerProcess], ObserveRequest]] = []
    for queue in sorted({w.queue for w in state.workers.values() if w.queue}):
        workers = [w for w in state.workers.values() if w.queue == queue]
        mine = {i for w in workers for i in w.tasks}
        request = ObserveRequest(
            log_dir=state.log_dir,
            workers=workers,
            tasks=[
                t.spec for t in state.tasks if t.spec.identifier in mine and t.phase != "complete"
            ],
        )
        if versions.looks_for_remote_stuck():  # its workers' stuck samples too
            request.stuck_after = ctx.settings.stuck_after
        asks.append((queue, workers, request))

    async def ask(queue: str, request: ObserveRequest) -> Observation | ActivityError:
        try:
            return await _ask_host(ctx, Activity.OBSERVE_RUN, request, Observation, queue)
        except ActivityError as err:
            return err

    if len(asks) > 1 and versions.asks_hosts_at_once():
        answers = await asyncio.gather(*(ask(queue, request) for queue, _, request in asks))
    else:
        answers = [await ask(queue, request) for queue, _, request in asks]
    for (_, workers, _), seen in zip(asks, answers, strict=True):
        if isinstance(seen, ActivityError):
            ctx.journal("host not observed", host=workers[0].host, problem=cause_of(seen))
            for end in ends:
                if end.kind == "exited" and end.worker_id in {w.worker_id for w in workers}:
                    observation.alive[end.worker_id] = False
            continue
        observation.alive.update(seen.alive)
        observation.tasks.update(seen.tasks)
        if seen.anomalies:  # stuck samples (not ledger kinds: no ledger to go through)
            observation.anomalies = (observation.anomalies or []) + seen.anomalies


async def apply_setpoints(ctx: RunContext, changes: list[SetpointChange]) -> list[str]:
    """Retune workers through their control sockets, each on its own host; the problems."""
    queue_of = {w.socket: w.queue for w in ctx.state.workers.values()}
    home = [c for c in changes if not queue_of.get(c.socket)]
    problems: list[str] = []
    if home:
        problems += await ctx.activity(
            Activity.APPLY_SETPOINTS, SetpointRequest(changes=home), result_type=list[str]
        )
    for queue in sorted({queue_of[c.socket] for c in changes if queue_of.get(c.socket)}):
        remote = [c for c in changes if queue_of.get(c.socket) == queue]
        try:
            problems += await _ask_host(
                ctx, Activity.APPLY_SETPOINTS, SetpointRequest(changes=remote), list[str], queue
            )
        except ActivityError as err:
            problems.append(f"{queue}: {cause_of(err)}")
    return problems


async def subscribe(ctx: RunContext) -> None:
    """Tell the registry which other hosts this run's workers are on now (none: unsubscribe)."""
    if not placing(ctx):
        return
    hosts = sorted({w.host for w in ctx.state.workers.values() if w.queue})
    if hosts == ctx.subscribed_hosts:
        return
    try:
        await workflow.get_external_workflow_handle(HOST_REGISTRY_ID).signal(
            Signal.HOST_SUBSCRIBE,
            Subscription(run_id=ctx.run_id, hosts=hosts, timeout_s=ctx.settings.host_timeout),
        )
    except Exception as err:  # noqa: BLE001 - no registry: remote activities still time out
        ctx.journal("host registry not reached", problem=str(err))
        return
    ctx.subscribed_hosts = hosts


def lost(ctx: RunContext, loss: HostLost) -> None:
    """A host went silent (the registry said so, or an activity there could not start)."""
    state = ctx.state
    if loss.host_id not in state.lost_hosts and all(
        known.host_id != loss.host_id for known in state.host_losses
    ):
        state.host_losses.append(loss)  # in the state: a continue-as-new carries it over
        ctx.wake = True


async def recheck_lost(ctx: RunContext) -> None:
    """host-back-v1: while a host is lost to the run, each tend asks the registry whether it
    is heard again (not only a tend that places work), so the operator hears of its return."""
    if not (placing(ctx) and ctx.state.lost_hosts and versions.tells_of_hosts_back()):
        return
    known: list[HostInfo] = await ctx.activity(
        Activity.LIST_HOSTS, ctx.run_id, result_type=list[HostInfo]
    )
    heard_again(ctx, known)


def heard_again(ctx: RunContext, known: list[HostInfo]) -> None:
    """Hosts lost earlier that the registry hears again may take work again (the tasks moved
    off them stay where they went: their logs belong to the new workers)."""
    now = workflow.now()
    for host in known:
        lost_at = ctx.state.lost_hosts.get(host.host_id)
        if lost_at is not None and host.last_seen and host.last_seen > lost_at:
            if is_live(host, now, ctx.settings.host_timeout):
                del ctx.state.lost_hosts[host.host_id]
                ctx.journal("host back", host=host.host_id)
                if versions.tells_of_hosts_back():
                    ctx.state.outbox.append(
                        Notice(
                            kind="host_back",
                            text=f"Host {host.host_id} is heard again (silent since "
                            f"{lost_at:%H:%M:%S} UTC): it keeps none of the tasks moved off "
                            "it and may take new work.",
                        )
                    )


def forget_lost_workers(ctx: RunContext) -> list[str]:
    """The workers of each newly lost host are forgotten (watches cancelled) and their tasks
    go back to pending, to be placed on the hosts left in this tend; their names."""
    state, pending = ctx.state, []
    losses, state.host_losses = state.host_losses, []
    for loss in losses:
        if loss.host_id in state.lost_hosts:
            continue
        state.lost_hosts[loss.host_id] = loss.last_seen
        gone: list[WorkerProcess] = [w for w in state.workers.values() if w.host == loss.host_id]
        moved: list[str] = []
        for worker in gone:
            watch = ctx.watches.pop(worker.worker_id, None)
            if watch is not None and not watch.done():
                watch.cancel()
            state.workers.pop(worker.worker_id, None)
            for identifier in worker.tasks:
                task = state.task(identifier)
                if task.phase == "running" and task.worker_id == worker.worker_id:
                    task.phase, task.worker_id = "pending", None
                    moved.append(task.spec.name)
        ctx.journal(
            "host lost",
            host=loss.host_id,
            last_seen=loss.last_seen.isoformat(),
            workers=[w.worker_id for w in gone],
            tasks=moved,
        )
        pending += moved
        if moved:
            state.outbox.append(
                Notice(
                    kind="host_lost",
                    text=f"Host {loss.host_id} has been silent since "
                    f"{loss.last_seen:%H:%M:%S} UTC: {len(moved)} task(s) move to the other "
                    f"hosts and resume from their logs ({', '.join(moved)}).",
                )
            )
    return pending
