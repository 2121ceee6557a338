"""CapacityLedger: one long-lived workflow per capacity domain (a Docker host, a namespace).

It holds the strict-FIFO queue of waiting runs and the reservations of running ones. Runs ask
it through the `ask_admission` signal (their admission activity probes first, brings the
reading and starts the ledger with the signal if it is not running) and the ledger answers each
ask with an `admission_answer` signal to the run (ask-by-signal-v1); they give capacity back
with the `release` signal, which pumps the head of the queue at once: the ledger signals the
admitted run, which spawns on that signal. A slow periodic re-probe covers capacity freed
outside Steward.

Why signals and not an update: Temporal takes at most 10 updates in flight per workflow and
aborts those in flight at a continue-as-new, so 1,000 runs launched at once spent minutes
refused and retried (bench.queue --runs 1000 never got them queued). Signals have no such limit
and a burst of them is taken in a few workflow tasks. The answers go out at once, a batch at a
time, never two to one run in a batch, so each run hears its signals in the order the ledger
decided them (its answer before the pump's `admitted`). The `admit` update stays for runs
started before the flag.

Its history stays short (ledger-handover-v1): it continues as new every HANDOVER_EVENTS events
(or sooner when Temporal suggests it), carrying the ledger, the last log lines and any admitted
run not yet signalled. A short history is what keeps the pump fast with a long queue: a ledger
whose workflow task is retried or evicted replays its whole history before it can answer, and
with 1,000 runs launched at once a replay of thousands of events outlasted the workflow task's
10 s timeout, again and again (bench.queue --runs 1000 never finished).
"""

from __future__ import annotations

import asyncio
from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError

with workflow.unsafe.imports_passed_through():
    from steward.workflows import metrics
    from steward.workflows.names import Activity, Signal, WorkflowType
    from steward.workflows.policy import capacity, capacity_contracts
    from steward.workflows.policy.capacity import (
        Admission,
        AdmitRequest,
        Ledger,
        ProbeReading,
        Release,
    )
    from steward.workflows.policy.capacity_contracts import (
        AdmissionAnswer,
        LedgerInput,
        LedgerView,
        PendingAdmission,
        ProbeRequest,
    )
    from steward.workflows.run import eval_run_versions as versions

# Ledgers run on a task queue of their own (a worker of their own in the Steward worker): a
# pump's workflow task never waits behind a fleet's tends, nor times out there (ledger-handover-v1
# moves a ledger started on the shared queue at its next handover).
TASK_QUEUE = "steward-capacity"
REPROBE_INTERVAL = timedelta(minutes=5)
HANDOVER_EVENTS = 1_000  # ledger-handover-v1: continue as new past this many history events
LOG_KEPT = 20  # log lines the view shows and a handover carries
# Signals sent in one workflow task (ledger-answers-v1). The server delivers ~50 a second here,
# so a batch takes about a second, the longest a pumped admission waits behind answers.
SIGNAL_BATCH = 50


