"""Watching workers, pure: when a live worker is hung or lingering (`judge`), live progress in
`steward status` (`with_live_progress`), when a finished run needs no timer, the `hung_worker`
decision, which workers a ruled log edit waits for, and the watch options."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from pydantic import ValidationError

from steward.activities.workspace.options import OptionsError, load_options
from steward.workflows.activity_io import WatchRequest
from steward.workflows.contracts import (
    Notice,
    Progress,
    RunState,
    RunStatus,
    TaskSpec,
    TaskState,
    WatchLimits,
    WorkerProcess,
    WorkerPulse,
)
from steward.workflows.options import StewardOptions, live_options, run_settings
from steward.workflows.policy import decisions, rulings, triage_ledger, worker_watch
from steward.workflows.policy.decisions import Anomaly, StandingRules, Triage
from steward.workflows.policy.rulings import RuleRequest
from steward.workflows.policy.run_policy import settled_logs
from steward.workflows.policy.triage_ledger import OrderOutcome
from steward.workflows.policy.worker_watch import (
    judge,
    rulings_waiting,
    waiting_workers,
    with_live_progress,
)
from steward.workflows.run.eval_run_state import unsupervised, waits_for_commands

T0 = datetime(2026, 12, 2, 12, 0, 0, tzinfo=UTC)
LIMITS = WatchLimits(start_timeout=600, unresponsive_after=300, linger_after=60)
ALPHA = "evalset.py@alpha#1/steward/offline/aaa"
BETA = "evalset.py@beta#1/steward/offline/bbb"


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def worker(worker_id: str = "w-1", pid: int = 4242, tasks: tuple[str, ...] = (ALPHA,)):
    return WorkerProcess(
        worker_id=worker_id,
        tasks=list(tasks),
        pid=pid,
        create_time=1.0,
        socket=f"/tmp/no-such-{worker_id}.sock",
        output=f"/tmp/{worker_id}.log",
        started_at=T0,
    )


def pulse(worker_id: str = "w-1", when: datetime = T0, **fields) -> WorkerPulse:
    return WorkerPulse(worker_id=worker_id, pid=4242, at=when, **fields)


# ---------------------------------------------------------------- judge: hung
def test_a_silent_start_is_hung_after_start_timeout_and_not_before():
    assert judge(pulse(), worker(), LIMITS, at(599)) is None
    # unresponsive_after (300 s) is not the limit for a worker that never showed life
    assert judge(pulse(), worker(), LIMITS, at(301)) is None
    end = judge(pulse(), worker(), LIMITS, at(600))
    assert end is not None and end.kind == "hung" and end.worker_id == "w-1"
    assert end.since == T0 and end.at == at(600)
    assert "no log and no control socket 10m after spawn" in end.detail
    assert "w-1" in end.detail and "4242" in end.detail


def test_a_worker_whose_socket_answered_is_not_a_start_hang():
    limits = WatchLimits(start_timeout=60, unresponsive_after=300, linger_after=60)
    answered = pulse(answered_at=at(50))
    # 70 s after spawn is past start_timeout, but the socket answered 20 s ago
    assert judge(answered, worker(), limits, at(70)) is None
    assert judge(answered, worker(), limits, at(349)) is None
    end = judge(answered, worker(), limits, at(350))
    assert end is not None and end.kind == "hung" and end.since == at(50)
    assert "no control-socket answer and no log write for 5m" in end.detail
    assert "after spawn" not in end.detail


def test_unresponsive_after_that_long_of_silence():
    answered = pulse(answered_at=at(10))
    assert judge(answered, worker(), LIMITS, at(309)) is None
    end = judge(answered, worker(), LIMITS, at(310))
    assert end is not None and end.kind == "hung" and end.since == at(10)
    assert "for 5m while the process lives" in end.detail


def test_a_log_write_counts_as_life():
    # the socket answered long ago, the log was written since: silence counts from the write
    both = pulse(answered_at=at(10), logged_at=at(200))
    assert judge(both, worker(), LIMITS, at(400)) is None
    end = judge(both, worker(), LIMITS, at(500))
    assert end is not None and end.since == at(200)
    # a log written after spawn, with no socket ever: the worker started (unresponsive_after
    # applies, not start_timeout)
    logged = pulse(logged_at=at(100))
    end = judge(logged, worker(), LIMITS, at(400))
    assert end is not None and end.since == at(100) and "no control-socket answer" in end.detail


def test_a_log_older_than_the_worker_is_no_sign_of_start():
    old = pulse(logged_at=at(-100))  # a previous worker's log
    assert judge(old, worker(), LIMITS, at(400)) is None  # not judged by unresponsive_after
    end = judge(old, worker(), LIMITS, at(600))
    assert end is not None and end.since == T0 and "after spawn" in end.detail


def test_a_reported_hang_is_reported_again_only_after_a_newer_sign_of_life():
    silent = pulse(answered_at=at(10))
    first = judge(silent, worker(), LIMITS, at(400))
    assert first is not None and first.since == at(10)
    assert judge(silent, worker(), LIMITS, at(400), hang_reported=first.since) is None
    assert judge(silent, worker(), LIMITS, at(100_000), hang_reported=first.since) is None
    # it recovered (the socket answered again): that is reported, so its decision closes
    recovered = pulse(answered_at=at(500))
    back = judge(recovered, worker(), LIMITS, at(510), hang_reported=first.since)
    assert back is not None and back.kind == "recovered" and back.since == at(500)
    assert back.detail == "worker w-1 (pid 4242): its control socket answers again"
    # the run watches on with no hang reported: silent anew, it is a new hang
    assert judge(recovered, worker(), LIMITS, at(700)) is None
    again = judge(recovered, worker(), LIMITS, at(800))
    assert again is not None and again.kind == "hung" and again.since == at(500)


def test_a_log_write_after_a_reported_hang_is_a_recovery():
    first = judge(pulse(answered_at=at(10)), worker(), LIMITS, at(400))
    assert first is not None
    written = pulse(answered_at=at(10), logged_at=at(450))
    back = judge(written, worker(), LIMITS, at(452), hang_reported=first.since)
    assert back is not None and back.kind == "recovered" and back.since == at(450)
    assert "its log is written again" in back.detail


def test_a_reported_start_hang_stays_reported():
    first = judge(pulse(), worker(), LIMITS, at(600))
    assert first is not None and first.since == T0
    assert judge(pulse(), worker(), LIMITS, at(50_000), hang_reported=first.since) is None


# ---------------------------------------------------------------- judge: complete, lingering
def test_complete_after_the_grace_once_and_not_before():
    done = pulse(answered_at=at(990), logged_at=at(1000), success_at=at(1000))
    grace = worker_watch.COMPLETE_GRACE_S
    assert judge(done, worker(), LIMITS, at(1000 + grace - 0.5)) is None  # exiting by itself
    end = judge(done, worker(), LIMITS, at(1000 + grace))
    assert end is not None and end.kind == "complete" and end.since == at(1000)
    assert "its tasks' logs are success; it has not exited yet" in end.detail
    assert "w-1" in end.detail and "4242" in end.detail
    late = judge(done, worker(), LIMITS, at(1059))
    assert late is not None and late.kind == "complete"  # until the run heard it
    assert judge(done, worker(), LIMITS, at(1059), complete_reported=True) is None


def test_lingering_after_linger_after_of_success_and_not_before():
    done = pulse(answered_at=at(990), logged_at=at(1000), success_at=at(1000))
    assert judge(done, worker(), LIMITS, at(1059), complete_reported=True) is None
    for reported in (True, False):  # lingering, whether or not the run heard of the finish
        end = judge(done, worker(), LIMITS, at(1060), complete_reported=reported)
        assert end is not None and end.kind == "lingering" and end.since == at(1000)
        assert "still alive 1m after" in end.detail and "4242" in end.detail


def test_a_lingering_candidate_is_never_called_hung():
    limits = WatchLimits(start_timeout=10, unresponsive_after=10, linger_after=100_000)
    # silent far longer than both hang limits, but its tasks' logs are success
    done = pulse(logged_at=at(5), success_at=at(5))
    never = pulse(success_at=at(5))  # even with no socket answer nor log write recorded
    for candidate in (done, never):
        assert judge(candidate, worker(), limits, at(50_000), complete_reported=True) is None
        end = judge(candidate, worker(), limits, at(50_000))
        assert end is not None and end.kind == "complete"


# ---------------------------------------------------------------- judge: connections
def _connections_request(pushback: bool = True, saturation: bool = True) -> WatchRequest:
    return WatchRequest(
        worker=worker(), log_dir="/tmp", report_pushback=pushback, report_saturated=saturation
    )


def test_new_rate_limit_retries_are_reported_once_the_watch_has_run_a_moment():
    request, beat = _connections_request(), pulse(rate_limit_retries=7)
    assert worker_watch.judge_connections(beat, request, 7, T0, at(60)) is None  # none new
    assert worker_watch.judge_connections(beat, request, 4, T0, at(2)) is None  # too soon
    end = worker_watch.judge_connections(beat, request, 4, T0, at(5))
    assert end is not None and end.kind == "pushback" and end.rate_limit_retries == 7
    assert "3 rate-limit retries" in end.detail
    quiet = _connections_request(pushback=False, saturation=False)
    assert worker_watch.judge_connections(beat, quiet, 4, T0, at(60)) is None
    unknown = pulse(rate_limit_retries=None)
    assert worker_watch.judge_connections(unknown, request, 4, T0, at(60)) is None


def test_saturation_held_is_reported_only_when_asked_for_and_long_enough():
    beat = pulse(rate_limit_retries=3, saturated_since=at(0))
    assert worker_watch.judge_connections(beat, _connections_request(), 3, T0, at(9)) is None
    end = worker_watch.judge_connections(beat, _connections_request(), 3, T0, at(10))
    assert end is not None and end.kind == "saturated" and end.since == at(0)
    # A watch started later counts its own time (the run's retune had a moment to land).
    assert worker_watch.judge_connections(beat, _connections_request(), 3, at(5), at(10)) is None
    asked_not = _connections_request(saturation=False)
    assert worker_watch.judge_connections(beat, asked_not, 3, T0, at(60)) is None


@pytest.mark.parametrize(
    ("limit", "ceiling", "in_flight", "new_retries", "expected"),
    [
        (20, 20, 45, False, True),  # at its ceiling, samples wait for connections
        (19, 20, 45, False, True),  # within 5 % of it
        (15, 20, 45, False, False),  # its controller is below its ceiling: it can climb
        (20, 20, 20, False, False),  # nothing waits
        (20, 20, 45, True, False),  # pushed back: not clean
        (None, None, 45, False, False),  # not adaptive
    ],
)
def test_saturated_means_at_the_ceiling_clean_with_samples_waiting(
    limit, ceiling, in_flight, new_retries, expected
):
    beat = pulse(connection_limit=limit, connection_ceiling=ceiling)
    assert worker_watch.saturated(beat, in_flight, new_retries) is expected


# ---------------------------------------------------------------- live progress
def task(name: str, identifier: str, phase: str, worker_id: str | None, completed: int = 1):
    return TaskState(
        spec=TaskSpec(
            name=name, model="steward/offline", identifier=identifier, samples=5, epochs=2
        ),
        phase=phase,
        worker_id=worker_id,
        progress=Progress(total=10, completed=completed),
        log=f"/logs/{name}.eval",
    )


def status(last_tend_at: datetime | None = T0) -> RunStatus:
    state = RunState(
        phase="running",
        tasks=[
            task("alpha", ALPHA, "running", "w-1"),
            task("beta", BETA, "running", "w-2"),
            task("gamma", "gamma-id", "complete", None, completed=10),
            task("delta", "delta-id", "running", "w-9"),  # its worker is no longer in the state
        ],
        workers={"w-1": worker("w-1"), "w-2": worker("w-2", tasks=(BETA,))},
        last_tend_at=last_tend_at,
    )
    return RunStatus(workflow_id="run-1", workspace="/ws", state=state, tend_interval=600)


def progress_of(result: RunStatus, identifier: str) -> Progress:
    return result.state.task(identifier).progress


def test_a_pulse_newer_than_the_last_tend_replaces_a_running_tasks_progress():
    before = status()
    fresh = pulse("w-1", at(30), progress={ALPHA: Progress(total=10, completed=7, in_flight=2)})
    result = with_live_progress(before, [fresh], at(40))
    assert progress_of(result, ALPHA) == Progress(total=10, completed=7, in_flight=2)
    assert result.progress_at[ALPHA] == at(30)
    assert result.live == [fresh] and result.read_at == at(40)
    assert progress_of(before, ALPHA).completed == 1  # the status read is not changed


def test_a_pulse_older_than_the_last_tend_does_not():
    stale = pulse("w-2", at(-30), progress={BETA: Progress(total=10, completed=9)})
    result = with_live_progress(status(), [stale], at(40))
    assert progress_of(result, BETA).completed == 1
    assert result.progress_at[BETA] == T0
    assert result.live == [stale]


def test_a_pulse_of_a_worker_not_in_the_state_is_ignored():
    fresh = pulse("w-1", at(30), progress={ALPHA: Progress(total=10, completed=7)})
    ghost = pulse(
        "w-9",
        at(35),
        progress={ALPHA: Progress(total=10, completed=2), "delta-id": Progress(completed=8)},
    )
    result = with_live_progress(status(), [fresh, ghost], at(40))
    assert progress_of(result, ALPHA).completed == 7  # w-1's, not the unknown worker's
    assert progress_of(result, "delta-id").completed == 1
    assert result.progress_at["delta-id"] == T0


def test_a_pulse_for_a_task_that_is_not_running_is_ignored():
    late = pulse("w-1", at(30), progress={"gamma-id": Progress(total=10, completed=3)})
    result = with_live_progress(status(), [late], at(40))
    assert progress_of(result, "gamma-id").completed == 10
    assert result.progress_at["gamma-id"] == T0


def test_total_falls_back_to_the_planned_samples():
    from_log = pulse("w-1", at(30), progress={ALPHA: Progress(total=0, completed=4)})
    result = with_live_progress(status(), [from_log], at(40))
    assert progress_of(result, ALPHA) == Progress(total=10, completed=4)  # 5 samples x 2 epochs
    told = pulse("w-1", at(30), progress={ALPHA: Progress(total=7, completed=4)})
    assert progress_of(with_live_progress(status(), [told], at(40)), ALPHA).total == 7


def test_progress_at_is_the_pulses_or_the_last_tends():
    fresh = pulse("w-1", at(30), progress={ALPHA: Progress(total=10, completed=7)})
    result = with_live_progress(status(), [fresh], at(40))
    assert result.progress_at == {ALPHA: at(30), BETA: T0, "gamma-id": T0, "delta-id": T0}
    never_tended = with_live_progress(status(last_tend_at=None), [fresh], at(40))
    assert never_tended.progress_at == {ALPHA: at(30)}
    assert progress_of(never_tended, ALPHA).completed == 7


# ---------------------------------------------------------------- a finished run's timer
def finished_state() -> RunState:
    done = task("alpha", ALPHA, "complete", None, completed=10)
    return RunState(
        phase="finished",
        tasks=[done],
        scanned_logs=[done.log],
        last_tend_at=T0,
        finished_at=T0,
    )


def _ruled_exclusion(state: RunState) -> None:
    triage = state.triage
    decisions.absorb(triage, [sample_error(ALPHA)], StandingRules(), now=T0, tend=1)
    request = RuleRequest(decision_id=triage.decisions[0].id, verdict="exclude", by="norah")
    assert rulings.rule_problem(triage, request, StandingRules()) is None
    rulings.apply_rule(triage, request, StandingRules(), now=T0, tend=1)


def test_a_clean_finished_run_waits_for_commands():
    assert waits_for_commands(finished_state())


@pytest.mark.parametrize(
    "change",
    [
        pytest.param(lambda s: setattr(s, "phase", "running"), id="not-finished"),
        pytest.param(lambda s: s.workers.update({"w-1": worker()}), id="live-worker"),
        pytest.param(
            lambda s: s.outbox.append(Notice(kind="finished", text="Finished")),
            id="undelivered-notice",
        ),
        pytest.param(lambda s: s.scanned_logs.clear(), id="unscanned-log"),
        pytest.param(_ruled_exclusion, id="ruling-to-carry-out"),
    ],
)
def test_a_finished_run_with_something_to_retry_keeps_its_timer(change):
    state = finished_state()
    change(state)
    assert not waits_for_commands(state)


def test_an_agent_item_not_yet_routed_keeps_the_timer():
    # e.g. a scan finding raised by the last tend's scan, after the `finished` notice was sent
    state = finished_state()
    finding = Anomaly(
        kind="scan_finding",
        task=ALPHA,
        task_name="alpha",
        sample_id="1",
        epoch=1,
        uuid="s1",
        scanner="scoring_integrity",
        detail="flagged",
    )
    outcome = decisions.absorb(state.triage, [finding], StandingRules(), now=T0, tend=3)
    (decision,) = [state.triage.find_decision(i) for i in outcome.raised]
    assert decision.owner == "agent" and not decision.routed
    assert not waits_for_commands(state)


def test_a_run_waiting_for_commands_is_not_unsupervised():
    state = finished_state()
    state.next_tend_at = None
    assert unsupervised(state, 600, at(86_400)) is None
    state.next_tend_at = at(600)
    warning = unsupervised(state, 600, at(86_400))
    assert warning is not None and warning.startswith("unsupervised: no tend for 86400 s")


# ---------------------------------------------------------------- hung_worker decisions
def hung(since: datetime, worker_id: str = "w-1") -> Anomaly:
    return Anomaly(
        kind="hung_worker",
        task=ALPHA,
        task_name="alpha",
        uuid=f"{worker_id}@{since.isoformat()}",
        worker=worker_id,
        detail=f"worker {worker_id} (pid 4242): no log and no control socket 10m after spawn",
    )


def sample_error(identifier: str) -> Anomaly:
    return Anomaly(
        kind="sample_error",
        task=identifier,
        task_name="alpha",
        sample_id="1",
        epoch=1,
        uuid="u1",
        error_type="OfflineSampleFailure",
        frame="worker/offline_model.py:generate",
        detail="boom",
    )


def absorb(triage: Triage, anomalies: list[Anomaly], rules: StandingRules | None = None, tend=1):
    return decisions.absorb(triage, anomalies, rules or StandingRules(), now=T0, tend=tend)


def rule(triage: Triage, decision_id: str, verdict: str, role="operator"):
    request = RuleRequest(decision_id=decision_id, verdict=verdict, role=role, by="norah")
    problem = rulings.rule_problem(triage, request, StandingRules())
    if problem:
        return problem
    return rulings.apply_rule(triage, request, StandingRules(), now=T0, tend=1)


def test_a_hung_worker_raises_an_operator_decision():
    triage = Triage()
    outcome = absorb(triage, [hung(T0)])
    (cls,) = triage.classes
    (decision,) = triage.decisions
    assert cls.kind == "hung_worker" and outcome.raised == [decision.id]
    assert decision.kind == "hung_worker" and decision.owner == "operator"
    assert decision.verdicts == ["restart", "wait"]
    assert "alpha" in decision.question and "after spawn" in decision.question
    problem = rule(triage, decision.id, "restart", role="agent")
    assert isinstance(problem, str) and "operator's to rule" in problem
    assert isinstance(rule(triage, decision.id, "rerun"), str)  # not one of its verdicts


@pytest.mark.parametrize(
    "preauthorized",
    [{"*": "rerun"}, {"*": "restart"}, {"hung_worker:*": "wait", "*alpha*": "restart"}],
)
def test_standing_rules_never_rule_a_hung_worker(preauthorized):
    rules = StandingRules(preauthorized=preauthorized)
    triage = Triage()
    outcome = absorb(triage, [hung(T0)], rules)
    assert outcome.standing == [] and len(outcome.raised) == 1
    assert triage.classes[0].ruling is None and triage.classes[0].state == "open"


def test_the_same_rule_does_rule_a_sample_error():
    # the control for the test above: the rule itself is effective
    triage = Triage()
    outcome = absorb(triage, [sample_error(ALPHA)], StandingRules(preauthorized={"*": "rerun"}))
    assert outcome.standing == [triage.classes[0].id] and outcome.raised == []


@pytest.mark.parametrize("verdict", ["restart", "wait"])
def test_a_new_hang_after_a_ruling_is_asked_again(verdict):
    triage = Triage()
    absorb(triage, [hung(T0)])
    result = rule(triage, "d-1", verdict)
    assert not isinstance(result, str) and result.effect == "ruled"
    cls = triage.classes[0]
    assert cls.state == "resolved" and cls.ruling.verdict == verdict
    assert not decisions.needs_effect("hung_worker", verdict)
    assert rulings.pending_actions(triage, {ALPHA: "/logs/alpha.eval"}) == []
    # the same hang read again changes nothing
    again = absorb(triage, [hung(T0)], tend=2)
    assert again.raised == [] and cls.state == "resolved" and len(triage.decisions) == 1
    # a new hang (a newer `since`, or the restarted worker) re-opens the class
    anew = absorb(triage, [hung(at(900), "w-2")], tend=3)
    assert cls.state == "open" and cls.ruling is None and len(cls.instances) == 2
    assert anew.raised == ["d-2"] and triage.find_decision("d-2").owner == "operator"
    assert [d.id for d in triage.open_decisions()] == ["d-2"]


# ---------------------------------------------------------------- what signoff waits for
def lingering_state() -> RunState:
    """alpha is complete but its worker still lives; beta is complete, its worker gone."""
    alpha = task("alpha", ALPHA, "complete", "w-1", completed=10)
    beta = task("beta", BETA, "complete", "w-2", completed=10)
    state = RunState(phase="finished", tasks=[alpha, beta], workers={"w-1": worker()})
    _ruled_exclusion(state)
    return state


def test_signoff_blockers_name_the_worker_a_ruling_waits_for():
    state = lingering_state()
    waiting = rulings_waiting(state)
    assert waiting == ["worker w-1 of alpha (pid 4242, alive since 2026-12-02 12:00:00 UTC)"]
    logs = settled_logs(state)
    assert ALPHA not in logs  # a live worker may still write it: the edit waits
    blockers = rulings.signoff_blockers(
        state.triage,
        open_tasks=[],
        unscanned=False,
        scan_problem=None,
        settled_logs=logs,
        waiting_for=waiting,
    )
    cls_id = state.triage.classes[0].id
    assert blockers == [
        f"rulings not yet applied: {cls_id} (waiting for worker w-1 of alpha "
        "(pid 4242, alive since 2026-12-02 12:00:00 UTC) to exit)"
    ]


def test_no_worker_is_named_once_it_is_gone_or_the_ruling_is_applied():
    state = lingering_state()
    state.workers.clear()
    assert rulings_waiting(state) == []
    (order,) = triage_ledger.ledger_orders(state.triage, settled_logs(state))
    assert settled_logs(state)[ALPHA] == "/logs/alpha.eval"
    blockers = rulings.signoff_blockers(
        state.triage,
        open_tasks=[],
        unscanned=False,
        scan_problem=None,
        settled_logs=settled_logs(state),
        waiting_for=rulings_waiting(state),
    )
    assert len(blockers) == 1 and "waiting for" not in blockers[0]
    done = OrderOutcome(class_id=order.class_id, verdict=order.verdict, done=1)
    triage_ledger.take_outcomes(state.triage, [done])
    state.workers["w-1"] = worker()  # even with the worker back, nothing waits
    assert rulings_waiting(state) == []


def test_an_unruled_or_dismissed_class_waits_for_no_worker():
    state = lingering_state()
    state.triage = Triage()
    absorb(state.triage, [sample_error(ALPHA)])
    assert rulings_waiting(state) == []  # open, not ruled
    rule(state.triage, "d-1", "dismiss")
    assert state.triage.classes[0].state == "accepted" and rulings_waiting(state) == []


def test_waiting_workers_names_only_live_workers_of_the_identifiers():
    state = lingering_state()
    state.workers["w-2"] = worker("w-2", pid=99, tasks=(BETA,))
    assert waiting_workers(state, {BETA}) == [
        "worker w-2 of beta (pid 99, alive since 2026-12-02 12:00:00 UTC)"
    ]
    assert waiting_workers(state, {"nothing"}) == []


# ---------------------------------------------------------------- options
@pytest.fixture
def clean_env(monkeypatch):
    import os

    for key in [k for k in os.environ if k.startswith("STEWARD_")]:
        monkeypatch.delenv(key)
    return monkeypatch


def test_watch_option_defaults():
    options = StewardOptions()
    assert (options.start_timeout, options.unresponsive_after, options.linger_after) == (
        600,
        300,
        60,
    )
    assert run_settings(options).watch == WatchLimits()


@pytest.mark.parametrize("option", ["start_timeout", "unresponsive_after", "linger_after"])
def test_a_watch_duration_without_a_unit_is_refused(tmp_path: Path, clean_env, option):
    (tmp_path / "_steward.yaml").write_text(f"{option}: 10\n")
    with pytest.raises(OptionsError) as refused:
        load_options(tmp_path)
    message = str(refused.value)
    assert f"Option '{option}'" in message and "_steward.yaml" in message
    assert "a duration with a unit" in message
    with pytest.raises(ValidationError, match=option):
        StewardOptions(**{option: 10})


def test_a_watch_duration_from_the_environment_needs_a_unit_too(tmp_path: Path, clean_env):
    clean_env.setenv("STEWARD_LINGER_AFTER", "10")
    with pytest.raises(OptionsError, match="linger_after"):
        load_options(tmp_path)
    clean_env.setenv("STEWARD_LINGER_AFTER", "90s")
    assert load_options(tmp_path).linger_after == 90


def test_watch_durations_with_units_reach_the_run(tmp_path: Path, clean_env):
    (tmp_path / "_steward.yaml").write_text(
        "start_timeout: 30s\nunresponsive_after: 2m\nlinger_after: 5s\n"
    )
    options = load_options(tmp_path)
    expected = WatchLimits(start_timeout=30, unresponsive_after=120, linger_after=5)
    assert run_settings(options).watch == expected
    assert live_options(options, None).watch == expected
