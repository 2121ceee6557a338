"""The capacity ledger's history stays short (ledger-handover-v1): it continues as new every
HANDOVER_EVENTS events, moves to its own task queue, and a handover keeps the queue's order, its
reservations and any admitted run it had still to signal. A burst of asks by signal
(ask-by-signal-v1), far more than the 10 updates Temporal takes in flight, is answered whole
across handovers, each run hearing its answer before its admission. On a private Temporal
server with this process's workers (the threshold lowered so a dozen runs cross several
handovers); the runs are stand-in workflows that wait for the ledger's signals."""

from __future__ import annotations

import asyncio

from temporalio import workflow
from temporalio.client import Client, WorkflowExecutionStatus
from temporalio.common import WorkflowIDConflictPolicy
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.worker import UnsandboxedWorkflowRunner, Worker

from harness.helpers import private_steward
from steward.worker.temporal_worker import workflow_runner
from steward.workflows.contracts import WORKFLOW_TASK_QUEUE
from steward.workflows.ledgers import capacity_ledger
from steward.workflows.ledgers.capacity_ledger import CapacityLedger
from steward.workflows.names import Signal
from steward.workflows.policy.capacity import (
    Admission,
    AdmitRequest,
    Footprint,
    ProbeReading,
    Release,
)
from steward.workflows.policy.capacity_contracts import (
    AdmissionAnswer,
    LedgerInput,
    PendingAdmission,
)

WAITERS = "handover-test-runs"


@workflow.defn(name="AdmissionWaiter")
class Waiter:
    """A run as the ledger sees it: queued until the `admitted` signal comes."""

    def __init__(self) -> None:
        self.reason: str | None = None
        self.answers: list[Admission] = []  # the ledger's answers to asks, in arrival order
        self.answered_before_admitted = True

    @workflow.run
    async def run(self) -> str:
        await workflow.wait_condition(lambda: self.reason is not None)
        return self.reason or ""

    @workflow.signal(name=Signal.ADMITTED)
    def admitted(self, admission: Admission) -> None:
        self.reason = admission.reason
        self.answered_before_admitted = bool(self.answers)

    @workflow.signal(name=Signal.ADMISSION_ANSWER)
    def admission_answer(self, answer: AdmissionAnswer) -> None:
        self.answers.append(answer.admission)
        if answer.admission.granted:
            self.reason = answer.admission.reason

    @workflow.query
    def heard(self) -> tuple[list[Admission], bool]:
        return self.answers, self.answered_before_admitted


def test_handovers_keep_the_queue_in_order(steward, tmp_path, monkeypatch):
    monkeypatch.setattr(capacity_ledger, "HANDOVER_EVENTS", 40)
    private = private_steward(steward, tmp_path)
    private.ok("server", "start")
    try:
        asyncio.run(_queue_through_handovers(f"127.0.0.1:{private.env['STEWARD_TEMPORAL_PORT']}"))
    finally:
        private("server", "stop")


async def _queue_through_handovers(address: str) -> None:
    client = await Client.connect(address, data_converter=pydantic_data_converter)
    workers = [
        # A ledger started before this change runs on the shared queue; its handover moves it.
        Worker(
            client,
            task_queue=WORKFLOW_TASK_QUEUE,
            workflows=[CapacityLedger],
            workflow_runner=workflow_runner(),
        ),
        Worker(
            client,
            task_queue=capacity_ledger.TASK_QUEUE,
            workflows=[CapacityLedger],
            workflow_runner=workflow_runner(),
        ),
        Worker(
            client,
            task_queue=WAITERS,
            workflows=[Waiter],
            workflow_runner=UnsandboxedWorkflowRunner(),
        ),
    ]
    async with workers[0], workers[1], workers[2]:
        await _pump_in_order(client)
        await _pending_admission_is_signalled(client)
        await _a_burst_of_asks_by_signal(client)