@workflow.defn(name=WorkflowType.CAPACITY_LEDGER)
class CapacityLedger:
    @workflow.init
    def __init__(self, start: LedgerInput) -> None:
        self._ledger = start.ledger or Ledger(domain=start.domain)
        self._to_signal: list[PendingAdmission] = list(start.pending)
        self._wake = False
        self._log: list[str] = list(start.log)
        self._short_history = False  # ledger-handover-v1 (read at the run's start)
        self._at_once = False  # ledger-answers-v1 (read at the run's start)
        self._pumped_at = workflow.now()  # when the last pump ran (for its latency metric)

    @workflow.run
    async def run(self, start: LedgerInput) -> None:
        self._short_history = versions.ledger_hands_over_early()
        self._at_once = versions.ledger_signals_at_once()
        while True:
            await self._signal_admitted()
            self._show()
            self._wake = False
            try:
                await workflow.wait_condition(
                    lambda: self._wake or bool(self._to_signal) or self._history_full(),
                    timeout=REPROBE_INTERVAL if self._ledger.queue else None,
                )
            except TimeoutError:
                await self._reprobe()
            # What is still owed rides along (ledger-answers-v1: a burst of asks never ends
            # between two batches, and would grow one history without bound).
            if self._history_full() and (self._at_once or not self._to_signal):
                await workflow.wait_condition(workflow.all_handlers_finished)
                workflow.continue_as_new(
                    self._handover(), task_queue=TASK_QUEUE if self._short_history else None
                )

    def _handover(self) -> LedgerInput:
        """What the next execution starts from: the ledger, its log, runs still to signal."""
        return LedgerInput(
            domain=self._ledger.domain,
            ledger=self._ledger,
            log=self._log[-LOG_KEPT:],
            pending=list(self._to_signal),
        )

    def _history_full(self) -> bool:
        info = workflow.info()
        if info.is_continue_as_new_suggested():
            return True
        return self._short_history and info.get_current_history_length() >= HANDOVER_EVENTS

    # ---------------------------------------------------------------- commands
    @workflow.signal(name=Signal.ASK_ADMISSION)
    def ask_admission(self, request: AdmitRequest) -> None:
        """A run's ask (ask-by-signal-v1): decided at once, answered by signal."""
        answer = self._decide(request)
        self._to_signal.append(
            PendingAdmission(run_id=request.run_id, admission=answer, request_id=request.request_id)
        )
        self._wake = True

    @workflow.update
    def admit(self, request: AdmitRequest) -> Admission:
        """The ask of a run started before ask-by-signal-v1."""
        return self._decide(request)

    def _decide(self, request: AdmitRequest) -> Admission:
        reading = request.reading
        if capacity.note_reading(self._ledger, reading) and reading is not None:
            self._note(f"bound {reading.limits} from {reading.source}")
        self._pump()  # a changed bound may let those ahead in first
        return capacity.admit(
            self._ledger, request.model_copy(update={"reading": None}), workflow.now()
        )

    @admit.validator
    def _validate_admit(self, request: AdmitRequest) -> None:
        if not request.run_id:
            raise ApplicationError("An admission needs the run's id.")

    @workflow.signal(name=Signal.RELEASE)
    def release(self, request: Release) -> None:
        if capacity.release(self._ledger, request):
            capacity.forget_observed(self._ledger)
        self._pump()

    @workflow.signal(name=Signal.WITHDRAW)
    def withdraw(self, request: Release) -> None:
        """A run cancelled or deleted while queued leaves the queue (and anything it held)."""
        capacity.withdraw(self._ledger, request.run_id)
        if capacity.release(self._ledger, Release(run_id=request.run_id)):
            capacity.forget_observed(self._ledger)
        self._pump()

    @workflow.query
    def view(self) -> LedgerView:
        ledger = self._ledger
        return LedgerView(
            ledger=ledger,
            positions={e.run_id: i + 1 for i, e in enumerate(ledger.queue)},
            reasons={
                e.run_id: capacity.reason_at(ledger, i + 1) for i, e in enumerate(ledger.queue)
            },
            reserved=capacity.reserved(ledger),
            log=self._log[-LOG_KEPT:],
        )

    # ---------------------------------------------------------------- steps
    def _pump(self) -> None:
        self._pumped_at = now = workflow.now()
        for entry in capacity.pump(self._ledger, now):
            waited = (now - entry.arrived_at).total_seconds()
            metrics.record(metrics.QUEUE_WAIT, max(0.0, waited), domain=self._ledger.domain)
            held = self._ledger.reservations[entry.run_id].footprint.resources
            self._owe(
                PendingAdmission(
                    run_id=entry.run_id,
                    admission=Admission(granted=True, reason="pumped", resources=held),
                )
            )
        self._wake = True

    def _owe(self, admitted: PendingAdmission) -> None:
        if self._at_once:
            capacity_contracts.owe_admission(self._to_signal, admitted)
        else:
            self._to_signal.append(admitted)

    async def _signal_admitted(self) -> None:
        """Send what the ledger owes: at once, a batch at a time with one signal per run in a
        batch (ledger-answers-v1), or one after the other (a ledger execution started before)."""
        while self._to_signal:
            if not self._at_once:
                await self._send(self._to_signal.pop(0))
                continue
            batch, later, runs = [], [], set()
            for owed in self._to_signal:
                fits = owed.run_id not in runs and len(batch) < SIGNAL_BATCH
                (batch if fits else later).append(owed)
                runs.add(owed.run_id)
            self._to_signal = later
            await asyncio.gather(*(self._send(owed) for owed in batch))
            if self._history_full():
                return  # hand over; the next execution sends the rest first

    async def _send(self, owed: PendingAdmission) -> None:
        handle = workflow.get_external_workflow_handle(owed.run_id)
        try:
            if owed.request_id:
                answer = AdmissionAnswer(request_id=owed.request_id, admission=owed.admission)
                await handle.signal(Signal.ADMISSION_ANSWER, answer)
            else:
                await handle.signal(Signal.ADMITTED, owed.admission)
            if owed.admission.reason != "pumped":
                return
            latency = (workflow.now() - self._pumped_at).total_seconds()
            metrics.record(metrics.PUMP_LATENCY, latency, domain=self._ledger.domain)
        except Exception:  # noqa: BLE001 - the run is gone: its place goes to the next
            capacity.withdraw(self._ledger, owed.run_id)
            capacity.release(self._ledger, Release(run_id=owed.run_id))
            self._note(f"{owed.run_id} ended before it was admitted; its capacity passes on")
            self._pump()

    async def _reprobe(self) -> None:
        """Capacity freed outside Steward shows only in a probe: look again, slowly."""
        ledger = self._ledger
        if not ledger.host_queue or not ledger.probe:
            return
        try:
            reading: ProbeReading = await workflow.execute_activity(
                Activity.PROBE_CAPACITY,
                ProbeRequest(**ledger.probe),
                task_queue=ledger.host_queue,
                result_type=ProbeReading,
                start_to_close_timeout=timedelta(seconds=60),
                retry_policy=RetryPolicy(maximum_attempts=2),
            )
        except ActivityError:
            return
        if capacity.note_reading(ledger, reading):
            self._note(f"bound {reading.limits} from {reading.source}")
        self._pump()

    def _show(self) -> None:
        """The queue's length and the runs holding capacity, as metrics (no command)."""
        domain = self._ledger.domain
        metrics.record(metrics.QUEUE_LENGTH, len(self._ledger.queue), domain=domain)
        metrics.record(metrics.RESERVATIONS, len(self._ledger.reservations), domain=domain)

    def _note(self, line: str) -> None:
        self._log.append(f"{workflow.now().isoformat(timespec='seconds')} {line}")
        del self._log[:-LOG_KEPT]  # only the newest are ever shown or carried
        workflow.logger.info(line)
