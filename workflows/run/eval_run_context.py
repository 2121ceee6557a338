"""What every step of an EvalRun works with: one `RunContext` per workflow instance.

The context carries the run's input and state, the commands that arrived (cancel, wake), and
the calls a step makes to the world: activities on the workspace host's queue, the journal, the
workspace write and the search attributes. Steps
in the sibling `eval_run_*` modules take it explicitly, so a step reads as a function of the
run and nothing else.
"""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta
from typing import Any

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError
from temporalio.exceptions import CancelledError as ActivityCancelled

with workflow.unsafe.imports_passed_through():
    from steward.workflows.activity_io import NotifyRequest, NotifyResult, WorkerEnd, WorkspaceWrite
    from steward.workflows.contracts import (
        CancelRequest,
        JournalEvent,
        RunEvent,
        RunInput,
        RunSettings,
        RunState,
        RunStatus,
    )
    from steward.workflows.names import Activity, SearchKey
    from steward.workflows.policy import notices, rulings
    from steward.workflows.policy.capacity import Admission
    from steward.workflows.run import eval_run_metrics
    from steward.workflows.run.eval_run_state import (
        effective_interval,
        visible_state,
        waits_for_commands,
    )
    from steward.workflows.views import web_ui

# Journal events a run keeps while its workspace cannot be written (its state stays bounded;
# the oldest beyond these are counted, and the count journalled once it can be written).
JOURNAL_KEPT = 1_000

# Until it succeeds: the run waits for its host rather than failing.
UNTIL_DONE = RetryPolicy(
    initial_interval=timedelta(seconds=1), maximum_interval=timedelta(seconds=30)
)


