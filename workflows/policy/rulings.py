"""Rulings, pure: a verdict on a decision validated and recorded, what a ruling asks to be done
to the logs or the live run (actions, carried out by activities/logs/rulings.py), and what still
stands between a run and its signoff. The classes and decisions themselves are decisions.py's.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Literal

from pydantic import BaseModel

from steward.workflows.policy import blockers, triage_ledger
from steward.workflows.policy.blockers import Blocker
from steward.workflows.policy.decisions import (
    EDITS,
    LOG_VERDICTS,
    PROPOSABLE,
    Anomaly,
    Decision,
    Role,
    Ruling,
    StandingRules,
    Triage,
    needs_effect,
    raise_decision,
    state_after,
)
from steward.workflows.policy.deferrals import deferral_problem


# ---------------------------------------------------------------- rulings
class RuleRequest(BaseModel):
    decision_id: str
    verdict: str
    reason: str = ""
    by: str = ""
    role: Role = "operator"
    # "provider_answers": carry a rerun out only once the class's provider answers a probe
    # (`--when-provider-answers`; workflows/policy/deferrals.py). None: at once.
    until: Literal["provider_answers"] | None = None


class RuleResult(BaseModel):
    decision_id: str
    class_id: str
    verdict: str
    effect: Literal["proposed", "ruled"]
    raised: str | None = None  # the operator decision a proposal raised


def rule_problem(triage: Triage, request: RuleRequest, rules: StandingRules) -> str | None:
    """Why a ruling is refused (one sentence), or None when it may be applied."""
    decision = triage.find_decision(request.decision_id)
    if decision is None:
        known = ", ".join(d.id for d in triage.open_decisions()) or "none"
        return f"No decision {request.decision_id!r}; open decisions: {known}."
    if not decision.open:
        return (
            f"Decision {decision.id} was already answered ({decision.answer.verdict} by "  # type: ignore[union-attr]
            f"{decision.answer.by or 'someone'}); nothing changed."  # type: ignore[union-attr]
        )
    if request.verdict not in decision.verdicts:
        return (
            f"{request.verdict!r} is not a verdict for decision {decision.id}; "
            f"allowed: {', '.join(decision.verdicts)}."
        )
    if request.role == "agent" and decision.owner == "operator":
        return (
            f"Decision {decision.id} is the operator's to rule; an agent may not "
            f"(ask the operator, or propose on an agent decision)."
        )
    if request.role == "agent" and decision.kind == "stuck_sample":
        if request.verdict != "cancel_tool":
            return f"An agent may only cancel_tool on {decision.id}; {request.verdict} is the operator's."
    return deferral_problem(request.verdict, request.until)


def apply_rule(
    triage: Triage, request: RuleRequest, rules: StandingRules, *, now: datetime, tend: int
) -> RuleResult:
    """Apply a validated ruling (in place). An agent's verdict on a proposable class is a
    proposal that raises the operator's decision; everything else rules the class."""
    decision = triage.find_decision(request.decision_id)
    assert decision is not None
    cls = triage.find_class(decision.class_id)
    assert cls is not None
    ruling = Ruling(
        verdict=request.verdict,
        reason=request.reason,
        by=request.by,
        role=request.role,
        at=now,
        until=request.until,
    )
    decision.answer = ruling
    if request.role == "agent" and cls.kind in PROPOSABLE:
        cls.proposal, cls.state = ruling, "proposed"
        raised = raise_decision(triage, cls, rules, now=now, tend=tend)
        return RuleResult(
            decision_id=decision.id,
            class_id=cls.id,
            verdict=request.verdict,
            effect="proposed",
            raised=raised.id,
        )
    cls.ruling = ruling
    cls.state = state_after(cls.kind, request.verdict)
    cls.waiting_tasks, cls.edited_logs = None, {}  # a new ruling is carried out afresh
    for other in triage.decisions:  # one answer closes the class's other open items
        if other.class_id == cls.id and other.open:
            other.answer = ruling
    return RuleResult(
        decision_id=decision.id, class_id=cls.id, verdict=request.verdict, effect="ruled"
    )


# ---------------------------------------------------------------- actions
class Action(BaseModel):
    """One effect a ruling asks for, for the apply activity."""

    class_id: str
    instance: str  # instance key
    verdict: str
    anomaly: Anomaly
    by: str
    reason: str


def pending_actions(triage: Triage, settled_logs: dict[str, str]) -> list[Action]:
    """The effects ruled but not yet done. Log edits wait until the task's log is final
    (`settled_logs`: task identifier -> its final log; a running task is absent); an exclusion
    or zero re-applies when the sample's task got a newer log since."""
    actions = []
    for cls in triage.classes:
        ruling = cls.ruling
        if ruling is None or not needs_effect(cls.kind, ruling.verdict) or cls.in_ledger:
            continue  # a ledger class's ruling is an order (triage_ledger.ledger_orders)
        if ruling.until is not None:
            continue  # it waits for its provider to answer (deferrals.py)
        # A resolved exclusion or zero is looked at again: its task may have a newer log now.
        if cls.state != "ruled" and not (cls.state == "resolved" and ruling.verdict in EDITS):
            continue
        for instance in cls.instances:
            anomaly = instance.anomaly
            if ruling.verdict in LOG_VERDICTS:
                log = settled_logs.get(anomaly.task)
                if log is None:
                    continue
                if instance.applied == ruling.verdict and (
                    ruling.verdict == "rerun" or instance.applied_log == log
                ):
                    continue
                anomaly = anomaly.model_copy(update={"log": log})
            elif instance.applied == ruling.verdict:
                continue
            actions.append(
                Action(
                    class_id=cls.id,
                    instance=instance.key,
                    verdict=ruling.verdict,
                    anomaly=anomaly,
                    by=ruling.by,
                    reason=ruling.reason,
                )
            )
    return actions


