"""Healing and counting errored samples, without Temporal: each (id, epoch) counted once across
a resumed task's logs, a worker's own end is not a sample error, a sample the resumed task
completed leaves its class (a class left empty is healed and stops blocking signoff), and a
ruling marks skipped effects done without recording a re-run."""

from __future__ import annotations

from steward.workflows.policy import decisions, healing, rulings
from steward.workflows.policy.decisions import StandingRules, Triage
from tests.unit.test_decisions_policy import NOW, error, rule

REF = "evalset.py@flaky#1/steward/offline/abc#{}@1"


def by_sample(triage: Triage, anomalies, tend=1):
    return decisions.absorb(triage, anomalies, StandingRules(), now=NOW, tend=tend)


def test_a_sample_read_again_from_a_resumed_log_is_counted_once():
    triage = Triage()
    # Three samples errored in the first log; the resumed worker's log errs two of them again,
    # under new uuids: three instances, not five (by uuid it would be five).
    by_sample(triage, [error(1, uuid="a1"), error(2, uuid="a2"), error(3, uuid="a3")])
    by_sample(triage, [error(1, uuid="b1"), error(2, uuid="b2")], tend=2)
    (cls,) = triage.classes
    assert len(cls.instances) == 3


def test_a_rerun_that_fails_again_is_a_new_instance_even_by_sample():
    triage = Triage()
    by_sample(triage, [error(1, uuid="a1")])
    triage.reruns[error(1).sample_ref] = triage.classes[0].id
    # The errored run the rerun replaces, read again before the rerun lands: nothing new.
    assert by_sample(triage, [error(1, uuid="a1")], tend=2).new_instances == {}
    outcome = by_sample(triage, [error(1, uuid="r1")], tend=2)
    assert [c.kind for c in triage.classes] == ["sample_error", "rerun_failed"]
    assert outcome.new_classes == [triage.classes[1].id]


def test_a_workers_own_end_is_an_interruption_not_a_sample_error():
    # What Inspect's recovery writes for the sample in flight when its worker was killed.
    assert decisions.is_interruption(
        "CancelledError", "CancelledError()", "CancelledError: recovered from crashed eval\n"
    )
    assert decisions.is_interruption("KeyboardInterrupt", "KeyboardInterrupt()")
    assert decisions.is_interruption(
        "Error", "Sample terminated by operator during recovery (in progress when ...)"
    )
    assert not decisions.is_interruption("ValueError", "picky cannot handle this sample")
    assert not decisions.is_interruption("OfflineSampleFailure", "offline model told to fail")


def test_suspects_are_unsettled_unapplied_sample_errors():
    triage = Triage()
    by_sample(triage, [error(1), error(2)])
    assert healing.suspect_refs(triage) == [REF.format(1), REF.format(2)]
    decision = triage.open_decisions()[0]
    rule(triage, decision.id, "accept", role="operator")
    assert healing.suspect_refs(triage) == []  # accepted: nothing held against the task


def test_a_sample_completed_on_resume_leaves_its_class_and_a_class_left_empty_heals():
    triage = Triage()
    by_sample(triage, [error(1), error(2)])
    (cls,) = triage.classes
    (decision,) = triage.open_decisions()

    (partly,) = healing.heal(triage, [REF.format(1)], now=NOW)
    assert partly.samples == [REF.format(1)] and not partly.closed
    assert [i.anomaly.sample_id for i in cls.instances] == ["2"]
    assert decision.open and cls.state == "open"
    blockers = rulings.signoff_blockers(triage, open_tasks=[], unscanned=False, scan_problem=None)
    assert any(cls.id in b for b in blockers)

    (whole,) = healing.heal(triage, [REF.format(2)], now=NOW)
    assert whole.closed and cls.state == "healed" and cls.settled
    assert not decision.open and decision.answer.verdict == "healed"
    assert decision.answer.by == "steward"
    assert rulings.signoff_blockers(triage, open_tasks=[], unscanned=False, scan_problem=None) == []
    assert rulings.pending_actions(triage, {error(1).task: "/logs/final.eval"}) == []


def test_a_ruled_class_whose_samples_heal_has_nothing_left_to_act_on():
    triage = Triage()
    by_sample(triage, [error(1)])
    (decision,) = triage.open_decisions()
    rule(triage, decision.id, "rerun", role="operator")
    assert triage.classes[0].state == "ruled"
    healing.heal(triage, [REF.format(1)], now=NOW)
    assert triage.classes[0].state == "healed"
    assert rulings.pending_actions(triage, {error(1).task: "/logs/final.eval"}) == []


def test_a_healed_class_that_errs_again_asks_again():
    triage = Triage()
    by_sample(triage, [error(1)])
    healing.heal(triage, [REF.format(1)], now=NOW)
    outcome = by_sample(triage, [error(1, uuid="later")], tend=3)
    cls = triage.classes[0]
    assert cls.state == "open" and len(cls.instances) == 1
    assert len(outcome.raised) == 1  # a new decision: the old one was closed as healed


def test_applied_and_accepted_instances_never_heal():
    triage = Triage()
    by_sample(triage, [error(1), error(2)])
    (decision,) = triage.open_decisions()
    rule(triage, decision.id, "exclude", role="operator")
    actions = rulings.pending_actions(triage, {error(1).task: "/logs/final.eval"})
    rulings.mark_applied(triage, actions[:1])
    # The excluded sample 1 stays excluded even if a later log has it healthy.
    assert healing.heal(triage, [REF.format(1)], now=NOW) == []
    assert len(triage.classes[0].instances) == 2


def test_skipped_effects_settle_the_class_but_record_no_rerun():
    triage = Triage()
    by_sample(triage, [error(1), error(2)])
    (decision,) = triage.open_decisions()
    rule(triage, decision.id, "rerun", role="operator")
    first, second = rulings.pending_actions(triage, {error(1).task: "/logs/final.eval"})
    rulings.mark_applied(triage, [first], skipped=[second])
    assert triage.classes[0].state == "resolved"
    assert list(triage.reruns) == [first.anomaly.sample_ref]  # the skipped one was not re-run