class RunContext:
    def __init__(self, run_input: RunInput) -> None:
        self.input = run_input
        self.state = run_input.state if run_input.state is not None else RunState()
        self.lock = asyncio.Lock()  # one tend, amend or signoff at a time
        self.cancel: CancelRequest | None = None
        self.wake = False  # a command asks for a tend now
        self.rearm = False  # the timer changed: wait again with the new one
        # route-by-time-v1 (eval_run_versions.py): agent items go to the operator by the clock.
        self.route_by_time = False
        self.watches: dict[str, asyncio.Task[None]] = {}  # worker id -> its watch loop
        self.worker_ends: list[WorkerEnd] = []  # what the watches reported since the last tend
        self.subscribed_hosts: list[str] = []  # hosts: what the registry was last told
        self.scanning = False  # the integrity scan runs (a signoff waits for it)
        self.scans_running = 0  # how many (a second may run beside the first)
        self.scan_job: asyncio.Task[None] | None = None  # the scan beside the run
        self.scan_shares: dict[str, int] = {}  # running scan -> its connections
        self.scan_counter = 0  # names each scan for its query
        self.scan_outcomes: list[Any] = []  # finished scans the next tend takes in
        self.probes: dict[str, asyncio.Task[None]] = {}  # class id -> its deferral's probing
        self.asking = ""  # ask-by-signal-v1: the ask the run waits on (its request id)
        self.answer: Admission | None = None  # the ledger's answer to it, once come

    @property
    def settings(self) -> RunSettings:
        return self.input.settings

    @settings.setter
    def settings(self, value: RunSettings) -> None:
        # Live options (_steward.yaml edits) are carried in the input: continue-as-new keeps them.
        self.input.settings = value

    def interval(self) -> float:
        """Seconds between scheduled tends, as the timer and the phase make it now."""
        interval = self.state.timer.interval or self.settings.tend_interval
        return effective_interval(self.state.phase, interval)

    def next_tend_at(self) -> datetime | None:
        """When the timer fires next; None when no timer is due (disarmed, or a finished run
        with nothing to retry: commands wake it). Sooner when an agent's item is due to go to
        the operator (routing by time): the run tends at that moment, whatever else it waits
        for; one whose moment passed during a tend gets a tend a second later, unless the
        last tend stopped short (then the interval: a tend that keeps failing does not spin)."""
        if not self.state.timer.armed or waits_for_commands(self.state):
            return None
        now = workflow.now()
        at = now + timedelta(seconds=self.interval())
        due = self.route_due()
        if due is not None and (due > now or self.state.tend_problem is None):
            at = min(at, max(due, now + timedelta(seconds=1)))
        return at

    def timer_wait(self) -> timedelta | None:
        """How long the run waits for its timer from now; None: no timer is due."""
        at = self.next_tend_at()
        return None if at is None else max(at - workflow.now(), timedelta(0))

    def route_window(self) -> float | None:
        """Seconds an agent's item waits for a collect (None: routed by tends, an older run)."""
        if not self.route_by_time:
            return None
        interval = self.state.timer.interval or self.settings.tend_interval
        return rulings.route_window(self.settings.route_after, interval)

    def route_due(self) -> datetime | None:
        """When the next agent item goes to the operator unless an agent collects first."""
        window = self.route_window()
        return None if window is None else rulings.next_route_due(self.state.triage, window)

    def journal_events(self, events: list[RunEvent]) -> None:
        """Journal what a pure decision asked for, in its order."""
        for event in events:
            self.journal(event.event, **event.data)

    @property
    def workspace(self) -> str:
        return self.input.workspace

    @property
    def run_id(self) -> str:
        return workflow.info().workflow_id

    async def activity(
        self,
        name: str,
        arg: Any,
        *,
        result_type: Any = None,
        timeout: timedelta | None = None,
        heartbeat: timedelta | None = None,
        attempts: int | None = None,
        queue: str = "",
        start_within: timedelta | None = None,
    ) -> Any:
        """Run an activity on the host queue (`queue`: another host's, where a task worker
        runs). Without `attempts` it is retried until it succeeds (the run waits for its
        host); with it, the caller handles the failure. On another host it must also start
        within the run's host_timeout: a host that is gone fails it, it does not hold the run."""
        retry = (
            UNTIL_DONE
            if attempts is None
            else RetryPolicy(initial_interval=timedelta(seconds=1), maximum_attempts=attempts)
        )
        try:
            return await workflow.execute_activity(
                name,
                arg,
                task_queue=queue or self.input.host_queue,
                result_type=result_type,
                schedule_to_start_timeout=(
                    start_within or timedelta(seconds=self.settings.host_timeout) if queue else None
                ),
                # Short: if the Steward worker dies mid-activity, the retry should come soon.
                start_to_close_timeout=timeout or timedelta(seconds=60),
                heartbeat_timeout=heartbeat,
                retry_policy=retry,
                summary=web_ui.activity_summary(name, arg),
            )
        except ActivityError as err:
            # Cancelled with the run (Temporal's own cancel) or with the task awaiting it: a
            # cancellation, not an activity that failed; a caller handling failures (the
            # workspace write, the scan) must not swallow it and carry on.
            if isinstance(err.cause, ActivityCancelled):
                raise asyncio.CancelledError() from err
            raise

    def journal(self, event: str, **data: Any) -> None:
        state = self.state
        state.journal_seq += 1
        state.pending_journal.append(
            JournalEvent(seq=state.journal_seq, at=workflow.now(), event=event, data=data)
        )
        if len(state.pending_journal) > JOURNAL_KEPT:  # the workspace has not been writable
            state.journal_dropped += len(state.pending_journal) - JOURNAL_KEPT
            del state.pending_journal[:-JOURNAL_KEPT]

    def status(self) -> RunStatus:
        info = workflow.info()
        # The time set by the last tend, unless the run has since come to wait for commands
        # (a scan or a ruling settled between tends): no time beside a timer that will not fire.
        next_tend_at = None if waits_for_commands(self.state) else self.state.next_tend_at
        return RunStatus(
            workflow_id=info.workflow_id,
            run_id=info.run_id,
            workspace=self.workspace,
            state=self.state.model_copy(
                update={"pending_journal": [], "next_tend_at": next_tend_at}
            ),
            tend_interval=self.settings.tend_interval,
            web_ui=web_ui.page_url(self.input.web_ui, info.run_id),
            host_queue=self.input.host_queue,
            route_after=self.route_window(),
        )

    async def write_workspace(self) -> None:
        """Write status.md and the queued journal. A workspace that cannot be written (the
        activity tries a few times, seconds apart) does not hold up the run: the reason is recorded and told once,
        the journal stays queued, and the next write that succeeds clears the reason."""
        state = self.state
        pending = list(state.pending_journal)
        try:
            await self.activity(
                Activity.WRITE_WORKSPACE,
                WorkspaceWrite(workspace=self.workspace, status=self.status(), journal=pending),
            )  # retried until done, except a workspace that cannot be written (non-retryable)
        except ActivityError as err:
            await self._unwritable(cause_of(err))
            return
        # Only what was written leaves the queue; the activity skips seqs already on disk.
        written = {e.seq for e in pending}
        state.pending_journal = [e for e in state.pending_journal if e.seq not in written]
        if state.workspace_problem is not None:
            state.workspace_problem = None
            dropped, state.journal_dropped = state.journal_dropped, 0
            self.journal(
                "workspace writable again",
                **({"events_not_written": dropped} if dropped else {}),
            )
            await self.write_workspace()  # that event, and status.md without the reason

    async def _unwritable(self, cause: str) -> None:
        state = self.state
        # The activity names the file; a failure it could not name (a timeout) names the place.
        problem = (
            cause if cause.startswith("cannot write") else f"cannot write {self.workspace}: {cause}"
        )
        if problem != state.workspace_problem:  # journalled (queued) once per reason
            self.journal("workspace not written", problem=problem, kept=len(state.pending_journal))
        notice = notices.workspace_notice(state, problem)
        state.workspace_problem = problem
        if notice is not None:
            state.outbox.append(notice)
            await self.flush_outbox()  # delivery never needs the workspace to be writable

    def show_details(self) -> None:
        """The web UI's page of the run: metadata, not a command (nothing a replay compares)."""
        state = self.state
        workflow.set_current_details(
            web_ui.current_details(
                self.workspace, state, web_ui.next_tend_text(state, self.interval())
            )
        )

    def upsert_visibility(self) -> None:
        state = self.state
        self.show_details()
        workflow.upsert_search_attributes(
            [
                SearchKey.STATE.value_set(visible_state(state)),
                SearchKey.SAMPLES_DONE.value_set(state.samples_done),
                SearchKey.SAMPLES_TOTAL.value_set(state.samples_total),
            ]
        )

    async def publish_state(self) -> None:
        """The workspace files and the search attributes show the state as it is now."""
        await self.write_workspace()
        self.upsert_visibility()
        eval_run_metrics.show(self.state, self.run_id)  # the metrics too (no command)

    async def flush_outbox(self) -> None:
        """Deliver everything due as one message; keep it for the next tend if that fails."""
        state = self.state
        if not state.outbox:
            return
        title, body = notices.message(self.workspace.rstrip("/").split("/")[-1], state.outbox)
        result: NotifyResult = await self.activity(
            Activity.NOTIFY,
            NotifyRequest(workspace=self.workspace, title=title, body=body),
            result_type=NotifyResult,
            attempts=2,
        )
        if result.delivered:
            self.journal("notified", kinds=sorted({n.kind for n in state.outbox}))
        elif result.configured:
            if result.problem != state.notify_problem:
                self.journal(
                    "notification not delivered", problem=result.problem, kept=len(state.outbox)
                )
            state.notify_problem = result.problem
            return
        state.outbox, state.notify_problem = [], None


def cause_of(err: ActivityError) -> str:
    """The one sentence an activity failed with."""
    cause = err.cause
    return str(cause.message if isinstance(cause, ApplicationError) else cause or err)
