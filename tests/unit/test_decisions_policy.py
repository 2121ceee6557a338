"""Decision policy, without Temporal: grouping by signature, the class lifecycle, allowed
verdicts and who may rule, standing rules, routing, pending effects and signoff blockers."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from steward.workflows.policy import decisions, rulings, triage_ledger
from steward.workflows.policy.decisions import Anomaly, StandingRules, Triage
from steward.workflows.policy.rulings import RuleRequest
from steward.workflows.policy.triage_ledger import OrderOutcome

NOW = datetime(2026, 12, 2, tzinfo=UTC)

TRACEBACK = """Traceback (most recent call last):
  File "/venv/lib/python3.11/site-packages/inspect_ai/_eval/task/run.py", line 812, in task_run_sample
    state = await plan(state, generate)
  File "/usr/lib/python3.11/asyncio/tasks.py", line 10, in wait_for
    return await fut
  File "/venv/lib/python3.11/site-packages/tenacity/asyncio/__init__.py", line 114, in __call__
    result = await fn(*args, **kwargs)
  File "/work/ws/worker/offline_model.py", line {line}, in generate
    raise OfflineSampleFailure(f"offline model told to fail on {{fail!r}}")
steward.worker.offline_model.OfflineSampleFailure: offline model told to fail on '{text}'
"""


def error(sample: int, line: int = 87, text: str = "x", uuid: str | None = None) -> Anomaly:
    traceback = TRACEBACK.format(line=line, text=text)
    return Anomaly(
        kind="sample_error",
        task="evalset.py@flaky#1/steward/offline/abc",
        task_name="flaky",
        sample_id=str(sample),
        epoch=1,
        uuid=uuid or f"u{sample}",
        log="/logs/flaky.eval",
        error_type=decisions.error_type_of(traceback, text),
        frame=decisions.deepest_frame(traceback),
        detail=text,
    )


def absorb(triage: Triage, anomalies: list[Anomaly], rules: StandingRules | None = None, tend=1):
    return decisions.absorb(triage, anomalies, rules or StandingRules(), now=NOW, tend=tend)


def rule(triage, decision_id, verdict, role="operator", rules=None, by="norah"):
    request = RuleRequest(decision_id=decision_id, verdict=verdict, role=role, by=by)
    problem = rulings.rule_problem(triage, request, rules or StandingRules())
    if problem:
        return problem
    return rulings.apply_rule(triage, request, rules or StandingRules(), now=NOW, tend=1)


def test_signature_is_type_and_deepest_meaningful_frame_not_lines_or_text():
    one, other = error(1, line=87, text="alpha"), error(2, line=120, text="beta")
    assert one.error_type == "OfflineSampleFailure"
    assert one.frame == "worker/offline_model.py:generate"  # not asyncio, tenacity or inspect
    assert decisions.signature_of(one) == decisions.signature_of(other)
    triage = Triage()
    outcome = absorb(triage, [one, other])
    assert len(triage.classes) == 1 and len(triage.classes[0].instances) == 2
    assert outcome.new_classes == [triage.classes[0].id] and len(outcome.raised) == 1


def test_different_exception_or_frame_is_another_class():
    solver = error(3).model_copy(
        update={"error_type": "ValueError", "frame": "ws/evalset.py:solve"}
    )
    triage = Triage()
    absorb(triage, [error(1), solver])
    assert len(triage.classes) == 2 and len(triage.decisions) == 2


def test_seen_again_after_restart_counts_once():
    triage = Triage()
    absorb(triage, [error(1), error(2)])
    again = absorb(triage, [error(1), error(2)], tend=2)
    assert again.new_instances == {} and again.raised == []
    assert len(triage.classes[0].instances) == 2 and len(triage.decisions) == 1


def test_agent_proposes_operator_rules_lifecycle():
    triage = Triage()
    absorb(triage, [error(1)])
    cls, first = triage.classes[0], triage.decisions[0]
    assert cls.state == "open" and first.owner == "agent"
    proposal = rule(triage, first.id, "rerun", role="agent", by="claude")
    assert proposal.effect == "proposed" and cls.state == "proposed"
    second = triage.find_decision(proposal.raised)
    assert second.owner == "operator" and "proposed rerun by claude" in second.question
    assert "operator's to rule" in rule(triage, second.id, "exclude", role="agent")
    ruled = rule(triage, second.id, "rerun")
    assert ruled.effect == "ruled" and cls.state == "ruled" and cls.ruling.by == "norah"
    # A sample error class lives in the triage ledger: its ruling is an order for the class.
    assert rulings.pending_actions(triage, {error(1).task: "/l.eval"}) == []
    (order,) = triage_ledger.ledger_orders(triage, {error(1).task: "/l.eval"})
    assert (order.class_id, order.verdict, order.by) == (cls.id, "rerun", "norah")
    triage_ledger.take_outcomes(triage, [OrderOutcome(class_id=cls.id, verdict="rerun", done=1)])
    assert cls.state == "resolved"
    assert triage_ledger.ledger_orders(triage, {error(1).task: "/l.eval"}) == []


def test_invalid_rulings_are_refused_and_change_nothing():
    triage = Triage()
    absorb(triage, [error(1)])
    before = triage.model_dump()
    assert "No decision 'd-9'" in rule(triage, "d-9", "rerun")
    assert "not a verdict" in rule(triage, "d-1", "approve")
    assert triage.model_dump() == before
    rule(triage, "d-1", "accept")
    assert "already answered" in rule(triage, "d-1", "rerun")
    assert triage.classes[0].state == "accepted"


@pytest.mark.parametrize(
    ("kind", "verdicts"),
    [
        ("sample_error", {"rerun", "exclude", "zero", "score", "accept", "dismiss"}),
        ("stalled_task", {"retry", "give_up"}),
        ("approval", {"approve", "reject", "terminate"}),
        ("stuck_sample", {"cancel_tool", "retry", "cancel", "dismiss"}),
    ],
)
def test_allowed_verdicts_per_kind(kind, verdicts):
    anomaly = Anomaly(kind=kind, task="t", task_name="t", sample_id="1", epoch=1, uuid="a1")
    triage = Triage()
    absorb(triage, [anomaly])
    assert set(triage.decisions[0].verdicts) == verdicts


def test_operator_kinds_refuse_agents_and_stuck_cancel_lets_agent_cancel_tool():
    stalled = Anomaly(kind="stalled_task", task="t", task_name="t", uuid="attempt-3")
    stuck = Anomaly(kind="stuck_sample", task="t", task_name="t", sample_id="1", epoch=1,
                    uuid="e:1", tool="bash")  # fmt: skip
    rules = StandingRules(stuck_cancel=["bash"])
    triage = Triage()
    absorb(triage, [stalled, stuck], rules)
    by_kind = {d.kind: d for d in triage.decisions}
    assert by_kind["stalled_task"].owner == "operator"
    assert "operator's to rule" in rule(triage, by_kind["stalled_task"].id, "retry", "agent", rules)
    assert by_kind["stuck_sample"].owner == "agent"
    assert "only cancel_tool" in rule(triage, by_kind["stuck_sample"].id, "cancel", "agent", rules)
    result = rule(triage, by_kind["stuck_sample"].id, "cancel_tool", "agent", rules)
    assert result.effect == "ruled"  # permitted by the standing rule: applied, not proposed
    assert [a.verdict for a in rulings.pending_actions(triage, {})] == ["cancel_tool"]


def test_preauthorized_pattern_rules_without_asking_and_later_instances_follow():
    rules = StandingRules(preauthorized={"*OfflineSampleFailure*": "rerun"})
    triage = Triage()
    outcome = absorb(triage, [error(1)], rules)
    cls = triage.classes[0]
    assert outcome.standing == [cls.id] and outcome.raised == [] and cls.state == "ruled"
    assert cls.ruling.standing == "preauthorized"
    assert triage_ledger.ledger_orders(triage, {error(1).task: "/l"})
    done = OrderOutcome(class_id=cls.id, verdict="rerun", done=1)
    triage_ledger.take_outcomes(triage, [done])
    assert cls.state == "resolved"
    absorb(triage, [error(2)], rules, tend=2)  # a later instance is ruled by the class
    assert cls.state == "ruled" and triage.decisions == []
    assert cls.waiting_tasks == [error(2).task] and cls.count == 2
    assert [o.class_id for o in triage_ledger.ledger_orders(triage, {error(1).task: "/l"})] == [cls.id]  # fmt: skip


def test_rerun_that_fails_again_raises_an_operator_decision():
    # The anomalies activity marks a re-run sample's new error `rerun_failed` (its ledger knows
    # the re-run: tests/unit/test_triage_ledger.py); the triage asks the operator about it.
    triage = Triage()
    absorb(triage, [error(1)])
    rule(triage, "d-1", "rerun")
    again = error(1, uuid="u1-second").model_copy(update={"kind": "rerun_failed"})
    outcome = absorb(triage, [again], tend=3)
    failed = triage.find_decision(outcome.raised[0])
    assert failed.kind == "rerun_failed" and failed.owner == "operator"


def test_exclusion_waits_for_final_log_and_reapplies_to_a_newer_one():
    triage = Triage()
    absorb(triage, [error(1)])
    rule(triage, "d-1", "exclude")
    task = error(1).task
    assert triage_ledger.ledger_orders(triage, {}) == []  # task still running: nothing yet
    (order,) = triage_ledger.ledger_orders(triage, {task: "/a.eval"})
    outcome = OrderOutcome(
        class_id=order.class_id, verdict="exclude", done=1, edited_logs={task: "/a.eval"}
    )
    triage_ledger.take_outcomes(triage, [outcome])
    assert triage.classes[0].state == "resolved"
    assert triage_ledger.ledger_orders(triage, {task: "/a.eval"}) == []
    assert triage_ledger.ledger_orders(triage, {task: "/b.eval"})  # a newer final log: again
    assert "rulings not yet applied" in " ".join(
        rulings.signoff_blockers(
            triage, open_tasks=[], unscanned=False, scan_problem=None,
            settled_logs={task: "/b.eval"},
        )
    )  # fmt: skip


def test_agent_items_routed_to_operator_after_two_tends_without_collect():
    triage = Triage()
    absorb(triage, [error(1)], tend=1)
    assert rulings.route_unattended(triage, 2) == []
    triage.last_collect_tend = 2  # an agent looked
    assert rulings.route_unattended(triage, 3) == []
    assert rulings.route_unattended(triage, 4) == ["d-1"]
    assert triage.decisions[0].for_operator and rulings.route_unattended(triage, 9) == []


def test_signoff_blockers_listed_all_at_once():
    triage = Triage()
    absorb(triage, [error(1)])
    blockers = rulings.signoff_blockers(
        triage, open_tasks=["flaky"], unscanned=True, scan_problem="model down"
    )
    assert len(blockers) == 4
    assert any("flaky" in b for b in blockers) and any("model down" in b for b in blockers)
    rule(triage, "d-1", "dismiss")
    assert rulings.signoff_blockers(triage, open_tasks=[], unscanned=False, scan_problem=None) == []


def test_unsupervised_after_two_intervals_without_a_tend():
    from datetime import timedelta

    from steward.workflows.contracts import RunState
    from steward.workflows.run.eval_run_state import unsupervised

    state = RunState(phase="running", last_tend_at=NOW, next_tend_at=NOW + timedelta(seconds=60))
    assert unsupervised(state, 60, NOW + timedelta(seconds=119)) is None
    warning = unsupervised(state, 60, NOW + timedelta(seconds=121))
    assert warning and "unsupervised" in warning and "steward worker" in warning
    # A finished run waiting for signoff tends at least every 10 minutes.
    assert unsupervised(state.model_copy(update={"phase": "finished"}), 60, NOW + timedelta(seconds=121)) is None  # fmt: skip
    assert unsupervised(state.model_copy(update={"phase": "signed_off"}), 60, NOW + timedelta(days=1)) is None  # fmt: skip
    # Nothing scheduled (a finished run with nothing to retry waits for commands): not a warning.
    assert unsupervised(state.model_copy(update={"next_tend_at": None}), 60, NOW + timedelta(days=1)) is None  # fmt: skip


def test_notices_one_per_decision_heartbeat_due_and_problem_once():
    from datetime import timedelta

    from steward.workflows.contracts import RunState
    from steward.workflows.policy import notices

    state = RunState(phase="running", started_at=NOW)
    absorb(state.triage, [error(1)])
    assert notices.decision_notices(state) == []  # the agent's item: not the operator's yet
    rulings.route_unattended(state.triage, 5)
    [notice] = notices.decision_notices(state)
    assert "routed to you" in notice.text and "steward rule d-1" in notice.text
    assert notices.decision_notices(state) == []  # told once
    assert notices.heartbeat_notice(state, 3600, NOW + timedelta(minutes=59)) is None
    assert notices.heartbeat_notice(state, 3600, NOW + timedelta(minutes=61)) is not None
    assert notices.heartbeat_notice(state, 3600, NOW + timedelta(minutes=62)) is None
    assert notices.heartbeat_notice(state, False, NOW + timedelta(days=1)) is None
    assert notices.tend_problem_notice(state, "disk full") is not None
    assert notices.tend_problem_notice(state, "disk full") is None
    title, body = notices.message("ws", [notice])
    assert title == "Steward · ws: 1 decision(s) need you" and "d-1" in body
