"""EvalRun: one Inspect eval run as a durable workflow.

The loop: capture the definition into tasks, ask for capacity, then tend until the run ends —
each tend observes the run and acts on what it saw — waiting between tends for an event: a
command, a watched worker that exited, hung or lingers (eval_run_watch.py), a scan that ended
(eval_run_scan.py), or the timer, which
stays as the safety net and the ramp's window (a finished run with nothing to retry has none).
Signals and updates are commands, queries are state, long-running heartbeating activities watch
the workers, and every side effect is an activity on the host queue of the machine that holds
the workspace.

Where each concern lives (each module takes one `RunContext`, eval_run_context.py):

| module | concern |
|---|---|
| eval_run.py | this class: the loop and every handler, each a few lines that delegate |
| eval_run_context.py | input, state, activities, journal, workspace write, outbox |
| eval_run_versions.py | which runs this release continues; the patch flags left, each with its date |
| eval_run_tend.py | one tend's steps: observe → apply → ramp → triage → spawn → publish |
| eval_run_ramp.py | live options and the ramp applied (setpoint_plan.py decides) |
| eval_run_triage.py | error classes, rulings, healing, the cost cap (and older runs' scan) |
| eval_run_capacity.py | admission and release (admission.py decides) |
| eval_run_change.py | relaunch (amend), drift, log-store reuse |
| eval_run_lifecycle.py | capture, signoff, cancel |
| eval_run_workers.py | spawning and stopping task workers |
| eval_run_hosts.py | placing task workers on other hosts (`hosts`), and losing a host |
| eval_run_watch.py | one heartbeating watch activity per worker: exits, hangs, lingering wake the run |
| eval_run_provider.py | a rerun that waits for its provider (probed on a timer), a stuck provider |
| eval_run_scan.py | the integrity scan beside the run: each complete task's logs, its end wakes the run |
| eval_run_views.py, eval_run_state.py | what queries and renderers show (pure) |

Adding a step: write the decision as a pure function over the state that returns actions as
data (tested without Temporal), and its calls in the `eval_run_*` module of its concern; call
it from the tend or a handler here. A step that adds or reorders commands (activities, timers,
markers) in existing runs needs a `workflow.patched` flag and a recorded history in
tests/histories; eval_run_versions.py lists every flag left and when it goes.
"""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta

from temporalio import workflow
from temporalio.exceptions import ApplicationError

with workflow.unsafe.imports_passed_through():
    from steward.workflows.contracts import (
        ENDING_PHASES,
        TERMINAL_PHASES,
        UNCHANGEABLE_PHASES,
        CancelRequest,
        CollectView,
        CommandNote,
        RunInput,
        RunState,
        RunStatus,
        Signoff,
        SignoffRequest,
        TendSummary,
        TimerRequest,
    )
    from steward.workflows.names import Signal, WorkflowType
    from steward.workflows.policy import rulings
    from steward.workflows.policy.capacity import Admission
    from steward.workflows.policy.capacity_contracts import AdmissionAnswer
    from steward.workflows.policy.delta import AmendRequest, AmendResult
    from steward.workflows.policy.hosts import HostLost
    from steward.workflows.policy.rulings import RuleRequest, RuleResult
    from steward.workflows.run import eval_run_capacity as run_capacity
    from steward.workflows.run import eval_run_change as change
    from steward.workflows.run import eval_run_hosts, eval_run_scan
    from steward.workflows.run import eval_run_lifecycle as lifecycle
    from steward.workflows.run import eval_run_tend as tending
    from steward.workflows.run import eval_run_triage as triage
    from steward.workflows.run import eval_run_versions as versions
    from steward.workflows.run.eval_run_context import RunContext
    from steward.workflows.run.eval_run_provider import resume_probing
    from steward.workflows.run.eval_run_watch import watch_all
    from steward.workflows.views import eval_run_views as views
    from steward.workflows.views import web_ui


