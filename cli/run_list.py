"""Every run the Temporal server knows, machine-wide: listed from the search attributes the runs
keep current (queued ones with their place from the capacity ledgers), and deleted from the
list when queued or ended."""

from __future__ import annotations

from pathlib import Path

from steward.cli.context import load_context
from steward.cli.output import bad_input
from steward.cli.run_calls import client_for, eval_run_handle, ledger_view
from steward.worker import deleted_runs
from steward.worker.connect import Target
from steward.workflows.contracts import CancelRequest
from steward.workflows.names import SearchKey, WorkflowType
from steward.workflows.policy.capacity_contracts import LedgerView
from steward.workflows.run.eval_run import EvalRun


async def ledger_views(client) -> list[LedgerView]:
    views = []
    query = f"WorkflowType = '{WorkflowType.CAPACITY_LEDGER}' AND ExecutionStatus = 'Running'"
    async for execution in client.list_workflows(query):
        view = await ledger_view(client, execution.id)
        if view is not None:
            views.append(view)
    return views


async def list_hosts(target: Target) -> list[dict]:
    """The hosts the registry knows, each with how long it has been silent and how many task
    workers of running runs it holds now."""
    from datetime import UTC, datetime

    from temporalio.service import RPCError

    from steward.workflows.ledgers.host_registry import HOST_REGISTRY_ID, HostRegistry
    from steward.workflows.policy.hosts import SILENT_AFTER_S, silent_for

    client = await client_for(target)
    try:
        hosts = await client.get_workflow_handle_for(HostRegistry.run, HOST_REGISTRY_ID).query(
            HostRegistry.hosts
        )
    except RPCError:
        hosts = []
    placed: dict[str, int] = {}
    query = f"WorkflowType = '{WorkflowType.EVAL_RUN}' AND ExecutionStatus = 'Running'"
    async for execution in client.list_workflows(query):
        try:
            status = await client.get_workflow_handle(execution.id).query(EvalRun.status)
        except RPCError:
            continue
        for worker in status.state.workers.values():
            key = worker.queue or status.host_queue
            placed[key] = placed.get(key, 0) + 1
    now = datetime.now(UTC)
    rows = []
    for host in hosts:
        silent = silent_for(host, now)
        rows.append(
            {
                **host.model_dump(mode="json"),
                "state": "stopping"
                if host.stopping
                else "live"
                if silent < SILENT_AFTER_S
                else "silent",
                "silent_s": round(silent, 1),
                "task_workers": placed.get(host.queue, 0),
            }
        )
    return rows


async def list_runs(target: Target) -> list[dict]:
    client = await client_for(target)
    queue: dict[str, tuple[int, str]] = {}
    for view in await ledger_views(client):
        for run_id, place in view.positions.items():
            queue[run_id] = (place, view.reasons.get(run_id, ""))
    rows = []
    # A run that continued as new is one run: list only the execution that carries it on.
    query = f"WorkflowType = '{WorkflowType.EVAL_RUN}' AND ExecutionStatus != 'ContinuedAsNew'"
    deleted = deleted_runs.read()  # Temporal still lists them for ~30 s after a delete
    async for execution in client.list_workflows(query):
        if execution.run_id in deleted:
            continue
        attributes = {pair.key.name: pair.value for pair in execution.typed_search_attributes}
        memo = await execution.memo()
        place, reason = queue.get(execution.id, (None, ""))
        rows.append(
            {
                "workflow_id": execution.id,
                "run_id": execution.run_id,
                "workspace": attributes.get(SearchKey.WORKSPACE.name) or memo.get("workspace"),
                "state": attributes.get(SearchKey.STATE.name, "unknown"),
                "temporal_status": execution.status.name.lower() if execution.status else "unknown",
                "samples_done": attributes.get(SearchKey.SAMPLES_DONE.name, 0),
                "samples_total": attributes.get(SearchKey.SAMPLES_TOTAL.name, 0),
                "started": execution.start_time.isoformat() if execution.start_time else None,
                "position": place,
                "queue_reason": reason,
            }
        )
    return rows


async def delete_run(target: Target, run: str | None, by: str) -> str:
    """Delete a queued or ended run's executions (a queued one is cancelled out of the queue
    first); a live run is refused."""
    from temporalio.api.common.v1 import WorkflowExecution
    from temporalio.api.workflowservice.v1 import DeleteWorkflowExecutionRequest
    from temporalio.client import WorkflowExecutionStatus

    client = await client_for(target)
    workflow_id = run or ""
    if not run or Path(run).is_dir():
        workflow_id = load_context(Path(run) if run else None).workflow_id
    handle = eval_run_handle(client, workflow_id)
    unknown = f"No run {workflow_id} is known; see `steward runs` for the runs there are."
    try:
        description = await handle.describe()
    except Exception as err:  # noqa: BLE001 - NOT_FOUND and friends
        raise bad_input(unknown) from err
    if deleted_runs.is_deleted(description.run_id):
        raise bad_input(unknown)
    if description.status == WorkflowExecutionStatus.RUNNING:
        status = await handle.query(EvalRun.status)
        if status.state.phase != "queued":
            raise bad_input(
                f"The run {workflow_id} is {status.state.phase}; cancel it (`steward cancel`) "
                "or sign it off before deleting it from the list."
            )
        # Not `signal_run`: this run is named by its id (maybe another workspace's) and is
        # queued, which that helper's liveness check is not about.
        await handle.signal(EvalRun.cancel, CancelRequest(reason="deleted from the list", by=by))
        await handle.result()
    deleted = [description.run_id] if description.run_id else []
    async for execution in client.list_workflows(f"WorkflowId = '{workflow_id}'"):
        await client.workflow_service.delete_workflow_execution(
            DeleteWorkflowExecutionRequest(
                namespace=client.namespace,
                workflow_execution=WorkflowExecution(
                    workflow_id=execution.id, run_id=execution.run_id
                ),
            )
        )
        deleted.append(execution.run_id)
    # Temporal deletes asynchronously (~30 s): the CLI reads past these from now on.
    deleted_runs.remember(workflow_id, sorted(set(deleted)))
    return workflow_id
