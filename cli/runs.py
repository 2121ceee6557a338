"""The CLI's conversation with Temporal about one workspace's run."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from worker import embedded
from worker.connect import ConnectError, Target, connect, host_queue, run_url, target_for
from worker.workspace import (
    OptionsError,
    WorkspaceError,
    find_workspace,
    load_options,
    workflow_id_for,
)
from workflows.capacity import LedgerView
from workflows.contracts import (
    SETTLED_PHASES,
    TERMINAL_PHASES,
    WORKFLOW_TASK_QUEUE,
    Capture,
    RunInput,
    RunSettings,
    RunState,
    RunStatus,
)
from workflows.names import SEARCH_ATTRIBUTES, SearchKey
from workflows.options import StewardOptions

from .output import CommandError, bad_input, console

CAPTURE_WAIT_S = 900.0


@dataclass
class Context:
    workspace: Path
    options: StewardOptions
    target: Target
    workflow_id: str


def load_context(workspace: Path | None) -> Context:
    try:
        root = find_workspace(workspace or Path.cwd())
        options = load_options(root)
    except (WorkspaceError, OptionsError) as err:
        raise bad_input(str(err)) from err
    return Context(root, options, target_for(options), workflow_id_for(root))


def machine_options(start: Path | None = None) -> StewardOptions:
    """Options outside any particular run: the workspace's if we are in one, else env/.env."""
    base = (start or Path.cwd()).resolve()
    try:
        base = find_workspace(base)
    except WorkspaceError:
        pass
    try:
        return load_options(base)
    except OptionsError as err:
        raise bad_input(str(err)) from err


def ensure_services(target: Target, options: StewardOptions, quiet: bool) -> None:
    """Start the embedded server and worker when they are needed and not running."""
    try:
        started = embedded.ensure_services(target, options.temporal_ui_port)
    except embedded.ServiceError as err:
        raise CommandError(str(err)) from err
    if started and not quiet:
        console.print(
            f"Started {' and '.join(started)}; Temporal web UI: {target.ui_url}", highlight=False
        )


async def client_for(target: Target):
    try:
        return await asyncio.wait_for(connect(target), 15)
    except ConnectError as err:
        raise bad_input(str(err)) from err
    except Exception as err:  # the SDK raises RuntimeError for unreachable servers
        raise CommandError(
            f"Cannot reach Temporal at {target.address} ({err}); "
            + (
                "start it with `steward server start`."
                if target.embedded
                else "check STEWARD_TEMPORAL_ADDRESS."
            )
        ) from err


def _typed_search_attributes(workspace: Path):
    from temporalio.common import SearchAttributePair, TypedSearchAttributes

    return TypedSearchAttributes(
        [
            SearchAttributePair(SearchKey.WORKSPACE, str(workspace)),
            SearchAttributePair(SearchKey.STATE, "capturing"),
            SearchAttributePair(SearchKey.SAMPLES_DONE, 0),
            SearchAttributePair(SearchKey.SAMPLES_TOTAL, 0),
        ]
    )


async def register_search_attributes(client) -> None:
    """Make sure a cluster knows Steward's search attributes (the dev server gets them at start)."""
    from temporalio.api.enums.v1 import IndexedValueType
    from temporalio.api.operatorservice.v1 import (
        AddSearchAttributesRequest,
        ListSearchAttributesRequest,
    )

    known = await client.operator_service.list_search_attributes(
        ListSearchAttributesRequest(namespace=client.namespace)
    )
    missing = {
        name: getattr(IndexedValueType, f"INDEXED_VALUE_TYPE_{kind.upper()}")
        for name, kind in SEARCH_ATTRIBUTES.items()
        if name not in known.custom_attributes
    }
    if missing:
        await client.operator_service.add_search_attributes(
            AddSearchAttributesRequest(namespace=client.namespace, search_attributes=missing)
        )


