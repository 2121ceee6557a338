"""A rerun deferred until the provider answers, pure (workflows/policy/deferrals.py): the ruling
is recorded but held back from the logs until a probe gets an answer, the probes back off 10 s,
20 s, 40 s ... up to 5 minutes, and only a rerun may wait."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from steward.workflows.policy import decisions, deferrals, rulings, triage_ledger
from steward.workflows.policy.decisions import Anomaly, StandingRules, Triage
from steward.workflows.policy.rulings import RuleRequest

T0 = datetime(2026, 12, 5, 12, 0, 0, tzinfo=UTC)
CHAT = "evalset.py@chat#1/openai-api/sim/echo/aaa"
MODEL = "openai-api/sim/echo"


def errored(sample: int) -> Anomaly:
    return Anomaly(
        kind="sample_error",
        task=CHAT,
        task_name="chat",
        sample_id=str(sample),
        epoch=1,
        uuid=f"u-{sample}",
        error_type="InternalServerError",
        frame="openai/_base_client.py:request",
        detail="Error code: 503 - simulated outage",
    )


def ruled_class(until: str | None) -> tuple[Triage, str]:
    triage = Triage()
    outcome = decisions.absorb(triage, [errored(1), errored(2)], StandingRules(), now=T0, tend=1)
    (decision,) = outcome.raised
    request = RuleRequest(decision_id=decision, verdict="rerun", by="norah", until=until)
    assert rulings.rule_problem(triage, request, StandingRules()) is None
    rulings.apply_rule(triage, request, StandingRules(), now=T0, tend=1)
    return triage, decision


def test_probes_back_off_from_ten_seconds_to_five_minutes():
    assert [deferrals.probe_delay(n) for n in range(1, 9)] == [10, 20, 40, 80, 160, 300, 300, 300]


def test_only_a_rerun_may_wait_for_the_provider():
    triage = Triage()
    (decision,) = decisions.absorb(triage, [errored(1)], StandingRules(), now=T0, tend=1).raised
    request = RuleRequest(decision_id=decision, verdict="exclude", until="provider_answers")
    problem = rulings.rule_problem(triage, request, StandingRules())
    assert problem is not None and "--when-provider-answers defers a rerun only" in problem
    plain = RuleRequest(decision_id=decision, verdict="exclude")
    assert rulings.rule_problem(triage, plain, StandingRules()) is None


def test_a_deferred_rerun_is_ruled_but_not_carried_out_until_released():
    triage, decision = ruled_class("provider_answers")
    (cls,) = triage.classes
    assert (
        cls.state == "ruled" and cls.ruling is not None and cls.ruling.until == "provider_answers"
    )
    assert triage.find_decision(decision).answer is not None  # the question is answered
    settled = {CHAT: "logs/chat.eval"}
    assert triage_ledger.ledger_orders(triage, settled) == []  # nothing touches the logs
    assert rulings.pending_actions(triage, settled) == []
    assert triage_ledger.waiting_tasks(triage) == set()  # it waits for the provider, not a worker
    assert cls.id in triage_ledger.unapplied(triage, settled)  # signoff waits for it
    (blocker,) = rulings.signoff_items(
        triage, open_tasks=[], unscanned=False, scan_problem=None, settled_logs=settled
    )
    assert blocker.what == f"rulings waiting for their provider to answer: {cls.id}"
    assert blocker.owner == "run" and blocker.command.startswith("wait: the run probes")

    deferral = deferrals.defer(cls, decision, {CHAT: MODEL}, by="norah", now=T0)
    assert deferral.models == [MODEL] and deferral.next_probe_at == T0  # probed at once
    assert deferrals.holds(triage, deferral)
    assert deferrals.release(triage, deferral)
    (order,) = triage_ledger.ledger_orders(triage, settled)
    assert (order.class_id, order.verdict) == (cls.id, "rerun")
    assert not deferrals.holds(triage, deferral) and not deferrals.release(triage, deferral)


def test_an_undeferred_rerun_is_carried_out_at_once():
    triage, _ = ruled_class(None)
    (order,) = triage_ledger.ledger_orders(triage, {CHAT: "logs/chat.eval"})
    assert order.verdict == "rerun"


def test_a_missed_probe_waits_out_the_backoff_and_keeps_what_it_met():
    triage, decision = ruled_class("provider_answers")
    deferral = deferrals.defer(triage.classes[0], decision, {CHAT: MODEL}, by="n", now=T0)
    deferrals.missed(deferral, "InternalServerError: Error code: 503 " + "x" * 500, T0)
    assert deferral.probes == 1 and deferral.next_probe_at == T0 + timedelta(seconds=10)
    assert len(deferral.last_problem or "") == deferrals.PROBLEM_LIMIT
    deferrals.missed(deferral, "again", T0 + timedelta(seconds=10))
    assert deferral.next_probe_at == T0 + timedelta(seconds=30)
    assert "waits until openai-api/sim answers (2 probe(s) unanswered)" in (
        deferrals.waiting_text(deferral)
    )


def test_a_class_ruled_anew_no_longer_waits():
    triage, decision = ruled_class("provider_answers")
    cls = triage.classes[0]
    deferral = deferrals.defer(cls, decision, {CHAT: MODEL}, by="n", now=T0)
    cls.ruling = decisions.Ruling(verdict="exclude", by="norah")
    assert not deferrals.holds(triage, deferral)
    assert deferrals.dropped_because(triage, deferral) == "the class was ruled anew"
    cls.state = "healed"
    assert deferrals.dropped_because(triage, deferral) == "its samples completed cleanly meanwhile"


def test_providers_are_named_as_people_name_them():
    assert deferrals.provider_of("openai-api/sim/echo") == "openai-api/sim"
    assert deferrals.provider_of("openai/gpt-4o") == "openai"
    assert deferrals.providers_text(["openai/gpt-4o", "anthropic/claude"]) == (
        "anthropic and openai"
    )