@workflow.defn(name=WorkflowType.EVAL_RUN)
class EvalRun:
    @workflow.init
    def __init__(self, run_input: RunInput) -> None:
        # From the input, not in run(): a command can arrive in the very first activation of a
        # continued-as-new run, before run() starts, and must see the carried state. A run this
        # release does not continue stops here, before any command (eval_run_versions.py).
        versions.read_at_start()
        self._ctx = RunContext(run_input)
        self._ctx.route_by_time = versions.routes_by_time()

    # ---------------------------------------------------------------- the loop
    @workflow.run
    async def run(self, run_input: RunInput) -> RunState:
        ctx = self._ctx
        try:
            await self._run(run_input)
        except asyncio.CancelledError:
            # Cancelled through Temporal itself (web UI, `temporal workflow cancel`): stop the
            # same orderly way `steward cancel` does, and end as a cancelled run.
            if ctx.state.phase not in TERMINAL_PHASES:
                ctx.cancel = ctx.cancel or CancelRequest(
                    reason="cancelled through Temporal", by="temporal"
                )
                await lifecycle.cancel(ctx)
        await workflow.wait_condition(workflow.all_handlers_finished)
        return ctx.state

    async def _run(self, run_input: RunInput) -> None:
        ctx, state = self._ctx, self._ctx.state
        if run_input.state is None:
            state.started_at = workflow.now()
            state.timer.armed = run_input.timer
            ctx.journal("launched", definition=run_input.definition, by=run_input.launched_by)
            if not await lifecycle.capture(ctx):
                return
            await run_capacity.admit(ctx, "launch")
        else:
            watch_all(ctx)  # re-adopt the workers a continued run carries over
            resume_probing(ctx)  # and probe for the reruns that wait for their provider
            ctx.show_details()  # a continued run's page says where it stands before its tend
        # A continued run whose handover came between tends waits out the timer it carries.
        due = run_input.state is None or run_input.tend_due
        deadline = None if due else state.next_tend_at

        while state.phase not in TERMINAL_PHASES:
            if ctx.cancel is not None:
                await lifecycle.cancel(ctx)
                return
            if state.phase == "queued":
                # Nothing runs and nothing needs tending: the ledger's signal (or a cancel) wakes it.
                await workflow.wait_condition(
                    lambda: state.phase != "queued" or ctx.cancel is not None or _history_full()
                )
                if _history_full() and state.phase == "queued":
                    await workflow.wait_condition(workflow.all_handlers_finished)
                    workflow.set_current_details(web_ui.handed_over(ctx.workspace, state))
                    workflow.continue_as_new(
                        ctx.input.model_copy(update={"state": state, "tend_due": True})
                    )
                due = True  # admitted: its first tend starts it
                continue
            if due:
                ctx.wake = False  # what arrives during the tend wakes the next one
                await self._tend_locked()
                if state.phase in TERMINAL_PHASES:
                    return
            due = await self._wait_for_next_tend(deadline)
            deadline = None
            if _history_full() and ctx.cancel is None:
                if ctx.scanning:
                    # A handover would cut the scans beside the run off (their work redone by
                    # the next run): hand over once they have ended (tending meanwhile on
                    # events and on the timer, which the history-full wait cannot).
                    due = await self._wait_for_scans()
                    continue
                # Tends driven by updates grow the history too: hand over between tends.
                if not await self._handlers_settled():
                    continue  # a cancel came meanwhile: the loop carries it out first
                if state.phase in TERMINAL_PHASES:
                    return  # a signoff that waited for a tend has ended the run
                due = due or ctx.wake
                workflow.set_current_details(web_ui.handed_over(ctx.workspace, state))
                workflow.continue_as_new(
                    ctx.input.model_copy(update={"state": state, "tend_due": due})
                )

    async def _handlers_settled(self) -> bool:
        """Wait until no handler runs and no tend holds the lock, so the run can hand over.
        A handler may be waiting for a tend meanwhile (a signoff waiting for the scan the next
        tend starts or takes in): the run tends when woken, and a cancel ends the wait (False)."""
        ctx = self._ctx

        def idle() -> bool:
            return workflow.all_handlers_finished() and not ctx.lock.locked()

        while True:
            await workflow.wait_condition(lambda: idle() or ctx.wake or ctx.cancel is not None)
            if ctx.cancel is not None:
                return False
            if idle():
                return True
            ctx.wake = False
            await self._tend_locked()

    async def _wait_for_next_tend(self, deadline: datetime | None = None) -> bool:
        """Until the timer fires (when one is due; at `deadline` if given), a command or a
        watch wakes the run, or it must hand over. Arming or disarming restarts the wait with
        the new timer, without a tend. Whether a tend is due (False: only a handover is)."""
        ctx = self._ctx
        while True:
            ctx.rearm = False
            timeout = ctx.timer_wait()  # sooner than the interval when an agent item is due
            if timeout is not None and deadline is not None:
                timeout = max(deadline - workflow.now(), timedelta(0))
            deadline = None
            if timeout == timedelta(0):
                return True
            try:
                await workflow.wait_condition(
                    lambda: ctx.wake or ctx.rearm or ctx.cancel is not None or _history_full(),
                    timeout=timeout,
                    timeout_summary="next tend (the run's timer; sooner on events)",
                )
            except TimeoutError:
                return True
            if ctx.rearm and not (ctx.wake or ctx.cancel or _history_full()):
                continue
            return ctx.wake or ctx.cancel is not None

    async def _wait_for_scans(self) -> bool:
        """Until the running scans end, a command or a watch wakes the run, or its timer is
        due; whether a tend is due."""
        ctx = self._ctx
        timeout = ctx.timer_wait()
        try:
            await workflow.wait_condition(
                lambda: not ctx.scanning or ctx.wake or ctx.cancel is not None,
                timeout=timeout,
                timeout_summary="the scans beside the run, before it hands over",
            )
        except TimeoutError:
            return True
        return ctx.wake or ctx.cancel is not None

    async def _tend_locked(self) -> TendSummary:
        async with self._ctx.lock:
            return await tending.tend(self._ctx)

    # ---------------------------------------------------------------- queries
    @workflow.query
    def status(self) -> RunStatus:
        status = self._ctx.status()
        status.scan_waits = lifecycle.scan_waits(self._ctx)  # for the signoff blockers
        return status

    @workflow.query
    def collect_view(self, since: int) -> CollectView:
        return views.collect_view(self._ctx.state, self._ctx.settings, since)

    # ---------------------------------------------------------------- tend and timer
    @workflow.update
    async def tend(self) -> TendSummary:
        """Run one tend now and return what it did."""
        return await self._tend_locked()

    @tend.validator
    def _validate_tend(self) -> None:
        state = self._ctx.state
        if tending.nothing_to_tend(self._ctx):
            raise ApplicationError(f"The run is {state.phase}; there is nothing to tend.")
        if state.phase == "capturing":
            raise ApplicationError("The run is still resolving its tasks; try again in a moment.")
        if state.phase == "queued":
            raise ApplicationError(
                "The run is queued for capacity; it starts by itself when its turn comes "
                f"({state.capacity.reason})."
            )

    @workflow.signal
    def timer_arm(self, request: TimerRequest) -> None:
        """Arm the tend timer (idempotent: arming twice leaves one timer)."""
        ctx, timer = self._ctx, self._ctx.state.timer
        if timer.armed and timer.interval == request.interval:
            return
        timer.armed, timer.interval = True, request.interval
        ctx.journal("timer armed", interval=ctx.interval(), by=request.by)
        ctx.state.next_tend_at = ctx.next_tend_at()
        ctx.rearm = True

    @workflow.signal
    def timer_disarm(self, request: TimerRequest) -> None:
        """No scheduled tends: the run tends only on `steward tend` (or another command)."""
        ctx = self._ctx
        if not ctx.state.timer.armed:
            return
        ctx.state.timer.armed, ctx.state.next_tend_at = False, None
        ctx.journal("timer disarmed", by=request.by)
        ctx.rearm = True

    # ---------------------------------------------------------------- run control
    @workflow.signal
    def pause(self, note: CommandNote) -> None:
        ctx, state = self._ctx, self._ctx.state
        if not state.paused:
            state.paused, state.pause_reason = True, note.reason
            ctx.journal("paused", reason=note.reason, by=note.by)
        ctx.wake = True

    @workflow.signal
    def resume(self, note: CommandNote) -> None:
        ctx, state = self._ctx, self._ctx.state
        if state.paused:
            state.paused, state.pause_reason = False, None
            ctx.journal("resumed", by=note.by)
        ctx.wake = True

    @workflow.signal
    def ramp_hold(self, note: CommandNote) -> None:
        """Freeze the climb (the defensive cut on pushback stays active)."""
        ctx, state = self._ctx, self._ctx.state
        if not state.ramp_hold:
            state.ramp_hold, state.ramp_hold_reason = True, note.reason
            ctx.journal("ramp hold", reason=note.reason, by=note.by)

    @workflow.signal
    def ramp_resume(self, note: CommandNote) -> None:
        ctx, state = self._ctx, self._ctx.state
        if state.ramp_hold:
            state.ramp_hold, state.ramp_hold_reason = False, None
            ctx.journal("ramp resumed", by=note.by)

    @workflow.signal
    def cancel(self, request: CancelRequest) -> None:
        if self._ctx.cancel is None:
            self._ctx.cancel = request
            self._ctx.journal("cancel requested", reason=request.reason, by=request.by)

    @workflow.signal(name=Signal.ADMITTED)
    async def admitted(self, admission: Admission) -> None:
        """The capacity ledger let this queued run in (a release pumped the queue)."""
        ctx, state = self._ctx, self._ctx.state
        if state.phase in ENDING_PHASES or ctx.cancel:
            await run_capacity.release(ctx, None, "the run ended before its turn came")
            return
        if state.capacity.admitted:
            state.capacity.held = dict(admission.resources)
            return
        run_capacity.granted(ctx, admission, "pumped")
        ctx.wake = True

    @workflow.signal(name=Signal.ADMISSION_ANSWER)
    def admission_answer(self, answer: AdmissionAnswer) -> None:
        """The ledger's answer to an ask (ask-by-signal-v1): the asking step takes it; an
        answer to an ask no longer waited on (a second answer to a repeated ask) is dropped."""
        if answer.request_id == self._ctx.asking:
            self._ctx.answer = answer.admission

    @workflow.query
    def scan_connections(self, key: str) -> int | None:
        """scan-widen-v1: the connections the running scan `key` may hold now."""
        return self._ctx.scan_shares.get(key)

    @workflow.query
    def scan_headroom(self, key: str) -> int:
        """budget-episode-v1: how far above its share the running scan `key` may probe."""
        return eval_run_scan.headroom(self._ctx, key)

    @workflow.signal
    def scan_drained(self, key: str) -> None:
        """scan-widen-v1: the scan `key` asks for nothing more (it writes its results out):
        its connections may go to the scan beside it now."""
        eval_run_scan.widen_the_other(self._ctx, key)

    @workflow.signal(name=Signal.HOST_LOST)
    def host_lost(self, loss: HostLost) -> None:
        """The host registry: a host this run's workers are on has gone silent."""
        eval_run_hosts.lost(self._ctx, loss)

    # ---------------------------------------------------------------- decisions
    @workflow.update
    async def rule(self, request: RuleRequest) -> RuleResult:
        """Answer a decision (an agent proposes, the operator rules); the tend it wakes
        carries the ruling out."""
        return triage.rule(self._ctx, request)

    @rule.validator
    def _validate_rule(self, request: RuleRequest) -> None:
        state = self._ctx.state
        if state.phase in TERMINAL_PHASES:
            raise ApplicationError(f"The run is {state.phase}; there is nothing to rule on.")
        problem = rulings.rule_problem(state.triage, request, self._ctx.settings.rules)
        if problem:
            raise ApplicationError(problem)

    @workflow.signal
    def collected(self, note: CommandNote) -> None:
        """An agent looked (`steward collect`): its items stay its own for `route_after` more
        (two more tends for a run started before route-by-time-v1). No wake: a timer set for
        the old moment tends once, routes nothing, and waits for the new one."""
        triage_state = self._ctx.state.triage
        triage_state.last_collect_tend = self._ctx.state.tend_count
        triage_state.last_collect_at = workflow.now()

    @workflow.update
    async def signoff(self, request: SignoffRequest) -> Signoff:
        """Sign the run off: curate the log dir, finalize journal and status, stop tending."""
        await eval_run_scan.wait_for_scan(self._ctx)
        async with self._ctx.lock:
            return await lifecycle.signoff(self._ctx, request)

    @signoff.validator
    def _validate_signoff(self, request: SignoffRequest) -> None:
        problem = lifecycle.signoff_problem(self._ctx, request)
        if problem:
            raise ApplicationError(problem)

    # ---------------------------------------------------------------- relaunch
    @workflow.update
    async def amend(self, request: AmendRequest) -> AmendResult:
        """Commit a relaunch's delta (`steward launch` after an edit)."""
        async with self._ctx.lock:
            return await change.amend(self._ctx, request)

    @amend.validator
    def _validate_amend(self, request: AmendRequest) -> None:
        phase = self._ctx.state.phase
        if phase in UNCHANGEABLE_PHASES:
            raise ApplicationError(
                f"The run is {phase}; it takes no changes (launch a new run once it has ended)."
            )


def _history_full() -> bool:
    return workflow.info().is_continue_as_new_suggested()