def mark_applied(triage: Triage, done: list[Action], skipped: list[Action] | None = None) -> None:
    """Record done effects (in place); a class whose instances are all done is resolved.
    `skipped` effects count as done for their class, but nothing was re-run."""
    for action in [*done, *(skipped or [])]:
        cls = triage.find_class(action.class_id)
        if cls is None:
            continue
        for instance in cls.instances:
            if instance.key == action.instance:
                instance.applied, instance.applied_log = action.verdict, action.anomaly.log
    for cls in triage.classes:
        if cls.state == "ruled" and cls.ruling is not None and not cls.in_ledger:
            if all(i.applied == cls.ruling.verdict for i in cls.instances):
                cls.state = "resolved"


# ---------------------------------------------------------------- routing and blockers
def route_unattended(triage: Triage, tend: int, *, now: datetime | None = None) -> list[str]:
    """Runs started before routing by time (route-by-time-v1): if no agent collected during
    the last two tends, the agent's open items go to the operator too. Returns the ids newly
    routed."""
    looked = triage.last_collect_tend
    routed = []
    for decision in triage.open_decisions():
        if decision.owner != "agent" or decision.routed:
            continue
        since = max(decision.raised_tend, looked or 0)
        if tend - since >= 2:
            _route(decision, now, "no agent collected during the last two tends")
            routed.append(decision.id)
    return routed


def route_window(route_after: float | None, tend_interval: float) -> float:
    """Seconds an agent's item waits for an agent to collect: `route_after`, else two tend
    intervals."""
    return route_after if route_after else 2 * tend_interval


def route_due(triage: Triage, decision: Decision, window: float) -> datetime | None:
    """When `decision` goes to the operator unless an agent collects first: `window` after it
    was raised or after the last collect, whichever is later; None when it is not an agent's
    open item waiting for that."""
    if not decision.open or decision.owner != "agent" or decision.routed:
        return None
    looked = triage.last_collect_at
    start = decision.raised_at if looked is None else max(decision.raised_at, looked)
    return start + timedelta(seconds=window)


def next_route_due(triage: Triage, window: float) -> datetime | None:
    """The soonest moment an open agent item is due to go to the operator (the run tends then,
    even with nothing else to do), or None."""
    due = [d for d in (route_due(triage, x, window) for x in triage.decisions) if d is not None]
    return min(due, default=None)


def route_overdue(triage: Triage, now: datetime, window: float) -> list[str]:
    """Route to the operator every agent item no agent collected within `window` (seconds) of
    its raising or of the last collect. A routed item stays the operator's: a later collect does
    not take it back (the agent may still propose on it). Returns the ids newly routed."""
    routed = []
    for decision in triage.open_decisions():
        due = route_due(triage, decision, window)
        if due is not None and now >= due:
            _route(decision, now, f"no agent collected within {_duration(window)}")
            routed.append(decision.id)
    return routed


def _route(decision: Decision, now: datetime | None, because: str) -> None:
    decision.routed, decision.routed_at, decision.routed_because = True, now, because


def _duration(seconds: float) -> str:
    """20m, 90s, 1h (options.format_duration's way; options imports this module's Action)."""
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60), ("s", 1)):
        if seconds >= size and seconds % size == 0:
            return f"{int(seconds // size)}{unit}"
    return f"{seconds:g}s"


def signoff_items(
    triage: Triage,
    *,
    open_tasks: list[str],
    unscanned: bool,
    scan_problem: str | None,
    settled_logs: dict[str, str] | None = None,
    waiting_for: list[str] | None = None,
    stalled_tasks: list[str] | None = None,
    paused: bool = False,
    phase: str = "running",
) -> list[Blocker]:
    """What stands between the run and its signoff, each with its owner and the command that
    clears it (`waiting_for`: the live workers ruled log edits wait for, as people should read
    them; `stalled_tasks`: those of `open_tasks` that stalled)."""
    unapplied = {c.id for c in triage.classes if c.state == "ruled"}
    unapplied |= {a.class_id for a in pending_actions(triage, settled_logs or {})}
    unapplied |= triage_ledger.unapplied(triage, settled_logs or {})
    return blockers.of_triage(
        triage,
        open_tasks=open_tasks,
        stalled_tasks=stalled_tasks or [],
        unapplied=sorted(unapplied),
        unscanned=unscanned,
        scan_problem=scan_problem,
        waiting_for=waiting_for or [],
        paused=paused,
        phase=phase,
    )


def signoff_blockers(
    triage: Triage,
    *,
    open_tasks: list[str],
    unscanned: bool,
    scan_problem: str | None,
    settled_logs: dict[str, str] | None = None,
    waiting_for: list[str] | None = None,
) -> list[str]:
    """Why the run cannot be signed off yet, as the refusal says it (signoff_items, grouped)."""
    return blockers.refusal_lines(
        signoff_items(
            triage,
            open_tasks=open_tasks,
            unscanned=unscanned,
            scan_problem=scan_problem,
            settled_logs=settled_logs,
            waiting_for=waiting_for,
        )
    )
