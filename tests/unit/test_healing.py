"""Healing and counting errored samples, without Temporal: each (id, epoch) counted once across
a resumed task's logs, a worker's own end is not a sample error, a sample the resumed task
completed leaves its class (a class left empty is healed and stops blocking signoff), and a
ruling marks skipped effects done without recording a re-run."""

from __future__ import annotations

from steward.workflows.policy import decisions, healing, rulings, triage_ledger
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


def healthy(triage: Triage, *samples: int) -> dict[str, dict[str, str]]:
    """What the anomalies activity answers when `samples` are healthy in their newest log."""
    (cls,) = triage.classes
    return {cls.id: {f"sample_error/{REF.format(n)}": error(n).task for n in samples}}


def test_suspects_are_the_unsettled_sample_error_classes():
    triage = Triage()
    by_sample(triage, [error(1), error(2)])
    assert healing.suspect_classes(triage) == [triage.classes[0].id]
    decision = triage.open_decisions()[0]
    rule(triage, decision.id, "accept", role="operator")
    assert healing.suspect_classes(triage) == []  # accepted: nothing held against the task


def test_a_sample_completed_on_resume_leaves_its_class_and_a_class_left_empty_heals():
    triage = Triage()
    by_sample(triage, [error(1), error(2)])
    (cls,) = triage.classes
    (decision,) = triage.open_decisions()

    (partly,) = healing.heal(triage, healthy(triage, 1), now=NOW)
    assert partly.count == 1 and partly.samples == [f"sample_error/{REF.format(1)}"]
    assert not partly.closed and cls.count == 1
    assert [i.anomaly.sample_id for i in cls.instances] == ["2"]
    assert [(op.op, op.key) for op in triage.ledger_ops][-1] == ("remove", partly.samples[0])
    assert decision.open and cls.state == "open"
    blockers = rulings.signoff_blockers(triage, open_tasks=[], unscanned=False, scan_problem=None)
    assert any(cls.id in b for b in blockers)

    (whole,) = healing.heal(triage, healthy(triage, 2), now=NOW)
    assert whole.closed and cls.state == "healed" and cls.settled and cls.count == 0
    assert not decision.open and decision.answer.verdict == "healed"
    assert decision.answer.by == "steward"
    assert rulings.signoff_blockers(triage, open_tasks=[], unscanned=False, scan_problem=None) == []
    assert triage_ledger.ledger_orders(triage, {error(1).task: "/logs/final.eval"}) == []


def test_a_ruled_class_whose_samples_heal_has_nothing_left_to_act_on():
    triage = Triage()
    by_sample(triage, [error(1)])
    (decision,) = triage.open_decisions()
    rule(triage, decision.id, "rerun", role="operator")
    assert triage.classes[0].state == "ruled"
    healing.heal(triage, healthy(triage, 1), now=NOW)
    assert triage.classes[0].state == "healed"
    assert triage_ledger.ledger_orders(triage, {error(1).task: "/logs/final.eval"}) == []


def test_a_healed_class_that_errs_again_asks_again():
    triage = Triage()
    by_sample(triage, [error(1)])
    healing.heal(triage, healthy(triage, 1), now=NOW)
    outcome = by_sample(triage, [error(1, uuid="later")], tend=3)
    cls = triage.classes[0]
    assert cls.state == "open" and cls.count == 1
    assert len(outcome.raised) == 1  # a new decision: the old one was closed as healed


def test_thousands_of_instances_keep_the_state_small():
    triage = Triage()
    by_sample(triage, [error(n, uuid=f"u{n}") for n in range(3_000)])
    (cls,) = triage.classes
    assert cls.count == 3_000 and len(cls.instances) == decisions.WINDOW
    assert cls.tasks == {error(1).task: 3_000}
    assert len(triage.ledger_ops) == 3_000  # until the next ledger write takes them
    triage_ledger.written(triage, triage.ledger_seq)
    assert triage.ledger_ops == [] and len(triage.model_dump_json()) < 10_000


def test_a_run_from_before_the_ledger_moves_its_instances_into_it():
    old = Triage()
    by_sample(old, [error(n) for n in range(12)])
    data = old.model_dump(mode="json")
    (cls,) = data["classes"]
    # As 0.2.0 kept it: every instance in the state, no counts, a re-run recorded in reruns.
    cls["instances"] = [
        {"key": f"sample_error/{REF.format(n)}", "anomaly": error(n).model_dump(mode="json"),
         "applied": "exclude" if n == 0 else None, "applied_log": "/l.eval" if n == 0 else None}
        for n in range(12)
    ]  # fmt: skip
    cls.pop("held"), cls.pop("tasks")
    data["ledger_ops"], data["ledger_seq"], data["reruns"] = [], 0, {REF.format(3): cls["id"]}
    moved = Triage.model_validate(data)
    (mcls,) = moved.classes
    assert mcls.count == 12 and len(mcls.instances) == decisions.WINDOW
    adds = [op for op in moved.ledger_ops if op.op == "add"]
    assert len(adds) == 12 and (adds[0].applied, adds[0].applied_log) == ("exclude", "/l.eval")
    assert [(op.op, op.key) for op in moved.ledger_ops if op.op == "rerun"] == [
        ("rerun", REF.format(3))
    ]
    assert moved.reruns == {}
