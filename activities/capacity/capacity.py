"""Capacity activities: probe a domain, and ask its ledger for admission.

The probe is read at the moment of each decision, with the workspace's options re-read, so a
changed bound applies to the next decision without restarting anything.
"""

from __future__ import annotations

import asyncio
import random
from pathlib import Path

import structlog
from temporalio import activity
from temporalio.common import WorkflowIDConflictPolicy
from temporalio.service import RPCError, RPCStatusCode

from steward.activities.capacity.probe_docker import docker_reading, reap_sandboxes
from steward.activities.capacity.probe_kubernetes import kubernetes_reading, quota_event
from steward.activities.workspace.dotenv_files import workspace_environment
from steward.activities.workspace.options import OptionsError, load_options
from steward.workflows.ledgers.capacity_ledger import TASK_QUEUE as LEDGER_TASK_QUEUE
from steward.workflows.ledgers.capacity_ledger import CapacityLedger
from steward.workflows.names import Activity, Signal
from steward.workflows.policy.capacity import ProbeReading, domain_id
from steward.workflows.policy.capacity_contracts import (
    AdmissionCall,
    AdmissionOutcome,
    LedgerInput,
    ProbeRequest,
)

log = structlog.get_logger("steward.capacity")
_last_source: dict[str, str] = {}  # domain -> the bound's last resolution (logged on change)


def kubernetes_namespace(configured: str | None) -> str:
    """The namespace named in the options, else the kubeconfig context's, else default."""
    if configured:
        return configured
    try:
        from kubernetes import config

        _, active = config.list_kube_config_contexts()
        return (active or {}).get("context", {}).get("namespace") or "default"
    except Exception:  # noqa: BLE001 - no kubeconfig: the API's own default
        return "default"


def probe(request: ProbeRequest, host_queue: str) -> tuple[ProbeReading, str]:
    """The domain's reading now, and the domain's ledger id (a Docker domain is this host,
    named by its activity queue)."""
    setting, namespace, problem = None, request.namespace, None
    if request.workspace:
        try:
            options = load_options(Path(request.workspace))
            setting = options.max_concurrent_sandboxes
            namespace = namespace or options.kubernetes_namespace
        except OptionsError as err:  # keep deciding on what the environment says
            problem = str(err)
    if request.backend == "kubernetes":
        namespace = kubernetes_namespace(namespace)
        reading = kubernetes_reading(namespace)
        domain = domain_id("kubernetes", namespace)
    elif request.backend == "docker":
        environ = workspace_environment(request.workspace)
        reading = docker_reading(setting, base_url=environ.get("DOCKER_HOST"), environ=environ)
        domain = domain_id("docker", host_queue)
    else:
        return ProbeReading(backend="local", source="local: unbounded"), domain_id(
            "local", host_queue
        )
    if problem:
        both = "; ".join(p for p in (problem, reading.problem) if p)
        reading = reading.model_copy(update={"problem": both})
    if _last_source.get(domain) != reading.source:
        _last_source[domain] = reading.source
        log.info("capacity bound", domain=domain, limits=reading.limits, source=reading.source)
    return reading, domain


@activity.defn(name=Activity.PROBE_CAPACITY)
async def probe_capacity(request: ProbeRequest) -> ProbeReading:
    reading, _ = await asyncio.to_thread(probe, request, activity.info().task_queue)
    return reading


@activity.defn(name=Activity.REQUEST_ADMISSION)
async def request_admission(call: AdmissionCall) -> AdmissionOutcome:
    """Probe, then ask the domain's ledger (started on first use): by signal when the run
    waits for the answer signal (ask-by-signal-v1, `request_id` set), else through its `admit`
    update. Idempotent: the ledger keeps one entry per run however often this is retried."""
    reading, domain = await asyncio.to_thread(probe, call.probe, activity.info().task_queue)
    admit = call.admit.model_copy(
        update={
            "reading": reading,
            "host_queue": activity.info().task_queue,
            "probe": call.probe.model_dump(mode="json"),
        }
    )
    client = activity.client()
    started = dict(
        id=domain,
        task_queue=LEDGER_TASK_QUEUE,
        id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
    )
    if admit.request_id:
        # ask-by-signal-v1: signal-with-start; the ledger answers the run by signal.
        await client.start_workflow(
            CapacityLedger.run,
            LedgerInput(domain=domain),
            start_signal=Signal.ASK_ADMISSION,
            start_signal_args=[admit],
            **started,
        )
        admission = None
    else:
        handle = await client.start_workflow(
            CapacityLedger.run, LedgerInput(domain=domain), **started
        )
        admission = await _admit(handle, admit)
    event = None
    if reading.backend == "kubernetes" and not (admission and admission.granted):
        # Waiting here, as an event, instead of starting pods the quota would reject (the run
        # files it only if it is queued: an answer by signal is not known here yet).
        event = quota_event(reading, call.admit.footprint.resources)
    return AdmissionOutcome(admission=admission, reading=reading, domain_id=domain, event=event)


# Temporal takes at most 10 updates in flight per workflow, and aborts those in flight when the
# ledger hands over (continue-as-new). A burst of launches meets both: ask again within a
# second or so (jittered, so the burst spreads) rather than fail the attempt into the activity's
# backoff, which grows to tens of seconds while the queue waits. Past BUSY_FOR_S, the activity's
# own retry takes over.
BUSY = {RPCStatusCode.RESOURCE_EXHAUSTED, RPCStatusCode.UNAVAILABLE}
BUSY_FOR_S = 30.0  # well inside the activity's 60 s start-to-close


async def _admit(handle, admit):
    waited, pause = 0.0, 0.05
    while True:
        try:
            return await handle.execute_update(CapacityLedger.admit, admit)
        except RPCError as err:
            if err.status not in BUSY or waited >= BUSY_FOR_S:
                raise
        activity.heartbeat("the ledger is busy: asking again")
        delay = random.uniform(pause, 2 * pause)
        await asyncio.sleep(delay)
        waited, pause = waited + delay, min(pause * 2, 1.0)


@activity.defn(name=Activity.REAP_SANDBOXES)
def reap_sandboxes_activity(workspaces: list[str]) -> list[str]:
    """Remove sandbox containers a cancelled run's workers left behind (by their compose
    project's directory); an unreachable engine reaps nothing."""
    environ = workspace_environment(workspaces[0] if workspaces else "")
    return reap_sandboxes(workspaces, base_url=environ.get("DOCKER_HOST"))
