"""Starting a workspace's run: one `EvalRun` workflow per workspace, its search attributes
registered on a cluster that lacks them, and the wait until its first tend has spawned work
(or it queued, or it ended)."""

from __future__ import annotations

import asyncio

from steward.cli.context import Context
from steward.cli.output import CommandError, bad_input
from steward.cli.run_calls import client_for, eval_run_handle, query_status, refuse_oversize
from steward.worker.connect import host_queue, run_url
from steward.workflows.contracts import (
    TERMINAL_PHASES,
    WORKFLOW_TASK_QUEUE,
    Capture,
    RunInput,
    RunSettings,
    RunStatus,
)
from steward.workflows.names import SEARCH_ATTRIBUTES, SearchKey
from steward.workflows.run.eval_run import EvalRun
from steward.workflows.views import web_ui

CAPTURE_WAIT_S = 900.0


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
) -> RunStatus:
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
    tasks = capture.tasks if capture is not None else None
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
    refuse_oversize("The run's input", run_input)  # Temporal would refuse it in gRPC's words
    try:
        handle = await client.start_workflow(
            EvalRun.run,
            run_input,
            id=ctx.workflow_id,
            task_queue=WORKFLOW_TASK_QUEUE,
            id_conflict_policy=WorkflowIDConflictPolicy.FAIL,
            id_reuse_policy=WorkflowIDReusePolicy.ALLOW_DUPLICATE,
            search_attributes=_initial_search_attributes(ctx),
            memo={"workspace": str(ctx.workspace), "definition": definition},
            static_summary=web_ui.static_summary(str(ctx.workspace), tasks),
            static_details=web_ui.static_details(str(ctx.workspace), definition, tasks),
        )
    except WorkflowAlreadyStartedError as err:
        status = await query_status(eval_run_handle(client, ctx.workflow_id), ctx)
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


def _initial_search_attributes(ctx: Context):
    from temporalio.common import SearchAttributePair, TypedSearchAttributes

    return TypedSearchAttributes(
        [
            SearchAttributePair(SearchKey.WORKSPACE, str(ctx.workspace)),
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