async def start_run(
    ctx: Context,
    definition: str,
    settings: RunSettings,
    launched_by: str,
    *,
    log_dir: str | None = None,
    capture: Capture | None = None,
    definition_hash: str | None = None,
    store_hits: dict[str, str] | None = None,
    timer: bool = True,
) -> Any:
    from temporalio.common import WorkflowIDConflictPolicy, WorkflowIDReusePolicy
    from temporalio.exceptions import WorkflowAlreadyStartedError

    client = await client_for(ctx.target)
    if not ctx.target.embedded:
        try:
            await register_search_attributes(client)
        except Exception as err:
            raise CommandError(
                f"Steward's search attributes ({', '.join(SEARCH_ATTRIBUTES)}) are not registered on "
                f"{ctx.target.address} and could not be added ({err}); ask the cluster's operator to add them."
            ) from err
    run_input = RunInput(
        workspace=str(ctx.workspace),
        definition=definition,
        host_queue=host_queue(),
        log_dir=log_dir or str(ctx.workspace / "logs"),
        settings=settings,
        launched_by=launched_by,
        web_ui=run_url(ctx.target, ctx.workflow_id),
        capture=capture,
        definition_hash=definition_hash,
        store_hits=store_hits or {},
        timer=timer,
    )
    try:
        handle = await client.start_workflow(
            "EvalRun",
            run_input,
            id=ctx.workflow_id,
            task_queue=WORKFLOW_TASK_QUEUE,
            id_conflict_policy=WorkflowIDConflictPolicy.FAIL,
            id_reuse_policy=WorkflowIDReusePolicy.ALLOW_DUPLICATE,
            search_attributes=_typed_search_attributes(ctx.workspace),
            memo={"workspace": str(ctx.workspace), "definition": definition},
            result_type=RunState,
        )
    except WorkflowAlreadyStartedError as err:
        handle = client.get_workflow_handle(ctx.workflow_id, result_type=RunState)
        status = await query_status(handle, ctx)
        if status.state.phase == "queued":
            return status  # one entry per run: launching it again adds nothing
        raise bad_input(
            f"A run is already live for {ctx.workspace} (workflow {ctx.workflow_id}); "
            "see `steward status`, and sign it off (`steward signoff --by NAME`) or "
            "`steward cancel` it before launching again."
        ) from err
    loop = asyncio.get_running_loop()
    deadline = loop.time() + CAPTURE_WAIT_S
    while True:
        status = await query_status(handle, ctx)
        # Back to the user once the tasks are known and the first tend has spawned them.
        started = status.state.phase != "capturing" and status.state.tend_count > 0
        waiting = status.state.phase == "queued"
        if started or waiting or status.state.phase in TERMINAL_PHASES or loop.time() > deadline:
            return status
        await asyncio.sleep(0.3)


async def query_status(handle, ctx: Context) -> RunStatus:
    from temporalio.client import WorkflowExecutionStatus

    description = await handle.describe()
    if description.status == WorkflowExecutionStatus.RUNNING:
        status = await handle.query("status", result_type=RunStatus)
        cap = status.state.capacity
        if status.state.phase == "queued" and cap.domain_id:
            # The place in line moves as runs ahead start: ask the ledger, not the run.
            view = await ledger_view(await client_for(ctx.target), cap.domain_id)
            if view is not None and ctx.workflow_id in view.positions:
                cap.position = view.positions[ctx.workflow_id]
                cap.reason = view.reasons.get(ctx.workflow_id, cap.reason)
        return status
    if description.status == WorkflowExecutionStatus.COMPLETED:
        state = await handle.result()
    else:  # terminated, timed out or failed outside Steward's own handling
        state = RunState(
            phase="failed", error=f"the workflow ended {description.status.name.lower()}"
        )
    return RunStatus(
        workflow_id=ctx.workflow_id,
        run_id=description.run_id,
        workspace=str(ctx.workspace),
        state=state,
        tend_interval=ctx.options.tend_interval,
        web_ui=run_url(ctx.target, ctx.workflow_id),
    )


async def run_handle(ctx: Context):
    """The workspace's latest run, or a clear error when it never launched."""
    from temporalio.service import RPCError, RPCStatusCode

    client = await client_for(ctx.target)
    handle = client.get_workflow_handle(ctx.workflow_id, result_type=RunState)
    try:
        await handle.describe()
    except RPCError as err:
        if err.status == RPCStatusCode.NOT_FOUND:
            raise bad_input(
                f"No run has been launched from {ctx.workspace}; start one with `steward launch`."
            ) from err
        raise
    return handle


async def require_live(handle, ctx: Context) -> None:
    status = await query_status(handle, ctx)
    if status.state.phase in TERMINAL_PHASES:
        raise CommandError(
            f"The run of {ctx.workspace} is already {status.state.phase}; launch a new one with `steward launch`."
        )


async def ledger_view(client, domain_id: str) -> LedgerView | None:
    try:
        return await client.get_workflow_handle(domain_id).query("view", result_type=LedgerView)
    except Exception:  # noqa: BLE001 - no ledger (yet): nobody queued there
        return None


async def ledger_views(client) -> list[LedgerView]:
    views = []
    query = "WorkflowType = 'CapacityLedger' AND ExecutionStatus = 'Running'"
    async for execution in client.list_workflows(query):
        view = await ledger_view(client, execution.id)
        if view is not None:
            views.append(view)
    return views


