"""A stuck provider, pure (workflows/policy/provider_health.py, provider_stuck.py): a worker
whose provider answers nothing but retries for provider_stuck_after is reported once, with the
model; an answer resets the clock and lapses its question; one outage is one question."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from steward.workflows.activity_io import WatchRequest
from steward.workflows.contracts import WatchLimits, WorkerProcess, WorkerPulse
from steward.workflows.policy import decisions, lapsed, provider_stuck, rulings
from steward.workflows.policy.decisions import StandingRules, Triage
from steward.workflows.policy.provider_health import ProviderHealth, failing_for, look

T0 = datetime(2026, 12, 5, 12, 0, 0, tzinfo=UTC)
MODEL = "openai-api/sim/echo"
CHAT = "evalset.py@chat#1/openai-api/sim/echo/aaa"
MATH = "evalset.py@math#1/openai-api/sim/echo/bbb"


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def reading(before, seconds, answers=0, retries=0, waiting=0, completed=0) -> ProviderHealth:
    return look(
        before,
        models=[MODEL],
        answers=answers,
        retries=retries,
        waiting=waiting,
        completed=completed,
        now=at(seconds),
    )


def request(window: float | bool = 60, reported: datetime | None = None) -> WatchRequest:
    worker = WorkerProcess(
        worker_id="w0001",
        tasks=[CHAT],
        pid=4242,
        create_time=0.0,
        socket="s",
        output="o",
        started_at=T0,
    )
    return WatchRequest(
        worker=worker,
        log_dir="logs",
        limits=WatchLimits(provider_stuck_after=window),
        provider_stuck_reported=reported,
    )


def pulse(health: ProviderHealth) -> WorkerPulse:
    return WorkerPulse(worker_id="w0001", pid=4242, at=T0, provider=health)


def test_failing_starts_at_the_first_retry_without_an_answer_and_an_answer_resets_it():
    health = reading(None, 0, answers=5)  # a first look: nothing waiting, nothing failing
    assert health.failing_since is None
    health = reading(health, 3, answers=6, retries=1)  # a retry, but answers came too
    assert health.failing_since is None and health.answered_at == at(3)
    health = reading(health, 6, answers=6, retries=4)
    assert health.failing_since == at(6) and health.failing_retries == 1
    health = reading(health, 9, answers=6, retries=4, waiting=3)  # backing off: still failing
    assert health.failing_since == at(6) and health.failed_at == at(9)
    assert failing_for(health, at(9), recent=60) == 3
    health = reading(health, 12, answers=7, retries=4)
    assert health.failing_since is None


def test_a_first_look_sees_failing_only_in_a_retry_waiting_now():
    assert reading(None, 0, retries=30).failing_since is None  # old retries, maybe answered
    waiting = reading(None, 0, retries=30, waiting=2)
    assert waiting.failing_since == at(0) and waiting.failing_retries == 30


def test_stale_failure_is_not_stuck():
    health = reading(reading(None, 0, answers=1), 5, answers=1, retries=1)
    health = reading(health, 200, answers=1, retries=1)  # no retry since: a long tool call?
    assert failing_for(health, at(200), recent=60) is None


def test_stuck_after_the_window_with_the_model_and_retries_and_not_before():
    health = reading(reading(None, 0, answers=2), 2, answers=2, retries=3, waiting=3)
    for seconds in (30, 55):
        health = reading(health, seconds, answers=2, retries=3 + seconds, waiting=3)
        assert provider_stuck.judge_provider(pulse(health), request(), at(seconds)) is None
    health = reading(health, 63, answers=2, retries=70, waiting=3)
    end = provider_stuck.judge_provider(pulse(health), request(), at(63))
    assert end is not None and end.kind == "provider_stuck" and end.model == MODEL
    assert end.since == at(2)
    assert end.detail == "no answer for 61s, 70 retries (worker w0001, pid 4242)"
    assert provider_stuck.judge_provider(pulse(health), request(False), at(63)) is None


def test_reported_once_then_answered_when_it_answers_again():
    health = reading(reading(None, 0), 2, retries=3, waiting=1)
    health = reading(health, 70, retries=40, waiting=1)
    reported = request(reported=at(2))
    assert provider_stuck.judge_provider(pulse(health), reported, at(70)) is None
    health = reading(health, 75, answers=1, retries=40)
    end = provider_stuck.judge_provider(pulse(health), reported, at(75))
    assert end is not None and end.kind == "provider_answered" and end.since == at(75)


def stuck(task: str, name: str, worker: str) -> decisions.Anomaly:
    health = reading(reading(reading(None, 0), 1, retries=9, waiting=1), 5, retries=12, waiting=1)
    end = provider_stuck.judge_provider(pulse(health), request(window=4), at(5))
    assert end is not None
    end = end.model_copy(update={"worker_id": worker})
    return provider_stuck.stuck_anomaly(end, task, name)


def test_one_outage_is_one_operator_question_and_lapses_when_every_worker_hears_again():
    triage = Triage()
    outcome = decisions.absorb(
        triage,
        [stuck(CHAT, "chat", "w0001"), stuck(MATH, "math", "w0002")],
        StandingRules(),
        now=T0,
        tend=1,
    )
    (cls,) = triage.classes
    (decision_id,) = outcome.raised
    decision = triage.find_decision(decision_id)
    assert cls.kind == "provider_stuck" and cls.count == 2
    assert decision.owner == "operator" and decision.verdicts == ["wait", "pause"]
    assert f"the provider of {MODEL} stopped answering" in decision.question
    assert "wait: Inspect goes on retrying" in decision.question

    live = {"w0001", "w0002"}
    assert provider_stuck.lapses(triage, set(), live) == []
    gone = provider_stuck.lapses(triage, {"w0001"}, live)
    assert [g.reason for g in gone] == [f"{MODEL} answers worker w0001 again"]
    lapsed.close(triage, gone, now=at(90))
    assert decision.open  # w0002 still waits on it
    gone = provider_stuck.lapses(triage, set(), {"w0001"})  # w0002 is gone
    (closed,) = lapsed.close(triage, gone, now=at(95))
    assert closed.decisions == [decision_id] and cls.state == "healed"
    assert decision.answer.verdict == "closed" and decision.answer.by == "steward"


def test_a_provider_stuck_again_after_a_wait_ruling_asks_again():
    triage = Triage()
    (first,) = decisions.absorb(
        triage, [stuck(CHAT, "chat", "w0001")], StandingRules(), now=T0, tend=1
    ).raised
    rulings.apply_rule(
        triage,
        rulings.RuleRequest(decision_id=first, verdict="wait", by="norah"),
        StandingRules(),
        now=T0,
        tend=1,
    )
    assert triage.classes[0].state == "resolved"
    # The provider answers that worker again: the ruled class heals (no question to close)...
    (closed,) = lapsed.close(
        triage, provider_stuck.lapses(triage, {"w0001"}, {"w0001"}), now=at(200)
    )
    assert closed.decisions == [] and triage.classes[0].state == "healed"
    # ...and a provider stuck anew is asked about anew.
    again = stuck(CHAT, "chat", "w0003")
    outcome = decisions.absorb(triage, [again], StandingRules(), now=at(300), tend=5)
    assert len(outcome.raised) == 1 and outcome.raised[0] != first


def test_pause_is_what_the_run_does_itself():
    assert decisions.run_step("provider_stuck", "pause") == "pause_run"
    assert decisions.run_step("provider_stuck", "wait") is None


def test_inspects_own_window_says_stuck_when_a_watch_started_again_has_no_memory():
    def first_look(**window) -> ProviderHealth:
        return look(
            None, models=[MODEL], answers=57, retries=180, completed=57, now=at(0), **window
        )

    restarted = first_look(waiting=20, window_answers=0, window_s=20)
    assert restarted.quiet_for == 20 and failing_for(restarted, at(0), recent=20) == 20
    end = provider_stuck.judge_provider(pulse(restarted), request(window=20), at(0))
    assert end is not None and end.kind == "provider_stuck" and end.since == at(-20)
    assert end.detail == "no answer for 20s (worker w0001, pid 4242)"  # its retries unknown
    assert first_look(waiting=20, window_answers=1, window_s=20).quiet_for == 0  # answered
    assert first_look(waiting=0, window_answers=0, window_s=20).quiet_for == 0  # nothing fails
    young = first_look(waiting=3, window_answers=0, window_s=12)  # younger than the window
    assert provider_stuck.judge_provider(pulse(young), request(window=20), at(0)) is None


def test_a_watch_started_again_knows_its_worker_was_reported_and_waits_for_an_answer():
    triage = Triage()
    anomaly = stuck(CHAT, "chat", "w0001")
    decisions.absorb(triage, [anomaly], StandingRules(), now=T0, tend=1)
    since = datetime.fromisoformat(anomaly.uuid.partition("@")[2])
    assert provider_stuck.reported_since(triage, "w0001") == since
    assert provider_stuck.reported_since(triage, "w0002") is None
    lapsed.close(triage, provider_stuck.lapses(triage, {"w0001"}, {"w0001"}), now=at(60))
    assert provider_stuck.reported_since(triage, "w0001") is None  # healed: report anew