async def _pump_in_order(client: Client) -> None:
    await client.start_workflow(
        CapacityLedger.run,
        LedgerInput(domain="handover"),
        id="ledger-handover",
        task_queue=WORKFLOW_TASK_QUEUE,
    )
    ledger = client.get_workflow_handle("ledger-handover")  # the current execution, whichever
    runs = [f"handover-run-{i:02d}" for i in range(12)]
    for run_id in runs:
        await client.start_workflow(Waiter.run, id=run_id, task_queue=WAITERS)
    one = Footprint(resources={"sandboxes": 1})
    reading = ProbeReading(backend="docker", limits={"sandboxes": 1}, source="test")
    answers = [
        await ledger.execute_update(
            CapacityLedger.admit,
            AdmitRequest(run_id=run_id, workspace=f"/w/{run_id}", footprint=one, reading=reading),
        )
        for run_id in runs
    ]
    assert answers[0].granted
    assert [a.position for a in answers[1:]] == list(range(1, len(runs)))

    for index, run_id in enumerate(runs[:-1]):
        await ledger.signal(CapacityLedger.release, Release(run_id=run_id))
        following = client.get_workflow_handle(runs[index + 1])
        assert await asyncio.wait_for(following.result(), timeout=60) == "pumped"
        if index + 2 < len(runs):  # nobody behind it overtook it
            behind = await client.get_workflow_handle(runs[index + 2]).describe()
            assert behind.status == WorkflowExecutionStatus.RUNNING

    view = await ledger.query(CapacityLedger.view)
    assert view.ledger.queue == []
    assert list(view.ledger.reservations) == [runs[-1]]
    assert view.ledger.pumped == len(runs) - 1
    assert len(view.log) <= capacity_ledger.LOG_KEPT

    executions = [e async for e in client.list_workflows("WorkflowId = 'ledger-handover'")]
    assert len(executions) >= 3, "the ledger should have handed over at least twice"
    for execution in executions:
        described = await client.get_workflow_handle(
            execution.id, run_id=execution.run_id
        ).describe()
        history = described.raw_description.workflow_execution_info.history_length
        # The threshold, plus what one workflow task may add before the handover.
        assert history <= capacity_ledger.HANDOVER_EVENTS + 30, history
    current = await ledger.describe()
    assert current.task_queue == capacity_ledger.TASK_QUEUE


async def _pending_admission_is_signalled(client: Client) -> None:
    """A run the pump admitted but the ledger had yet to signal when it handed over."""
    await client.start_workflow(Waiter.run, id="handover-run-pending", task_queue=WAITERS)
    await client.start_workflow(
        CapacityLedger.run,
        LedgerInput(
            domain="pending",
            pending=[
                PendingAdmission(
                    run_id="handover-run-pending",
                    admission=Admission(granted=True, reason="pumped", resources={"sandboxes": 1}),
                )
            ],
        ),
        id="ledger-pending",
        task_queue=capacity_ledger.TASK_QUEUE,
    )
    waiter = client.get_workflow_handle("handover-run-pending")
    assert await asyncio.wait_for(waiter.result(), timeout=60) == "pumped"


async def _a_burst_of_asks_by_signal(client: Client) -> None:
    """60 runs ask at once by signal-with-start, as their admission activities do: every run
    hears one answer, one is granted and the rest hold places 1..59 in the ledger's order; then
    each release admits the next in that order, after its answer."""
    runs = [f"burst-run-{i:02d}" for i in range(60)]
    for run_id in runs:
        await client.start_workflow(Waiter.run, id=run_id, task_queue=WAITERS)
    one = Footprint(resources={"sandboxes": 1})
    reading = ProbeReading(backend="docker", limits={"sandboxes": 1}, source="test")

    async def ask(run_id: str) -> None:
        await client.start_workflow(
            CapacityLedger.run,
            LedgerInput(domain="burst"),
            id="ledger-burst",
            task_queue=capacity_ledger.TASK_QUEUE,
            id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
            start_signal=Signal.ASK_ADMISSION,
            start_signal_args=[
                AdmitRequest(
                    run_id=run_id,
                    workspace=f"/w/{run_id}",
                    footprint=one,
                    reading=reading,
                    request_id=f"ask-{run_id}",
                )
            ],
        )

    await asyncio.gather(*(ask(run_id) for run_id in runs))
    answers = {run_id: await _answers(client, run_id) for run_id in runs}
    assert all(len(heard) == 1 for heard in answers.values()), answers
    granted = [r for r, heard in answers.items() if heard[0].granted]
    assert len(granted) == 1
    ledger = client.get_workflow_handle("ledger-burst")
    view = await ledger.query(CapacityLedger.view)
    order = [entry.run_id for entry in view.ledger.queue]
    assert [answers[r][0].position for r in order] == list(range(1, len(runs)))

    for holder, following in zip([*granted, *order], order, strict=False):
        await ledger.signal(CapacityLedger.release, Release(run_id=holder))
        waiter = client.get_workflow_handle(following)
        assert await asyncio.wait_for(waiter.result(), timeout=60) == "pumped"
        heard, in_order = await waiter.query("heard", result_type=tuple[list[Admission], bool])
        assert in_order and len(heard) == 1
    executions = [e async for e in client.list_workflows("WorkflowId = 'ledger-burst'")]
    assert len(executions) >= 3, "the burst should have crossed handovers"


async def _answers(client: Client, run_id: str) -> list[Admission]:
    handle = client.get_workflow_handle(run_id)
    for _ in range(600):
        heard, _ = await handle.query("heard", result_type=tuple[list[Admission], bool])
        if heard:
            return heard
        await asyncio.sleep(0.1)
    raise AssertionError(f"{run_id} heard no answer in 60 s")
