"""Decisions that follow the facts, pure (workflows/policy/lapsed.py): a hang or stuck-sample
decision whose cause went away (the worker answered again or is gone; the sample completed or
errored) is closed by the run and stops blocking signoff, and a hang asked about again names
the worker and pid of that hang, not the first one's."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from steward.workflows.policy import decisions, lapsed, rulings
from steward.workflows.policy.decisions import Anomaly, StandingRules, Triage
from steward.workflows.policy.lapsed import TendFacts
from steward.workflows.policy.rulings import RuleRequest

T0 = datetime(2026, 12, 2, 12, 0, 0, tzinfo=UTC)
ALPHA = "evalset.py@alpha#1/steward/offline/aaa"


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def hung(worker: str = "w-1", pid: int = 4242, since: float = 0) -> Anomaly:
    return Anomaly(
        kind="hung_worker",
        task=ALPHA,
        task_name="alpha",
        uuid=f"{worker}@{at(since).isoformat()}",
        worker=worker,
        detail=f"worker {worker} (pid {pid}): no control-socket answer and no log write for 5m",
    )


def stuck(sample: int, worker: str | None = "w-1") -> Anomaly:
    return Anomaly(
        kind="stuck_sample",
        task=ALPHA,
        task_name="alpha",
        sample_id=str(sample),
        epoch=1,
        uuid=f"eval-1:{sample}",
        tool="bash",
        worker=worker,
    )


def absorb(triage: Triage, anomalies: list[Anomaly], tend: int = 1):
    return decisions.absorb(triage, anomalies, StandingRules(), now=T0, tend=tend)


def close(triage: Triage, facts: TendFacts) -> list[lapsed.Closed]:
    return lapsed.close(triage, lapsed.lapsed(triage, facts), now=at(60))


def blockers(triage: Triage) -> list[str]:
    return rulings.signoff_blockers(triage, open_tasks=[], unscanned=False, scan_problem=None)


LIVE = TendFacts(workers={"w-1": 4242}, task_workers={ALPHA: "w-1"})


# ---------------------------------------------------------------- hangs
def test_a_hung_worker_that_answers_again_closes_its_decision_and_unblocks_signoff():
    triage = Triage()
    absorb(triage, [hung()])
    assert blockers(triage)  # the open decision blocks
    assert lapsed.lapsed(triage, LIVE) == []  # still silent: it holds

    facts = LIVE.model_copy(update={"answered": {"w-1"}})
    [closed] = close(triage, facts)
    cls, decision = triage.classes[0], triage.decisions[0]
    assert closed.decisions == ["d-1"] and closed.instances == 1
    assert closed.reason == "worker w-1 (pid 4242) answered again"
    assert cls.state == "healed" and cls.instances == [] and cls.settled
    assert not decision.open and decision.answer is not None
    answer = decision.answer
    assert (answer.verdict, answer.by, answer.reason) == ("closed", "steward", closed.reason)
    assert answer.at == at(60)
    assert blockers(triage) == []
    assert lapsed.journal_events([closed])[0].model_dump() == {
        "event": "decision closed",
        "data": {"decision": "d-1", "error_class": cls.id, "reason": closed.reason},
    }
    # a ruling that comes late is refused, saying why, and changes nothing
    late = RuleRequest(decision_id="d-1", verdict="wait", by="norah")
    problem = rulings.rule_problem(triage, late, StandingRules())
    assert problem == "Decision d-1 was already answered (closed by steward); nothing changed."


def test_a_hung_worker_that_is_gone_closes_its_decision_naming_where_its_task_runs_now():
    triage = Triage()
    absorb(triage, [hung()])
    respawned = TendFacts(workers={"w-2": 5151}, task_workers={ALPHA: "w-2"})
    [closed] = close(triage, respawned)
    assert closed.decisions == ["d-1"]
    assert closed.reason == "worker w-1 is gone; alpha runs in worker w-2 (pid 5151) now"
    # gone with nothing running the task (complete, stalled, waiting for capacity)
    triage = Triage()
    absorb(triage, [hung()])
    [closed] = close(triage, TendFacts())
    assert closed.reason == "worker w-1 is gone"


def test_an_answer_from_another_worker_does_not_close_a_hang():
    triage = Triage()
    absorb(triage, [hung()])
    facts = TendFacts(workers={"w-1": 4242, "w-2": 5151}, answered={"w-2"})
    assert close(triage, facts) == [] and triage.decisions[0].open


@pytest.mark.parametrize("verdict", ["wait", "restart"])
def test_a_ruled_hang_is_the_operators_and_is_left_alone(verdict):
    triage = Triage()
    absorb(triage, [hung()])
    rulings.apply_rule(
        triage,
        RuleRequest(decision_id="d-1", verdict=verdict, by="norah"),
        StandingRules(),
        now=T0,
        tend=1,
    )
    facts = TendFacts(answered={"w-1"})  # gone and answered: nothing to close either way
    assert close(triage, facts) == []
    assert triage.classes[0].state == "resolved" and triage.decisions[0].answer.by == "norah"


def test_a_hang_asked_again_names_the_current_worker_and_pid():
    triage = Triage()
    absorb(triage, [hung("w-1", 4242)])
    assert "worker w-1 (pid 4242)" in triage.decisions[0].question
    # w-1 is gone (its task respawned in w-2): closed before the tend files w-2's hang
    close(triage, TendFacts(workers={"w-2": 5151}, task_workers={ALPHA: "w-2"}))
    outcome = absorb(triage, [hung("w-2", 5151, since=600)], tend=2)
    [cls] = triage.classes
    assert outcome.raised == ["d-2"] and cls.state == "open"
    question = triage.find_decision("d-2").question
    assert "worker w-2 (pid 5151)" in question and "w-1" not in question and "4242" not in question
    assert "w-2" in cls.title and [i.anomaly.worker for i in cls.instances] == ["w-2"]
    assert [d.id for d in triage.open_decisions()] == ["d-2"]


def test_a_hang_asked_again_after_a_ruling_names_the_current_worker_too():
    # ruled restart: the class is settled, not lapsed, and the next hang reopens it
    triage = Triage()
    absorb(triage, [hung("w-1", 4242)])
    rulings.apply_rule(
        triage,
        RuleRequest(decision_id="d-1", verdict="restart", by="norah"),
        StandingRules(),
        now=T0,
        tend=1,
    )
    absorb(triage, [hung("w-2", 5151, since=600)], tend=2)
    question = triage.find_decision("d-2").question
    assert "worker w-2 (pid 5151)" in question and "4242" not in question


def test_the_same_worker_hanging_again_after_answering_is_a_new_question():
    triage = Triage()
    absorb(triage, [hung(since=0)])
    close(triage, LIVE.model_copy(update={"answered": {"w-1"}}))
    outcome = absorb(triage, [hung(since=900)], tend=2)
    assert outcome.raised == ["d-2"] and triage.classes[0].state == "open"
    assert [d.id for d in triage.open_decisions()] == ["d-2"]
    assert blockers(triage)


# ---------------------------------------------------------------- stuck samples
@pytest.mark.parametrize(
    ("facts", "reason"),
    [
        (
            LIVE.model_copy(update={"completed": {f"{ALPHA}#1@1"}}),
            "sample 1 (epoch 1) of alpha completed",
        ),
        (
            LIVE.model_copy(update={"errored": {f"{ALPHA}#1@1"}}),
            "sample 1 (epoch 1) of alpha errored (its error is asked about on its own)",
        ),
        (
            TendFacts(workers={"w-2": 5151}, task_workers={ALPHA: "w-2"}),
            "sample 1 (epoch 1) of alpha is no longer stuck: worker w-1 is gone; alpha runs "
            "in worker w-2 (pid 5151) now",
        ),
    ],
)
def test_a_stuck_sample_that_completed_errored_or_lost_its_worker_closes_its_decision(
    facts, reason
):
    triage = Triage()
    absorb(triage, [stuck(1)])
    assert lapsed.lapsed(triage, LIVE) == []  # still in its live worker: it holds
    [closed] = close(triage, facts)
    assert closed.reason == reason and closed.decisions == ["d-1"]
    assert triage.classes[0].state == "healed" and blockers(triage) == []


def test_a_stuck_class_stays_open_while_one_of_its_samples_is_still_stuck():
    triage = Triage()
    absorb(triage, [stuck(1), stuck(2)])
    [closed] = close(triage, LIVE.model_copy(update={"completed": {f"{ALPHA}#1@1"}}))
    [cls] = triage.classes
    assert closed.decisions == [] and closed.instances == 1
    assert [i.anomaly.sample_id for i in cls.instances] == ["2"] and cls.state == "open"
    assert triage.decisions[0].open
    [event] = lapsed.journal_events([closed])
    assert event.event == "no longer holds" and event.data["instances"] == 1
    # the second one completes too: the class heals, one reason said with how many more
    both = LIVE.model_copy(update={"completed": {f"{ALPHA}#2@1"}})
    [closed] = close(triage, both)
    assert closed.decisions == ["d-1"] and cls.state == "healed"


def test_several_lapsing_at_once_say_the_first_reason_and_how_many_more():
    triage = Triage()
    absorb(triage, [stuck(1), stuck(2), stuck(3)])
    done = {f"{ALPHA}#{n}@1" for n in (1, 2, 3)}
    [closed] = close(triage, LIVE.model_copy(update={"completed": done}))
    assert closed.reason == "sample 1 (epoch 1) of alpha completed (and 2 more)"
    assert closed.instances == 3 and closed.decisions == ["d-1"]


def test_a_stuck_sample_without_a_worker_lapses_only_on_its_log():
    # recorded before stuck samples named their worker: no worker, no "gone"
    triage = Triage()
    absorb(triage, [stuck(1, worker=None)])
    assert close(triage, TendFacts()) == []
    [closed] = close(triage, TendFacts(completed={f"{ALPHA}#1@1"}))
    assert closed.decisions == ["d-1"]


def test_watched_samples_are_the_stuck_ones_still_asked_about():
    triage = Triage()
    absorb(triage, [stuck(2), stuck(1), hung()])
    assert lapsed.watched_samples(triage) == [f"{ALPHA}#1@1", f"{ALPHA}#2@1"]
    close(triage, LIVE.model_copy(update={"completed": {f"{ALPHA}#1@1", f"{ALPHA}#2@1"}}))
    assert lapsed.watched_samples(triage) == []


def test_other_kinds_never_lapse():
    triage = Triage()
    error = Anomaly(
        kind="sample_error",
        task=ALPHA,
        task_name="alpha",
        sample_id="1",
        epoch=1,
        uuid="u1",
        worker="w-1",
        error_type="ValueError",
    )
    absorb(triage, [error])
    assert lapsed.lapsed(triage, TendFacts(completed={f"{ALPHA}#1@1"})) == []


def test_a_restarted_watch_knows_the_hang_the_run_still_asks_about():
    # A continued run starts its watches again: one whose worker's hang is still asked about
    # must report the recovery itself (the timer may be an hour away), so it is told since when.
    triage = Triage()
    decisions.absorb(triage, [hung("w-1", since=30)], StandingRules(), now=at(40), tend=1)
    assert lapsed.hang_reported_since(triage, "w-1") == at(30)
    assert lapsed.hang_reported_since(triage, "w-2") is None
    request = RuleRequest(decision_id=triage.decisions[0].id, verdict="wait", by="ops")
    rulings.apply_rule(triage, request, StandingRules(), now=at(50), tend=1)
    assert lapsed.hang_reported_since(triage, "w-1") is None  # ruled: nothing is asked any more