async def list_runs(target: Target) -> list[dict]:
    client = await client_for(target)
    queue: dict[str, tuple[int, str]] = {}
    for view in await ledger_views(client):
        for run_id, place in view.positions.items():
            queue[run_id] = (place, view.reasons.get(run_id, ""))
    rows = []
    # A run that continued as new is one run: list only the execution that carries it on.
    query = "WorkflowType = 'EvalRun' AND ExecutionStatus != 'ContinuedAsNew'"
    async for execution in client.list_workflows(query):
        attributes = {
            key.name: value for key, value in _typed_items(execution.typed_search_attributes)
        }
        memo = await execution.memo()
        done, total = (
            attributes.get(SearchKey.SAMPLES_DONE.name, 0),
            attributes.get(SearchKey.SAMPLES_TOTAL.name, 0),
        )
        rows.append(
            {
                "workflow_id": execution.id,
                "run_id": execution.run_id,
                "workspace": attributes.get(SearchKey.WORKSPACE.name) or memo.get("workspace"),
                "state": attributes.get(SearchKey.STATE.name, "unknown"),
                "temporal_status": execution.status.name.lower() if execution.status else "unknown",
                "samples_done": done,
                "samples_total": total,
                "started": execution.start_time.isoformat() if execution.start_time else None,
                "position": queue.get(execution.id, (None, ""))[0],
                "queue_reason": queue.get(execution.id, (None, ""))[1],
            }
        )
    return rows


def _typed_items(attributes) -> list[tuple[Any, Any]]:
    return [(pair.key, pair.value) for pair in attributes.search_attributes]


async def wait_settled(handle, ctx: Context, quiet: bool = False) -> RunStatus:
    """Poll until the run needs nobody's patience any more (finished, stalled or ended)."""
    last = None
    while True:
        status = await query_status(handle, ctx)
        state = status.state
        line = f"{state.phase}: {state.samples_done}/{state.samples_total} samples (tend #{state.tend_count})"
        if not quiet and line != last:
            console.print(line, highlight=False)
            last = line
        if state.phase in SETTLED_PHASES:
            return status
        await asyncio.sleep(1.0)


async def delete_run(target: Target, run: str | None, by: str) -> str:
    """Delete a queued or ended run's executions (a queued one is cancelled out of the queue
    first); a live run is refused."""
    from temporalio.api.common.v1 import WorkflowExecution
    from temporalio.api.workflowservice.v1 import DeleteWorkflowExecutionRequest
    from temporalio.client import WorkflowExecutionStatus

    from workflows.contracts import CancelRequest

    client = await client_for(target)
    workflow_id = run or ""
    if not run or Path(run).is_dir():
        ctx = load_context(Path(run) if run else None)
        workflow_id = ctx.workflow_id
    handle = client.get_workflow_handle(workflow_id, result_type=RunState)
    try:
        description = await handle.describe()
    except Exception as err:  # noqa: BLE001 - NOT_FOUND and friends
        raise bad_input(
            f"No run {workflow_id} is known; see `steward runs` for the runs there are."
        ) from err
    if description.status == WorkflowExecutionStatus.RUNNING:
        status = await handle.query("status", result_type=RunStatus)
        if status.state.phase != "queued":
            raise bad_input(
                f"The run {workflow_id} is {status.state.phase}; cancel it (`steward cancel`) "
                "or sign it off before deleting it from the list."
            )
        await handle.signal("cancel", CancelRequest(reason="deleted from the list", by=by))
        await handle.result()
    async for execution in client.list_workflows(f"WorkflowId = '{workflow_id}'"):
        await client.workflow_service.delete_workflow_execution(
            DeleteWorkflowExecutionRequest(
                namespace=client.namespace,
                workflow_execution=WorkflowExecution(
                    workflow_id=execution.id, run_id=execution.run_id
                ),
            )
        )
    return workflow_id


async def live_status(ctx: Context) -> RunStatus | None:
    """The workspace's run while its workflow is open (queued, running, finished awaiting
    signoff), else None: a launch then starts a new run."""
    from temporalio.client import WorkflowExecutionStatus
    from temporalio.service import RPCError, RPCStatusCode

    client = await client_for(ctx.target)
    handle = client.get_workflow_handle(ctx.workflow_id, result_type=RunState)
    try:
        description = await handle.describe()
    except RPCError as err:
        if err.status == RPCStatusCode.NOT_FOUND:
            return None
        raise
    if description.status != WorkflowExecutionStatus.RUNNING:
        return None
    return await query_status(handle, ctx)


async def current_status(ctx: Context) -> RunStatus:
    return await query_status(await run_handle(ctx), ctx)
