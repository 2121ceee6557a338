"""The Steward worker: runs EvalRun workflows (shared queue) and this host's activities.

`python -m steward.worker.temporal_worker --address HOST:PORT` (what `steward worker` runs).
"""

from __future__ import annotations

import argparse
import asyncio
import signal
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from pathlib import Path

import structlog
from temporalio.worker import Worker
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner, SandboxRestrictions

from steward.activities.capacity.capacity import (
    probe_capacity,
    reap_sandboxes_activity,
    request_admission,
)
from steward.activities.capacity.hosts import check_host_storage, list_hosts
from steward.activities.capacity.provider_budgets import exchange_provider_budgets
from steward.activities.definition.capture import capture_definition
from steward.activities.definition.credentials import check_credentials
from steward.activities.definition.smoke import smoke_tasks
from steward.activities.logs.log_curation import curate_logs, tidy_logs
from steward.activities.logs.log_store import fetch_from_store, move_logs
from steward.activities.logs.rulings import apply_actions
from steward.activities.processes import forkserver
from steward.activities.processes.observe import apply_setpoints, observe_run
from steward.activities.processes.processes import spawn_worker, stop_workers
from steward.activities.processes.provider_probe import probe_providers
from steward.activities.processes.watch import watch_worker
from steward.activities.scan.scan import scan_transcripts_activity
from steward.activities.workspace.notify import notify
from steward.activities.workspace.options import read_ramp_settings
from steward.activities.workspace.workspace_files import write_workspace
from steward.worker.connect import Target, connect, host_queue
from steward.worker.host_presence import keep_present
from steward.worker.log_setup import configure_worker_logging
from steward.worker.metrics import ENV, MetricsError, checked_port, endpoint, port_from_env
from steward.worker.payload_guard import PayloadGuard
from steward.workflows.contracts import WORKFLOW_TASK_QUEUE
from steward.workflows.ledgers.capacity_ledger import TASK_QUEUE as LEDGER_TASK_QUEUE
from steward.workflows.ledgers.capacity_ledger import CapacityLedger
from steward.workflows.ledgers.host_registry import HostRegistry
from steward.workflows.ledgers.provider_ledger import ProviderLedger
from steward.workflows.prelaunch.credentials import CredentialsCheck
from steward.workflows.prelaunch.preflight import Preflight
from steward.workflows.run.eval_run import EvalRun

ACTIVITIES = [
    apply_actions,
    apply_setpoints,
    capture_definition,
    check_credentials,
    check_host_storage,
    curate_logs,
    exchange_provider_budgets,
    fetch_from_store,
    list_hosts,
    move_logs,
    notify,
    observe_run,
    probe_capacity,
    probe_providers,
    read_ramp_settings,
    reap_sandboxes_activity,
    request_admission,
    scan_transcripts_activity,
    smoke_tasks,
    spawn_worker,
    stop_workers,
    tidy_logs,
    watch_worker,
    write_workspace,
]
WORKFLOWS = [EvalRun, CapacityLedger, CredentialsCheck, ProviderLedger, Preflight, HostRegistry]
log = structlog.get_logger("steward.worker")
READY_WAIT_S = 20.0  # for the fork server's warm-up before the worker says it is ready


def workflow_runner() -> SandboxedWorkflowRunner:
    """The sandbox, with our `workflows` package passed through whole: its pure modules hold
    no state, and one copy of them means one copy of each pydantic class (a sandbox-local copy
    of a model fails validation against the passed-through one)."""
    return SandboxedWorkflowRunner(
        # inspect_ai and rich too: a process that ran an eval has Inspect's rich logging handler,
        # and a workflow's log line (the SDK's own, when a workflow task fails) would otherwise
        # import them inside the sandbox, where rich half-imports and the failure's message
        # becomes "cannot import name 'AnsiDecoder'" instead of the workflow's own.
        restrictions=SandboxRestrictions.default.with_passthrough_modules(
            "steward.workflows", "inspect_ai", "rich"
        )
    )


def build_workers(client, executor: ThreadPoolExecutor) -> list[Worker]:
    return [
        Worker(
            client,
            task_queue=WORKFLOW_TASK_QUEUE,
            workflows=WORKFLOWS,
            workflow_runner=workflow_runner(),
        ),
        # The capacity ledgers' own queue: a pump is never queued behind the runs' tends.
        Worker(
            client,
            task_queue=LEDGER_TASK_QUEUE,
            workflows=[CapacityLedger],
            workflow_runner=workflow_runner(),
        ),
        Worker(
            client,
            task_queue=host_queue(),
            activities=ACTIVITIES,
            activity_executor=executor,
            # A result too large for Temporal fails in words rather than being retried forever.
            interceptors=[PayloadGuard(client.data_converter)],
            # The watches' heartbeats are what `steward status` shows: let them through every
            # couple of seconds (the default holds them back for up to 80% of the timeout).
            max_heartbeat_throttle_interval=timedelta(seconds=2),
        ),
    ]


async def serve(target: Target, ready_file: Path | None = None) -> None:
    client = await connect(target)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    # Async activities block in asyncio.to_thread (a watch's look, a scan waiting for its child):
    # the default pool (cores + 4 threads) would make a scan wait behind a fleet's watches.
    loop.set_default_executor(ThreadPoolExecutor(max_workers=64, thread_name_prefix="to-thread"))
    with ThreadPoolExecutor(max_workers=32) as executor:
        workers = build_workers(client, executor)
        runs = [asyncio.create_task(w.run()) for w in workers]
        log.info(
            "worker started",
            address=target.address,
            namespace=target.namespace,
            host_queue=host_queue(),
        )
        # The fork server imports Inspect (and scout) now, not in the first launch's capture.
        # Ready is said once it has (or after READY_WAIT_S): `steward worker start` then means
        # ready to work at speed; the worker already serves commands and timers meanwhile.
        warming = loop.run_in_executor(executor, forkserver.warm_up)
        await asyncio.wait([warming], timeout=READY_WAIT_S)
        if ready_file is not None:
            ready_file.write_text("ready\n")
        presence = asyncio.create_task(keep_present(client, stop))
        stopper = asyncio.create_task(stop.wait())
        await asyncio.wait([stopper, *runs], return_when=asyncio.FIRST_COMPLETED)
        log.info("worker stopping")
        stop.set()  # a worker that ended by itself says so too
        await asyncio.gather(
            *(w.shutdown() for w in workers), warming, presence, return_exceptions=True
        )
        for run in runs:
            if run.done() and run.exception():
                raise run.exception()  # type: ignore[misc]


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m steward.worker.temporal_worker")
    parser.add_argument("--address", required=True)
    parser.add_argument("--namespace", default="default")
    parser.add_argument("--ready-file", type=Path)
    parser.add_argument("--metrics-port", help=f"serve Prometheus metrics here (else ${ENV})")
    args = parser.parse_args()
    try:
        port = (
            port_from_env()
            if args.metrics_port is None
            else checked_port(args.metrics_port, "--metrics-port")
        )
        configure_worker_logging(metrics_port=port)
    except MetricsError as err:
        raise SystemExit(str(err)) from None
    if port is not None:
        log.info("metrics served", endpoint=endpoint(port))
    asyncio.run(
        serve(Target(args.address, args.namespace, embedded=True, ui_url=None), args.ready_file)
    )


if __name__ == "__main__":
    main()
