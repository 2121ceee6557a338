"""EvalRun: one Inspect eval run as a durable workflow.

Timers are the tend loop, signals and updates are commands, the query is the state, and
every side effect is an activity on the host queue of the machine that holds the workspace.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError

with workflow.unsafe.imports_passed_through():
    from . import cost, decisions, notices, policy, ramp
    from .capacity import (
        Admission,
        AdmissionCall,
        AdmissionOutcome,
        AdmitRequest,
        Door,
        Footprint,
        ProbeRequest,
        Release,
    )
    from .contracts import (
        TERMINAL_PHASES,
        AnomalyRequest,
        ApplyRequest,
        ApplyResult,
        CancelRequest,
        Capture,
        CaptureRequest,
        CollectView,
        CommandNote,
        CurateRequest,
        CurateResult,
        FetchRequest,
        JournalEvent,
        LiveOptions,
        LiveOptionsRequest,
        MoveRequest,
        Notice,
        NotifyRequest,
        NotifyResult,
        Observation,
        ObserveRequest,
        Progress,
        RunInput,
        RunState,
        RunStatus,
        SelectedTask,
        SetpointChange,
        SetpointRequest,
        Signoff,
        SignoffRequest,
        SpawnRequest,
        StopRequest,
        StopResult,
        TaskState,
        TendSummary,
        TidyRequest,
        TimerRequest,
        WorkerProcess,
        WorkspaceWrite,
    )
    from .decisions import Anomaly, RuleRequest, RuleResult
    from .delta import AmendRequest, AmendResult, compute_delta, delta_lines
    from .eval_run_state import effective_interval, visible_state
    from .names import Activity, SearchKey, Signal, WorkflowType


_RETRY = RetryPolicy(initial_interval=timedelta(seconds=1), maximum_interval=timedelta(seconds=30))


@workflow.defn(name=WorkflowType.EVAL_RUN)
class EvalRun:
    @workflow.init
    def __init__(self, run_input: RunInput) -> None:
        # From the input, not in run(): a command can arrive in the very first activation of a
        # continued-as-new run, before run() starts, and must see the carried state.
        self._input: RunInput | None = run_input
        self._state = run_input.state if run_input.state is not None else RunState()
        self._lock = asyncio.Lock()
        self._wake = False
        self._cancel: CancelRequest | None = None
        # Decisions, notifications and signoff (off when replaying runs from before them,
        # which ended as soon as every task was complete).
        self._decisions = False
        self._capacity = False  # admission through the capacity ledger (off for older runs)
        self._delta = False  # drift reports (off for older runs)
        self._rearm = False  # the timer changed: wait again with the new one

    # ---------------------------------------------------------------- main loop
    @workflow.run
    async def run(self, run_input: RunInput) -> RunState:
        self._input = run_input
        try:
            await self._run(run_input)
        except asyncio.CancelledError:
            # Cancelled through Temporal itself (web UI, `temporal workflow cancel`): stop the
            # same orderly way `steward cancel` does, and end as a cancelled run.
            if self._state.phase not in TERMINAL_PHASES:
                self._cancel = self._cancel or CancelRequest(
                    reason="cancelled through Temporal", by="temporal"
                )
                await self._cancel_run()
        await workflow.wait_condition(workflow.all_handlers_finished)
        return self._state

    async def _run(self, run_input: RunInput) -> None:
        self._decisions = workflow.patched("decisions-v1")
        self._capacity = workflow.patched("capacity-v1")
        self._delta = workflow.patched("delta-v1")
        self._timer = workflow.patched("timer-v1")
        if run_input.state is not None:
            self._state = run_input.state
        else:
            self._state.started_at = workflow.now()
            self._state.timer.armed = run_input.timer
            self._journal("launched", definition=run_input.definition, by=run_input.launched_by)
            if not await self._capture():
                return
            if self._capacity:
                await self._admit("launch")

        while self._state.phase not in TERMINAL_PHASES:
            if self._cancel is not None:
                await self._cancel_run()
                return
            if self._state.phase == "queued":
                # Nothing runs and nothing needs tending: the ledger's signal (or a cancel) wakes it.
                await workflow.wait_condition(
                    lambda: (
                        self._state.phase != "queued"
                        or self._cancel is not None
                        or self._history_full()
                    )
                )
                if self._history_full() and self._state.phase == "queued":
                    await workflow.wait_condition(workflow.all_handlers_finished)
                    workflow.continue_as_new(run_input.model_copy(update={"state": self._state}))
                continue
            await self._tend_locked()
            if self._state.phase in TERMINAL_PHASES:
                return
            if self._state.phase == "finished" and not self._decisions:
                return
            self._wake = False
            await self._wait_for_next_tend()
            if self._history_full() and self._cancel is None:
                # Tends driven by updates grow the history too: hand over between tends.
                await workflow.wait_condition(
                    lambda: workflow.all_handlers_finished() and not self._lock.locked()
                )
                workflow.continue_as_new(run_input.model_copy(update={"state": self._state}))

    async def _wait_for_next_tend(self) -> None:
        """Until the timer fires (when armed), a command wakes the run, or it must hand over.
        Arming or disarming restarts the wait with the new timer, without a tend."""
        while True:
            self._rearm = False
            armed = self._state.timer.armed
            try:
                await workflow.wait_condition(
                    lambda: (
                        self._wake
                        or self._rearm
                        or self._cancel is not None
                        or self._history_full()
                    ),
                    timeout=timedelta(seconds=self._interval()) if armed else None,
                )
            except TimeoutError:
                return
            if self._rearm and not (self._wake or self._cancel or self._history_full()):
                continue
            return

    def _interval(self) -> float:
        interval = self._state.timer.interval or self._settings.tend_interval
        return effective_interval(self._state.phase, interval)

    def _next_tend_at(self):
        if not self._state.timer.armed:
            return None
        return workflow.now() + timedelta(seconds=self._interval())

    @workflow.signal
    def timer_arm(self, request: TimerRequest) -> None:
        """Arm the tend timer (idempotent: arming twice leaves one timer)."""
        timer = self._state.timer
        if timer.armed and timer.interval == request.interval:
            return
        timer.armed, timer.interval = True, request.interval
        self._journal("timer armed", interval=self._interval(), by=request.by)
        self._state.next_tend_at = self._next_tend_at()
        self._rearm = True

    @workflow.signal
    def timer_disarm(self, request: TimerRequest) -> None:
        """No scheduled tends: the run tends only on `steward tend` (or another command)."""
        if not self._state.timer.armed:
            return
        self._state.timer.armed = False
        self._state.next_tend_at = None
        self._journal("timer disarmed", by=request.by)
        self._rearm = True

    @staticmethod
    def _history_full() -> bool:
        return workflow.info().is_continue_as_new_suggested()

    # ---------------------------------------------------------------- commands
    @workflow.query
    def status(self) -> RunStatus:
        return self._status()

    @workflow.update
    async def tend(self) -> TendSummary:
        """Run one tend now and return what it did."""
        return await self._tend_locked()

    @tend.validator
    def _validate_tend(self) -> None:
        ended = ("signed_off", "cancelled", "failed", "cancelling")
        if self._state.phase in ended or (self._state.phase == "finished" and not self._decisions):
            raise ApplicationError(f"The run is {self._state.phase}; there is nothing to tend.")
        if self._state.phase == "capturing":
            raise ApplicationError("The run is still resolving its tasks; try again in a moment.")
        if self._state.phase == "queued":
            raise ApplicationError(
                "The run is queued for capacity; it starts by itself when its turn comes "
                f"({self._state.capacity.reason})."
            )

    @workflow.signal(name=Signal.ADMITTED)
    async def admitted(self, admission: Admission) -> None:
        """The capacity ledger let this queued run in (a release pumped the queue)."""
        state = self._state
        if state.phase in TERMINAL_PHASES or state.phase == "cancelling" or self._cancel:
            await self._release(None, "the run ended before its turn came")
            return
        if state.capacity.admitted:
            state.capacity.held = dict(admission.resources)
            return
        self._granted(admission, "pumped")
        self._wake = True

    @workflow.signal
    def pause(self, request: CommandNote) -> None:
        if not self._state.paused:
            self._state.paused, self._state.pause_reason = True, request.reason
            self._journal("paused", reason=request.reason, by=request.by)
        self._wake = True

    @workflow.signal
    def resume(self, request: CommandNote) -> None:
        if self._state.paused:
            self._state.paused, self._state.pause_reason = False, None
            self._journal("resumed", by=request.by)
        self._wake = True

    @workflow.signal
    def ramp_hold(self, request: CommandNote) -> None:
        """Freeze the climb (the defensive cut on pushback stays active)."""
        if not self._state.ramp_hold:
            self._state.ramp_hold, self._state.ramp_hold_reason = True, request.reason
            self._journal("ramp hold", reason=request.reason, by=request.by)

    @workflow.signal
    def ramp_resume(self, request: CommandNote) -> None:
        if self._state.ramp_hold:
            self._state.ramp_hold, self._state.ramp_hold_reason = False, None
            self._journal("ramp resumed", by=request.by)

    @workflow.signal
    def cancel(self, request: CancelRequest) -> None:
        if self._cancel is None:
            self._cancel = request
            self._journal("cancel requested", reason=request.reason, by=request.by)

    @workflow.update
    async def rule(self, request: RuleRequest) -> RuleResult:
        """Answer a decision: an agent's verdict on an error class is a proposal (the operator
        rules on it); the operator's rules. Effects are carried out by the next tend (now)."""
        state = self._state
        result = decisions.apply_rule(
            state.triage,
            request,
            self._settings.rules,
            now=workflow.now(),
            tend=state.tend_count,
        )
        self._journal(
            "proposed" if result.effect == "proposed" else "ruled",
            decision=result.decision_id,
            error_class=result.class_id,
            verdict=request.verdict,
            by=request.by,
            role=request.role,
            reason=request.reason,
            raised=result.raised,
        )
        cls = state.triage.find_class(result.class_id)
        if cls is not None and cls.kind == "cost_cap" and result.effect == "ruled":
            self._rule_cost_cap(request)
        if cls is not None and cls.kind == "stalled_task" and result.effect == "ruled":
            task = state.task(cls.instances[-1].anomaly.task)
            if request.verdict == "retry":
                task.phase, task.fruitless = "pending", 0
            else:
                task.phase = "given_up"
        self._wake = True
        return result

    @rule.validator
    def _validate_rule(self, request: RuleRequest) -> None:
        if self._state.phase in TERMINAL_PHASES:
            raise ApplicationError(f"The run is {self._state.phase}; there is nothing to rule on.")
        problem = decisions.rule_problem(self._state.triage, request, self._settings.rules)
        if problem:
            raise ApplicationError(problem)

    @workflow.update
    async def amend(self, request: AmendRequest) -> AmendResult:
        """Commit a relaunch's delta (`steward launch` after an edit): archive what it removes
        or supersedes, restore what the archive answers, reuse what the store answers, and
        queue only the new or grown work; a task whose identifier survived keeps its log."""
        async with self._lock:
            state, result = self._state, AmendResult()
            leaving = {r.identifier for r in request.rows if r.kind in ("removed", "superseded")}
            await self._stop_workers_of(leaving)
            archive = _archive_of(state.log_dir)
            moves = [
                (path, archive if row.kind != "restore" else state.log_dir)
                for row in request.rows
                if row.kind in ("removed", "superseded", "restore")
                for path in row.moves
            ]
            moved: list[str] = []
            if moves:
                moved = await self._activity(
                    Activity.MOVE_LOGS, MoveRequest(moves=moves), result_type=list[str]
                )
            destination = dict(zip([path for path, _ in moves], moved, strict=True))
            result.archived = [m for m in moved if m.startswith(archive)]
            restored = {
                row.identifier: destination[row.moves[0]]
                for row in request.rows
                if row.kind == "restore" and row.moves
            }
            fetched: dict[str, str] = {}
            if request.store_hits:
                fetched = await self._activity(
                    Activity.FETCH_FROM_STORE,
                    FetchRequest(hits=request.store_hits, log_dir=state.log_dir),
                    result_type=dict[str, str],
                    timeout=timedelta(minutes=10),
                )
            state.tasks = self._amended_tasks(request, restored, fetched, result)
            state.max_tasks = request.capture.max_tasks
            state.reused = sorted({*state.reused, *result.reused})
            state.definition_hash = request.definition_hash
            state.drift, state.drift_hash = [], None
            self._journal(
                "amended",
                by=request.by,
                rows=[f"{r.kind} {r.name} ({r.model}): {r.detail}" for r in request.rows],
                runs=result.added,
                archived=result.archived,
                restored=result.restored,
                reused=result.reused,
            )
            if state.phase in ("finished", "stalled"):
                state.phase = policy.run_phase(state)
            await self._write_workspace()
            self._upsert_visibility()
            self._wake = True
            return result

    @amend.validator
    def _validate_amend(self, request: AmendRequest) -> None:
        phase = self._state.phase
        if phase in TERMINAL_PHASES or phase in ("cancelling", "capturing"):
            raise ApplicationError(
                f"The run is {phase}; it takes no changes (launch a new run once it has ended)."
            )

    def _amended_tasks(
        self,
        request: AmendRequest,
        restored: dict[str, str],
        fetched: dict[str, str],
        result: AmendResult,
    ) -> list[TaskState]:
        old = {t.spec.identifier: t for t in self._state.tasks}
        fresh = {
            t.spec.identifier: t for t in policy.initial_tasks(request.capture, self._settings)
        }
        tasks = []
        for spec in request.capture.tasks:
            task = old.get(spec.identifier)
            if task is not None:
                grew = spec.samples > task.spec.samples or spec.epochs > task.spec.epochs
                task.spec = spec
                if grew and task.phase in ("complete", "given_up", "stalled"):
                    # Resume its log: the samples it holds are reused, only the rest run.
                    task.phase, task.log_status, task.fruitless = "pending", "extend", 0
                    task.extending = task.log
                    result.added.append(spec.name)
                tasks.append(task)
                continue
            task = fresh[spec.identifier]
            if spec.identifier in restored:
                _mark_complete(task, restored[spec.identifier])
                result.restored.append(spec.name)
            elif spec.identifier in fetched:
                _mark_complete(task, fetched[spec.identifier])
                result.reused.append(spec.name)
            else:
                result.added.append(spec.name)
            tasks.append(task)
        return tasks

    async def _follow_drift(self, current: str | None) -> None:
        """An edit of the definition that was not launched is drift: resolve the edit once
        (per version of the file) and report what a launch would change, every tend."""
        state = self._state
        if current is None or state.definition_hash is None:
            return
        if current == state.definition_hash:
            if state.drift:
                state.drift, state.drift_hash = [], None
                self._journal("drift cleared", reason="the definition is as launched again")
            return
        if current == state.drift_hash:
            return
        assert self._input is not None
        try:
            capture: Capture = await self._activity(
                Activity.CAPTURE_DEFINITION,
                CaptureRequest(workspace=self._input.workspace, definition=self._input.definition),
                result_type=Capture,
                timeout=timedelta(minutes=10),
                attempts=1,
            )
        except ActivityError as err:
            state.drift = [f"the edited definition does not resolve: {_cause(err)}"]
        else:
            committed = [t.spec for t in state.tasks]
            logs = {t.spec.identifier: t.log for t in state.tasks}
            delta = compute_delta(committed, logs, capture.tasks, [])
            state.drift = delta_lines(delta) if delta.changed else []
        state.drift_hash = current
        if state.drift:
            self._journal(
                "drift", changes=state.drift, hint="`steward launch --dry-run` shows the delta"
            )

    async def _stop_workers_of(self, identifiers: set[str]) -> None:
        """Stop the workers running tasks that leave the run; their other tasks respawn."""
        state = self._state
        workers = [w for w in state.workers.values() if set(w.tasks) & identifiers]
        if not workers:
            return
        await self._activity(
            Activity.STOP_WORKERS,
            StopRequest(workers=workers, grace_seconds=30.0),
            result_type=StopResult,
            timeout=timedelta(minutes=3),
            heartbeat=timedelta(seconds=15),
        )
        for worker in workers:
            state.workers.pop(worker.worker_id, None)
            for identifier in worker.tasks:
                task = next((t for t in state.tasks if t.spec.identifier == identifier), None)
                if task is not None and task.phase == "running":
                    task.phase, task.worker_id = "pending", None
            self._journal("worker stopped", worker=worker.worker_id, reason="its task left the run")

    @workflow.query
    def collect_view(self, since: int) -> CollectView:
        triage = self._state.triage
        return CollectView(
            decisions=[self._decision_view(d) for d in triage.decisions if d.open],
            classes=[
                {
                    "id": c.id,
                    "kind": c.kind,
                    "title": c.title,
                    "signature": c.signature,
                    "state": c.state,
                    "instances": len(c.instances),
                    "proposal": c.proposal.model_dump(mode="json") if c.proposal else None,
                    "ruling": c.ruling.model_dump(mode="json") if c.ruling else None,
                }
                for c in triage.classes
            ],
            events=[e for e in self._state.pending_journal if e.seq > since],
            cursor=self._state.journal_seq,
            policies=self._settings.rules.policies,
            phase=self._state.phase,
            unattended=any(d.routed for d in triage.open_decisions()),
        )

    def _decision_view(self, decision: decisions.Decision) -> dict[str, Any]:
        cls = self._state.triage.find_class(decision.class_id)
        instances = cls.instances if cls else []
        return {
            "id": decision.id,
            "kind": decision.kind,
            "owner": decision.owner,
            "routed": decision.routed,
            "verdicts": decision.verdicts,
            "question": decision.question,
            "class": decision.class_id,
            "raised_at": decision.raised_at.isoformat(),
            "instances": [
                {
                    "task": i.anomaly.task_name,
                    "sample_id": i.anomaly.sample_id,
                    "epoch": i.anomaly.epoch,
                    "detail": i.anomaly.detail,
                    "tool": i.anomaly.tool,
                }
                for i in instances[-20:]
            ],
        }

    @workflow.signal
    def collected(self, request: CommandNote) -> None:
        """An agent looked (`steward collect`): its items stay its own for two more tends."""
        self._state.triage.last_collect_tend = self._state.tend_count

    @workflow.update
    async def signoff(self, request: SignoffRequest) -> Signoff:
        """Sign the run off: curate the log dir, finalize journal and status, stop tending."""
        assert self._input is not None
        async with self._lock:
            blockers = self._signoff_blockers()
            if blockers:
                raise ApplicationError(
                    "Signoff refused: " + "; ".join(blockers) + ".", non_retryable=True
                )
            state = self._state
            keep = [t.log for t in state.tasks if t.log and t.phase == "complete"]
            curated: CurateResult = await self._activity(
                Activity.CURATE_LOGS,
                CurateRequest(
                    workspace=self._input.workspace,
                    log_dir=state.log_dir,
                    keep=keep,
                    publish=request.publish,
                ),
                result_type=CurateResult,
                timeout=timedelta(minutes=10),
            )
            state.signoff = Signoff(
                by=request.by,
                at=workflow.now(),
                publish=request.publish,
                published=curated.published,
                archived=curated.archived,
                logs=keep,
            )
            state.phase, state.next_tend_at = "signed_off", None
            self._journal(
                "signed off",
                by=request.by,
                logs=len(keep),
                archived=curated.archived,
                published=curated.published,
                publish_problem=curated.problem,
            )
            state.outbox.append(
                Notice(
                    kind="signed_off",
                    text=f"Signed off by {request.by}: {state.samples_done}/"
                    f"{state.samples_total} samples in {len(keep)} log(s)."
                    + (f" Published {len(curated.published)}." if curated.published else ""),
                )
            )
            await self._flush_outbox()
            await self._write_workspace()
            self._upsert_visibility()
            self._wake = True
            return state.signoff

    @signoff.validator
    def _validate_signoff(self, request: SignoffRequest) -> None:
        if not self._decisions:
            raise ApplicationError("This run predates signoff; it ends on its own when finished.")
        if not request.by.strip():
            raise ApplicationError("Signoff needs a name: pass --by NAME.")
        blockers = self._signoff_blockers()
        if blockers:
            raise ApplicationError("Signoff refused: " + "; ".join(blockers) + ".")

    def _signoff_blockers(self) -> list[str]:
        state = self._state
        if state.phase in ("signed_off", "cancelled", "failed", "cancelling", "capturing"):
            return [f"the run is {state.phase}"]
        return decisions.signoff_blockers(
            state.triage,
            open_tasks=[
                t.spec.name for t in state.tasks if t.phase not in ("complete", "given_up")
            ],
            unscanned=bool(self._unscanned_logs()),
            scan_problem=state.scan_problem,
            settled_logs=self._settled_logs(),
        )

    def _settled_logs(self) -> dict[str, str]:
        """task identifier -> its final log, for tasks no process is writing to."""
        state = self._state
        return {
            t.spec.identifier: t.log
            for t in state.tasks
            if t.log
            and t.worker_id not in state.workers
            and t.phase in ("complete", "stalled", "given_up")
        }

    def _unscanned_logs(self) -> list[str]:
        state = self._state
        return [
            t.log
            for t in state.tasks
            if t.phase == "complete" and t.log and t.log not in state.scanned_logs
        ]

    # ---------------------------------------------------------------- steps
    @property
    def _settings(self):
        assert self._input is not None
        return self._input.settings

    async def _capture(self) -> bool:
        assert self._input is not None
        try:
            # `steward launch` resolved the definition already (to smoke it and match the log
            # store); a run started without one resolves it here.
            capture: Capture = self._input.capture or await self._activity(
                Activity.CAPTURE_DEFINITION,
                CaptureRequest(workspace=self._input.workspace, definition=self._input.definition),
                result_type=Capture,
                timeout=timedelta(minutes=10),
            )
        except ActivityError as err:
            message = str(err.cause.message if isinstance(err.cause, ApplicationError) else err)
            self._state.phase, self._state.error = "failed", message
            self._state.finished_at = workflow.now()
            self._journal("failed", error=message)
            await self._write_workspace()
            self._upsert_visibility()
            return False
        self._state.tasks = policy.initial_tasks(capture, self._settings)
        self._state.sandbox_budget = policy.sandbox_budget_of(capture)
        self._state.max_tasks = capture.max_tasks
        self._state.log_dir = capture.log_dir or self._input.log_dir
        self._state.definition_hash = self._input.definition_hash
        self._state.phase = "running"
        self._journal(
            "captured",
            tasks=[t.name for t in capture.tasks],
            samples=sum(t.planned_samples for t in capture.tasks),
            log_dir=self._state.log_dir,
            sandbox_budget=self._state.sandbox_budget,
        )
        if self._input.store_hits:
            reused = await self._reuse_from_store(self._input.store_hits)
            self._journal("reused from store", tasks=reused)
        return True

    async def _reuse_from_store(self, hits: dict[str, str]) -> list[str]:
        """Copy the store's logs that satisfy tasks into the log dir; those tasks are done."""
        fetched: dict[str, str] = await self._activity(
            Activity.FETCH_FROM_STORE,
            FetchRequest(hits=hits, log_dir=self._state.log_dir),
            result_type=dict[str, str],
            timeout=timedelta(minutes=10),
        )
        names = []
        for task in self._state.tasks:
            if task.spec.identifier in fetched:
                _mark_complete(task, fetched[task.spec.identifier])
                names.append(task.spec.name)
        self._state.reused = sorted({*self._state.reused, *names})
        return names

    async def _tend_locked(self) -> TendSummary:
        async with self._lock:
            return await self._tend()

    async def _tend(self) -> TendSummary:
        state = self._state
        summary = TendSummary(
            tend=state.tend_count + 1, at=workflow.now(), phase=state.phase, paused=state.paused
        )
        if state.phase in ("signed_off", "cancelled", "failed", "cancelling"):
            return summary
        if state.phase == "finished" and not self._decisions:
            return summary

        request = ObserveRequest(
            log_dir=state.log_dir,
            workers=list(state.workers.values()),
            tasks=[t.spec for t in policy.open_tasks(state)],
            anomalies=AnomalyRequest(
                workspace=self._input.workspace,
                log_dir=state.log_dir,
                tasks=[t.spec for t in state.tasks],
                workers=list(state.workers.values()),
                stuck_after=self._settings.stuck_after,
            )
            if self._decisions
            else None,
        )
        try:
            observation: Observation = await self._activity(
                Activity.OBSERVE_RUN,
                request,
                result_type=Observation,
                attempts=3 if self._decisions else None,
            )
        except ActivityError as err:
            # A tend that cannot see the run changes nothing; the operator hears once per reason.
            summary.problem = f"observing the run failed: {_cause(err)}"
            self._journal("tend failed", problem=summary.problem)
            notice = notices.tend_problem_notice(state, summary.problem)
            if notice is not None:
                state.outbox.append(notice)
            await self._flush_outbox()
            await self._write_workspace()
            return summary
        outcome = policy.apply_observation(state, observation, self._settings.stall_after)
        self._account_capacity()
        if self._capacity:
            priced = policy.llm_cost(state).dollars(self._settings.prices)
            state.cost.usd, state.cost.unpriced = priced[0], priced[1]
        for worker_id in outcome.exited_workers:
            self._journal("worker exited", worker=worker_id)
        for identifier in outcome.completed:
            task = state.task(identifier)
            summary.completed.append(task.spec.name)
            self._journal(
                "task complete", task=task.spec.name, log=task.log, samples=task.progress.done
            )
        for identifier in outcome.stalled:
            task = state.task(identifier)
            summary.stalled.append(task.spec.name)
            self._journal(
                "task stalled",
                task=task.spec.name,
                attempts=task.attempts,
                reason=f"{task.fruitless} worker deaths without a completed sample",
            )
        summary.restarted = [state.task(i).spec.name for i in outcome.restart]
        if outcome.completed:
            await self._activity(
                Activity.TIDY_LOGS,
                TidyRequest(log_dir=state.log_dir, identifiers=outcome.completed),
            )

        # Runs started before the ramp existed replay without it (tests/histories keeps one).
        if workflow.patched("ramp-v1"):
            await self._ramp(observation)
        if self._decisions:
            await self._triage(observation, outcome.stalled, summary)
            if self._capacity:
                self._check_cost_cap(summary)

        state.phase = policy.run_phase(state)
        if self._capacity and self._needs_admission():
            await self._admit("resume")
        for group in policy.plan_spawns(state, self._settings):
            summary.spawned.extend(await self._spawn(group))

        state.phase = policy.run_phase(state)
        if self._capacity:
            if self._queued():
                state.phase = "queued"
            elif state.capacity.admitted and not policy.open_tasks(state):
                await self._release(None, f"the run is {state.phase}")
        if state.phase == "finished" and state.finished_at is None:
            state.finished_at = workflow.now()
            self._journal("finished", samples=state.samples_done, tasks=len(state.tasks))
            if self._decisions:
                open_items = len(state.triage.open_decisions())
                state.outbox.append(
                    Notice(
                        kind="finished",
                        text=f"Finished: {state.samples_done}/{state.samples_total} samples; "
                        f"{open_items} decision(s) open. Sign off with `steward signoff --by NAME`.",
                    )
                )
        elif state.phase != "finished":
            state.finished_at = None
        state.tend_count = summary.tend  # counted when done, so status never shows a tend half-way
        state.last_tend_at = workflow.now()
        state.next_tend_at = (
            None if state.phase == "finished" and not self._decisions else self._next_tend_at()
        )
        summary.phase, summary.paused = state.phase, state.paused
        summary.samples_done, summary.samples_total = state.samples_done, state.samples_total
        self._journal(
            "tend",
            tend=state.tend_count,
            phase=state.phase,
            samples_done=summary.samples_done,
            samples_total=summary.samples_total,
            spawned=summary.spawned,
        )
        if self._decisions:
            state.outbox.extend(notices.decision_notices(state))
            heartbeat = notices.heartbeat_notice(state, self._settings.heartbeat, workflow.now())
            if heartbeat is not None:
                state.outbox.append(heartbeat)
            await self._flush_outbox()
        await self._write_workspace()
        self._upsert_visibility()
        return summary

    async def _triage(
        self, observation: Observation, stalled: list[str], summary: TendSummary
    ) -> None:
        """Group what went wrong into classes, raise decisions, apply what was ruled, and scan
        the transcripts once every task is settled."""
        state, tend = self._state, self._state.tend_count + 1
        anomalies = [
            Anomaly(
                kind="stalled_task",
                task=identifier,
                task_name=state.task(identifier).spec.name,
                uuid=f"attempt-{state.task(identifier).attempts}",
                detail=f"{state.task(identifier).fruitless} worker deaths without progress",
            )
            for identifier in stalled
        ]
        anomalies += observation.anomalies or []
        if observation.anomaly_problem:
            summary.problem = f"finding anomalies failed: {observation.anomaly_problem}"
            self._journal("tend failed", problem=summary.problem)
        self._absorb(anomalies, summary)
        for decision_id in decisions.route_unattended(state.triage, tend):
            self._journal("routed to operator", decision=decision_id, reason="no agent collected")
        await self._apply_rulings(summary)
        if not policy.open_tasks(state) and self._unscanned_logs():
            await self._scan(summary)

    def _absorb(self, anomalies: list[Anomaly], summary: TendSummary) -> None:
        state = self._state
        outcome = decisions.absorb(
            state.triage,
            anomalies,
            self._settings.rules,
            now=workflow.now(),
            tend=state.tend_count + 1,
        )
        for class_id in outcome.new_classes:
            cls = state.triage.find_class(class_id)
            assert cls is not None
            self._journal("error class", error_class=cls.id, kind=cls.kind, title=cls.title)
        for class_id, count in outcome.new_instances.items():
            self._journal("anomalies", error_class=class_id, new=count)
        for class_id in outcome.standing:
            cls = state.triage.find_class(class_id)
            assert cls is not None and cls.ruling is not None
            self._journal(
                "ruled by standing rule", error_class=class_id, verdict=cls.ruling.verdict
            )
        for decision_id in outcome.raised:
            decision = state.triage.find_decision(decision_id)
            assert decision is not None
            summary.raised.append(decision_id)
            self._journal(
                "decision raised",
                decision=decision_id,
                owner=decision.owner,
                question=decision.question,
                verdicts=decision.verdicts,
            )

    async def _apply_rulings(self, summary: TendSummary) -> None:
        assert self._input is not None
        state = self._state
        actions = decisions.pending_actions(state.triage, self._settled_logs())
        if not actions:
            return
        result: ApplyResult = await self._activity(
            Activity.APPLY_ACTIONS,
            ApplyRequest(
                workspace=self._input.workspace,
                actions=actions,
                workers=list(state.workers.values()),
            ),
            result_type=ApplyResult,
            timeout=timedelta(minutes=5),
        )
        decisions.mark_applied(state.triage, result.done)
        summary.applied += len(result.done)
        applied: dict[tuple[str, str], int] = {}
        for action in result.done:
            key = (action.class_id, action.verdict)
            applied[key] = applied.get(key, 0) + 1
        for (class_id, verdict), count in applied.items():
            self._journal("ruling applied", error_class=class_id, verdict=verdict, instances=count)
        for identifier in result.rerun_tasks:
            task = state.task(identifier)
            task.phase, task.log_status, task.fruitless = "pending", None, 0
            self._journal("rerun queued", task=task.spec.name, log=task.log)
        if result.problems:
            self._journal("ruling not applied", problems=result.problems)

    async def _scan(self, summary: TendSummary) -> None:
        """The scoring-integrity scan of the settled transcripts; findings become classes."""
        assert self._input is not None
        state = self._state
        logs = self._unscanned_logs()
        try:
            findings: list[dict[str, Any]] = await self._activity(
                Activity.SCAN_TRANSCRIPTS,
                {
                    "log_paths": logs,
                    "results_dir": f"{self._input.workspace}/.steward/scans",
                    "scan_model": self._settings.scan_model,
                    "scanners": self._settings.scanners,
                    "cwd": self._input.workspace,
                },
                result_type=list[dict[str, Any]],
                timeout=timedelta(minutes=30),
                attempts=2,
            )
        except ActivityError as err:
            problem = _cause(err)
            if problem != state.scan_problem:
                self._journal("scan failed", problem=problem)
            state.scan_problem = problem
            return
        state.scan_problem = None
        state.scanned_logs.extend(logs)
        by_name = {t.spec.name: t.spec for t in state.tasks}
        by_log = {t.log: t.spec for t in state.tasks if t.log}
        anomalies = []
        for finding in findings:
            spec = by_log.get(finding.get("log")) or by_name.get(str(finding.get("task")))
            if spec is None:
                continue
            anomalies.append(
                Anomaly(
                    kind="scan_finding",
                    task=spec.identifier,
                    task_name=spec.name,
                    sample_id=str(finding.get("sample_id")),
                    epoch=finding.get("epoch"),
                    uuid=f"{finding.get('scanner')}:{finding.get('log')}",
                    log=finding.get("log"),
                    scanner=str(finding.get("scanner")),
                    detail=str(finding.get("explanation") or "")[:500],
                )
            )
        self._journal("scanned", logs=len(logs), findings=len(anomalies))
        self._absorb(anomalies, summary)

    async def _flush_outbox(self) -> None:
        """Deliver everything due as one message; keep it for the next tend if that fails."""
        assert self._input is not None
        state = self._state
        if not state.outbox:
            return
        title, body = notices.message(
            self._input.workspace.rstrip("/").split("/")[-1], state.outbox
        )
        result: NotifyResult = await self._activity(
            Activity.NOTIFY,
            NotifyRequest(workspace=self._input.workspace, title=title, body=body),
            result_type=NotifyResult,
            attempts=2,
        )
        if result.delivered:
            self._journal("notified", kinds=sorted({n.kind for n in state.outbox}))
        elif result.configured:
            if result.problem != state.notify_problem:
                self._journal(
                    "notification not delivered", problem=result.problem, kept=len(state.outbox)
                )
            state.notify_problem = result.problem
            return
        state.outbox, state.notify_problem = [], None

    async def _ramp(self, observation: Observation) -> None:
        """Move each task's sample concurrency by the ramp's rules and apply it live."""
        assert self._input is not None
        state = self._state
        fresh: LiveOptions = await self._activity(
            Activity.READ_LIVE_OPTIONS,
            LiveOptionsRequest(workspace=self._input.workspace, definition=self._input.definition),
            result_type=LiveOptions,
        )
        if self._delta:
            await self._follow_drift(fresh.definition_hash)
        if (
            self._timer
            and fresh.tend_interval
            and fresh.tend_interval != self._settings.tend_interval
        ):
            self._journal(
                "tend interval changed",
                previous=self._settings.tend_interval,
                now=fresh.tend_interval,
                applies=self._state.timer.interval is None,
            )
            self._input.settings = self._settings.model_copy(
                update={"tend_interval": fresh.tend_interval}
            )
        if fresh.problem != state.options_problem:
            state.options_problem = fresh.problem
            if fresh.problem:
                self._journal(
                    "options unreadable", problem=fresh.problem, kept=self._settings.samples_ramp
                )
                notice = notices.tend_problem_notice(state, f"options unreadable: {fresh.problem}")
                if notice is not None and self._decisions:
                    state.outbox.append(notice)
        if fresh.rules is not None and self._decisions:
            # Standing rules, heartbeat and stuck_after follow _steward.yaml edits at once.
            self._input.settings = self._settings.model_copy(
                update={
                    "rules": fresh.rules,
                    "heartbeat": fresh.heartbeat,
                    "stuck_after": fresh.stuck_after or self._settings.stuck_after,
                }
            )
            if self._capacity and fresh.prices is not None:
                self._input.settings = self._settings.model_copy(
                    update={"prices": fresh.prices, "cost_cap": fresh.cost_cap}
                )
        if fresh.samples_ramp is not None and fresh.samples_ramp != self._settings.samples_ramp:
            self._journal(
                "ramp range changed", previous=self._settings.samples_ramp, now=fresh.samples_ramp
            )
            self._input.settings = self._settings.model_copy(
                update={"samples_ramp": fresh.samples_ramp}
            )

        changes: list[SetpointChange] = []
        choice = self._settings.capacity_backend
        reservation = policy.reservation_budget(state, choice) if self._capacity else None
        budget = _smaller(state.sandbox_budget, reservation)
        wanted: dict[str, int] = {}  # setpoints the reservation kept from climbing
        for task in policy.open_tasks(state):
            seen = observation.tasks.get(task.spec.identifier)
            reading = seen.ramp if seen is not None else None
            window = None
            if reading is not None and task.ramp_baseline is not None:
                if task.ramp_baseline.worker_id == reading.worker_id:
                    window = ramp.window_between(
                        task.ramp_baseline.counters,
                        reading.counters,
                        in_flight=reading.in_flight,
                        setpoint=task.max_samples,
                        connection_limit=reading.connection_limit,
                    )
            if reading is not None:
                task.ramp_baseline = reading
            move = ramp.decide(
                setpoint=task.max_samples,
                window=window,
                ramp=self._settings.samples_ramp,
                planned_samples=task.spec.planned_samples,
                pushback_streak=task.pushback_streak,
                hold=state.ramp_hold,
                pinned=task.pinned,
            )
            if task.spec.sandbox:
                desired = move
                move = ramp.clamp_to_budget(move, policy.sandboxed_setpoints(state, task), budget)
                if move.setpoint < desired.setpoint and budget == reservation:
                    wanted[task.spec.identifier] = desired.setpoint
                if move.kind == "none" and move.reason.startswith("sandbox budget"):
                    if not task.budget_clamped:
                        self._journal(
                            "budget clamp",
                            task=task.spec.name,
                            setpoint=task.max_samples,
                            budget=budget,
                        )
                    task.budget_clamped = True
                else:
                    task.budget_clamped = False
            task.pushback_streak = move.pushback_streak
            if move.kind != "none":
                task.max_samples = move.setpoint
                self._journal(
                    f"ramp {move.kind}",
                    task=task.spec.name,
                    previous=move.previous,
                    setpoint=move.setpoint,
                    connections=move.connections,
                    reason=move.reason,
                )
            live = (
                reading is not None and task.phase == "running" and task.worker_id in state.workers
            )
            if live and (move.kind != "none" or reading.setpoint != task.max_samples):
                adaptive = reading.connection_limit is not None
                changes.append(
                    SetpointChange(
                        socket=state.workers[task.worker_id].socket,
                        task_id=reading.task_id,
                        max_samples=task.max_samples,
                        max_connections=move.connections if adaptive else None,
                        reason=f"ramp {move.kind}: {move.reason}"
                        if move.kind != "none"
                        else "setpoint",
                    )
                )
        if changes:
            problems = await self._activity(
                Activity.APPLY_SETPOINTS, SetpointRequest(changes=changes), result_type=list[str]
            )
            if problems:
                self._journal("setpoint not applied", problems=problems)
        if self._capacity and state.capacity.admitted:
            await self._resize_reservation(wanted)

    async def _resize_reservation(self, wanted: dict[str, int]) -> None:
        """The mid-run door: a climb the reservation held back asks the ledger for more; a
        cut gives the difference back at once (the queue's head may fit in it)."""
        state = self._state
        if wanted:
            await self._admit("escalation", wanted)
            return
        _, now_needs = policy.run_footprint(state, self._settings.capacity_backend)
        held = state.capacity.held
        if not now_needs.empty and any(
            now_needs.resources.get(k, 0.0) < v for k, v in held.items()
        ):
            await self._release(now_needs, "ramped down")
            self._journal("capacity returned", held=state.capacity.held)

    async def _spawn(self, group: list[Any]) -> list[str]:
        assert self._input is not None
        state = self._state
        state.worker_counter += 1
        worker_id = f"w{state.worker_counter:04d}"
        names = [t.spec.name for t in group]
        self._journal("spawning", worker=worker_id, tasks=names)
        request = SpawnRequest(
            workspace=self._input.workspace,
            definition=self._input.definition,
            worker_id=worker_id,
            eval_set_id=workflow.info().workflow_id,
            log_dir=state.log_dir,
            max_samples=max(t.max_samples for t in group),
            tasks=[
                SelectedTask(
                    identifier=t.spec.identifier,
                    registry_name=t.spec.registry_name,
                    args_hash=t.spec.args_hash,
                    resume=t.log if t.log and t.log_status != "success" else None,
                )
                for t in group
            ],
        )
        worker: WorkerProcess = await self._activity(
            Activity.SPAWN_WORKER, request, result_type=WorkerProcess
        )
        state.workers[worker_id] = worker
        for task in group:
            task.phase, task.worker_id = "running", worker_id
            task.attempts += 1
            task.completed_at_spawn = task.progress.completed
        self._journal(
            "spawned",
            worker=worker_id,
            tasks=names,
            pid=worker.pid,
            socket=worker.socket,
            output=worker.output,
        )
        return names

    # ---------------------------------------------------------------- capacity
    def _queued(self) -> bool:
        return self._state.capacity.position is not None and not self._state.capacity.admitted

    def _needs_admission(self) -> bool:
        """Pending work the run holds no capacity for (a rerun after it finished, say)."""
        state = self._state
        if state.capacity.admitted or self._queued() or state.paused:
            return False
        _, wanted = policy.run_footprint(state, self._settings.capacity_backend)
        return not wanted.empty and any(t.phase == "pending" for t in state.tasks)

    async def _admit(self, door: Door, wanted: dict[str, int] | None = None) -> None:
        """Ask the domain's ledger before anything spawns: reserved, or queued in order."""
        assert self._input is not None
        state, cap = self._state, self._state.capacity
        backend, footprint = policy.run_footprint(state, self._settings.capacity_backend, wanted)
        cap.backend = backend
        if footprint.empty:
            return  # no sandboxes (or the in-process kind): unbounded, nothing to ask
        probe = ProbeRequest(
            backend=backend,
            workspace=self._input.workspace,
            namespace=self._settings.kubernetes_namespace,
        )
        outcome: AdmissionOutcome = await self._activity(
            Activity.REQUEST_ADMISSION,
            AdmissionCall(
                probe=probe,
                admit=AdmitRequest(
                    run_id=workflow.info().workflow_id,
                    workspace=self._input.workspace,
                    footprint=footprint,
                    door=door,
                ),
            ),
            result_type=AdmissionOutcome,
        )
        cap.domain_id, cap.probe = outcome.domain_id, probe
        reading = outcome.reading
        if reading is not None and reading.source != cap.bound_source:
            cap.bound_source = reading.source
            self._journal(
                "capacity bound",
                domain=outcome.domain_id,
                limits=reading.limits,
                source=reading.source,
                problem=reading.problem,
            )
        admission = outcome.admission
        if door == "escalation":
            if admission.granted:
                cap.held, cap.footprint, cap.escalation_refused = admission.resources, footprint, ""
                self._journal("capacity escalated", held=admission.resources)
            elif admission.reason != cap.escalation_refused:
                cap.escalation_refused = admission.reason
                self._journal("escalation refused", reason=admission.reason, held=cap.held)
            return
        cap.footprint = footprint
        if admission.granted:
            self._granted(admission, door)
            return
        cap.position, cap.reason = admission.position, admission.reason
        cap.queued_at = cap.queued_at or workflow.now()
        state.phase = "queued"
        if outcome.event is not None:
            self._journal(
                "quota exceeded", **{k: v for k, v in outcome.event.items() if k != "event"}
            )
        self._journal(
            "queued",
            door=door,
            position=admission.position,
            reason=admission.reason,
            footprint=footprint.resources,
        )
        await self._write_workspace()
        self._upsert_visibility()

    def _granted(self, admission: Admission, how: str) -> None:
        state, cap = self._state, self._state.capacity
        waited = (workflow.now() - cap.queued_at).total_seconds() if cap.queued_at else 0.0
        cap.admitted, cap.held, cap.admitted_at = True, dict(admission.resources), workflow.now()
        state.cost.held_since = workflow.now()
        cap.position, cap.reason, cap.queued_at = None, "", None
        cut = policy.fit_to_grant(state, self._settings.capacity_backend)
        self._journal(
            "admitted",
            how=how,
            held=admission.resources,
            waited_s=round(waited, 3),
            setpoints_cut=cut,
        )
        if state.phase == "queued":
            state.phase = "running"

    async def _release(self, keep: Footprint | None, reason: str) -> None:
        """Give capacity back to the ledger (all of it, or down to `keep`); it pumps at once."""
        cap = self._state.capacity
        if cap.domain_id is None:
            return
        self._account_capacity()
        release = Release(run_id=workflow.info().workflow_id, footprint=keep, reason=reason)
        try:
            await workflow.get_external_workflow_handle(cap.domain_id).signal(
                Signal.RELEASE if keep is not None else Signal.WITHDRAW, release
            )
        except Exception as err:  # noqa: BLE001 - a ledger that is gone holds nothing of ours
            self._journal("capacity release failed", problem=str(err))
        if keep is None:
            cap.admitted, cap.held, cap.position = False, {}, None
            self._state.cost.held_since = None
            self._journal("capacity released", reason=reason)
        else:
            cap.held = {k: min(v, keep.resources.get(k, 0.0)) for k, v in cap.held.items()}

    def _account_capacity(self) -> None:
        """Reserved capacity-time: the memory the reservation holds x how long, in Gi·minutes."""
        state = self._state
        if state.cost.held_since is None:
            return
        seconds = (workflow.now() - state.cost.held_since).total_seconds()
        state.cost.gi_minutes += cost.gi_minutes(policy.held_memory_gi(state), seconds)
        state.cost.held_since = workflow.now()

    # ---------------------------------------------------------------- cost cap
    def _check_cost_cap(self, summary: TendSummary) -> None:
        """Crossing the cap pauses the run and asks the operator: continue or cancel."""
        state, cap = self._state, self._settings.cost_cap
        if cap is None or state.cost.cap_paused or state.cost.cap_waived == cap.model_dump_json():
            return
        crossed = cost.cap_crossed(policy.llm_cost(state), self._settings.prices, cap)
        if crossed is None:
            return
        state.cost.cap_paused = True
        if not state.paused:
            state.paused, state.pause_reason = True, crossed
        self._journal("cost cap crossed", problem=crossed, cap=cap.model_dump())
        self._absorb(
            [
                Anomaly(
                    kind="cost_cap",
                    task="",
                    task_name="the run",
                    uuid=f"cap-{state.journal_seq}",
                    detail=crossed,
                )
            ],
            summary,
        )

    def _rule_cost_cap(self, request: RuleRequest) -> None:
        state, cap = self._state, self._settings.cost_cap
        state.cost.cap_paused = False
        if request.verdict == "continue":
            state.cost.cap_waived = cap.model_dump_json() if cap else None
            state.paused, state.pause_reason = False, None
            self._journal("resumed", by=request.by, reason="continue past the cost cap")
        elif self._cancel is None:
            self._cancel = CancelRequest(
                reason=f"cost cap: {request.reason or 'cancelled by the operator'}", by=request.by
            )

    async def _cancel_run(self) -> None:
        assert self._cancel is not None
        state = self._state
        state.phase, state.cancel_reason = "cancelling", self._cancel.reason
        self._upsert_visibility()
        result: StopResult = await self._activity(
            Activity.STOP_WORKERS,
            StopRequest(workers=list(state.workers.values()), grace_seconds=30.0),
            result_type=StopResult,
            timeout=timedelta(minutes=3),
            heartbeat=timedelta(seconds=15),
        )
        state.workers.clear()
        for task in state.tasks:
            if task.phase in ("pending", "running"):
                task.phase, task.worker_id = "pending", None
        if self._capacity and state.capacity.domain_id is not None:
            # Recorded cancelled whether or not the workers stopped: capacity goes back, and
            # sandbox containers the workers left behind go with it.
            await self._release(None, "cancelled")
            if state.capacity.backend == "docker":
                reaped = await self._activity(
                    Activity.REAP_SANDBOXES,
                    [self._input.workspace],
                    result_type=list[str],
                    attempts=3,
                )
                if reaped:
                    self._journal("sandboxes reaped", containers=reaped)
        state.phase, state.finished_at, state.next_tend_at = "cancelled", workflow.now(), None
        self._journal(
            "cancelled",
            reason=self._cancel.reason,
            by=self._cancel.by,
            stopped=result.stopped_gracefully,
            killed=result.killed,
        )
        if self._decisions:
            state.outbox.append(
                Notice(
                    kind="cancelled",
                    text=f"Cancelled by {self._cancel.by or 'someone'}: "
                    f"{self._cancel.reason or 'no reason given'} "
                    f"({state.samples_done}/{state.samples_total} samples).",
                )
            )
            await self._flush_outbox()
        await self._write_workspace()
        self._upsert_visibility()

    # ---------------------------------------------------------------- helpers
    async def _activity(
        self,
        name: str,
        arg: Any,
        *,
        result_type: Any = None,
        timeout: timedelta | None = None,
        heartbeat: timedelta | None = None,
        attempts: int | None = None,
    ) -> Any:
        """Run an activity on the host queue. Without `attempts` it is retried until it
        succeeds (the run waits for its host); with it, the caller handles the failure."""
        assert self._input is not None
        retry = (
            _RETRY
            if attempts is None
            else RetryPolicy(initial_interval=timedelta(seconds=1), maximum_attempts=attempts)
        )
        return await workflow.execute_activity(
            name,
            arg,
            task_queue=self._input.host_queue,
            result_type=result_type,
            # Short: if the Steward worker dies mid-activity, the retry should come soon.
            start_to_close_timeout=timeout or timedelta(seconds=60),
            heartbeat_timeout=heartbeat,
            retry_policy=retry,
        )

    def _journal(self, event: str, **data: Any) -> None:
        self._state.journal_seq += 1
        self._state.pending_journal.append(
            JournalEvent(seq=self._state.journal_seq, at=workflow.now(), event=event, data=data)
        )

    def _status(self) -> RunStatus:
        assert self._input is not None
        info = workflow.info()
        return RunStatus(
            workflow_id=info.workflow_id,
            run_id=info.run_id,
            workspace=self._input.workspace,
            state=self._state.model_copy(update={"pending_journal": []}),
            tend_interval=self._settings.tend_interval,
            web_ui=self._input.web_ui,
        )

    async def _write_workspace(self) -> None:
        assert self._input is not None
        pending = list(self._state.pending_journal)
        await self._activity(
            Activity.WRITE_WORKSPACE,
            WorkspaceWrite(workspace=self._input.workspace, status=self._status(), journal=pending),
        )
        # Only what was written leaves the queue; the activity skips seqs already on disk.
        written = {e.seq for e in pending}
        self._state.pending_journal = [
            e for e in self._state.pending_journal if e.seq not in written
        ]

    def _upsert_visibility(self) -> None:
        state = self._state
        workflow.upsert_search_attributes(
            [
                SearchKey.STATE.value_set(visible_state(state)),
                SearchKey.SAMPLES_DONE.value_set(state.samples_done),
                SearchKey.SAMPLES_TOTAL.value_set(state.samples_total),
            ]
        )


def _mark_complete(task: TaskState, log: str) -> None:
    """A task answered by an existing log (from the store, or restored from the archive)."""
    task.phase, task.log, task.log_status, task.worker_id = "complete", log, "success", None
    planned = task.spec.planned_samples
    task.progress = Progress(total=planned, completed=planned)


def _archive_of(log_dir: str) -> str:
    """`logs-archive/` beside the log dir (as activities/workspace_files.archive_dir says)."""
    return log_dir.rstrip("/") + "-archive"


def _smaller(a: int | None, b: int | None) -> int | None:
    return b if a is None else a if b is None else min(a, b)


def _cause(err: ActivityError) -> str:
    cause = err.cause
    return str(cause.message if isinstance(cause, ApplicationError) else cause or err)
