"""Triage and decisions: anomalies grouped into classes, decisions raised on them, rulings
validated and turned into actions, standing rules applied. Pure: no I/O, no clocks (the caller
passes `now`), so the workflow decides with it and the tests check it without Temporal.

A class moves open -> proposed -> ruled -> resolved (its actions applied) or accepted (accept /
dismiss, nothing to apply), or healed: every sample in it completed cleanly when its task resumed
(workflows/policy/healing.py), or the cause of every hang or stuck sample in it went away
(workflows/policy/lapsed.py). Each class has at most one open decision at a time.

The classes' data is triage_model.py's and what makes a class signatures.py's; both are
importable from here too (`__all__`), as this module is the triage's one face.
"""

from __future__ import annotations

import fnmatch
from datetime import datetime

from pydantic import BaseModel, Field

from steward.workflows.policy.signatures import (
    INTERRUPTIONS,
    class_id_of,
    deepest_frame,
    error_type_of,
    frame_label,
    is_interruption,
    signature_of,
    title_of,
)
from steward.workflows.policy.triage_model import (
    EDITS,
    LEDGER_KINDS,
    LIVE_VERDICTS,
    LOG_VERDICTS,
    PROPOSABLE,
    RUN_STEPS,
    SAMPLE_VERDICTS,
    VERDICTS,
    WINDOW,
    Anomaly,
    AnomalyKind,
    ClassState,
    Decision,
    ErrorClass,
    Instance,
    LedgerOp,
    Role,
    Ruling,
    RunStep,
    StandingRules,
    Triage,
    needs_effect,
    run_step,
    state_after,
)


# ---------------------------------------------------------------- grouping
class TriageOutcome(BaseModel):
    new_classes: list[str] = Field(default_factory=list)
    new_instances: dict[str, int] = Field(default_factory=dict)  # class id -> count
    raised: list[str] = Field(default_factory=list)  # decision ids
    standing: list[str] = Field(default_factory=list)  # class ids ruled by a standing rule


def absorb(
    triage: Triage,
    anomalies: list[Anomaly],
    rules: StandingRules,
    *,
    now: datetime,
    tend: int,
) -> TriageOutcome:
    """Group anomalies into classes (in place); raise decisions for what needs judgement.

    An anomaly seen before (same key) adds nothing, so a restart never double-counts. A sample
    that errors again after a rerun ruling is a `rerun_failed` anomaly: the operator decides.
    Each errored (id, epoch) counts once, whichever log it was read from.
    """
    outcome = TriageOutcome()
    # Ledger kinds arrive new (the anomalies activity leaves out what the ledger holds, and
    # marks a re-run sample's new error `rerun_failed`); what the state holds is checked here.
    known = {i.key for c in triage.classes for i in c.instances}
    for op in triage.ledger_ops:  # taken in, or let go (healed), since the last ledger write
        if op.op == "add":
            known.add(op.key)
        elif op.op == "remove":
            known.discard(op.key)
    for anomaly in anomalies:
        key = anomaly.sample_key
        if key in known:
            continue
        known.add(key)
        signature = signature_of(anomaly)
        cls = triage.find_class(class_id_of(signature))
        if cls is None:
            cls = ErrorClass(
                id=class_id_of(signature),
                kind=anomaly.kind,
                signature=signature,
                title=title_of(anomaly),
            )
            triage.classes.append(cls)
            outcome.new_classes.append(cls.id)
        cls.hold(Instance(key=key, anomaly=anomaly))
        if cls.in_ledger:
            triage.record("add", cls.id, key, anomaly)
        if cls.kind in ("cost_cap", "hung_worker"):
            # The figures of this crossing, the worker and pid of this hang: not the first's.
            cls.title = title_of(anomaly)
        outcome.new_instances[cls.id] = outcome.new_instances.get(cls.id, 0) + 1
        if cls.state == "healed":  # it errs again: as it stood before it healed
            cls.state = "open" if cls.ruling is None else state_after(cls.kind, cls.ruling.verdict)
        if cls.settled and _asks_again(cls):
            cls.state, cls.ruling = "open", None
        elif cls.settled and cls.ruling is not None:
            # A ruled class rules its later instances too: back to "ruled" until applied.
            if needs_effect(cls.kind, cls.ruling.verdict):
                cls.state = "ruled"

    for cls in triage.classes:
        if cls.id not in outcome.new_instances or cls.ruling is not None:
            continue
        verdict = standing_verdict(cls, rules)
        if verdict is not None:
            cls.ruling = Ruling(
                verdict=verdict, by="standing rules", at=now, standing="preauthorized"
            )
            cls.state = state_after(cls.kind, verdict)
            outcome.standing.append(cls.id)
            for decision in triage.decisions:
                if decision.class_id == cls.id and decision.open:
                    decision.answer = cls.ruling
            continue
        if not any(d.class_id == cls.id and d.open for d in triage.decisions):
            outcome.raised.append(raise_decision(triage, cls, rules, now=now, tend=tend).id)
    return outcome


ANSWERED_KEPT = 50  # answered decisions the state keeps (the journal has every ruling)


def forget_settled(triage: Triage) -> None:
    """Keep the state the same size however long the run (in place): answered decisions
    beyond the newest ANSWERED_KEPT, and settled approval classes (one per approval, never
    seen again), are let go. Their rulings are in the journal."""
    answered = [d for d in triage.decisions if not d.open]
    if len(answered) > ANSWERED_KEPT:
        gone = {d.id for d in answered[:-ANSWERED_KEPT]}
        triage.decisions = [d for d in triage.decisions if d.id not in gone]
    asked = {d.class_id for d in triage.decisions if d.open}
    triage.classes = [
        c for c in triage.classes if not (c.kind == "approval" and c.settled and c.id not in asked)
    ]


def _asks_again(cls: ErrorClass) -> bool:
    """A task stalled again after a retry, or a sample stuck again after a retry or cancel, is
    asked about again (repeating the verdict unasked could loop forever); a cancelled stuck
    tool call is not."""
    if cls.kind in ("stalled_task", "cost_cap", "hung_worker", "provider_stuck"):
        return True
    return cls.kind == "stuck_sample" and (
        cls.ruling is None or cls.ruling.verdict != "cancel_tool"
    )


def standing_verdict(cls: ErrorClass, rules: StandingRules) -> str | None:
    """The preauthorized verdict for a class, if a pattern names its signature or title."""
    if cls.kind not in VERDICTS or cls.kind in (
        "approval",
        "stalled_task",
        "cost_cap",
        "hung_worker",
    ):
        return None
    for pattern, verdict in rules.preauthorized.items():
        if verdict not in VERDICTS[cls.kind]:
            continue
        if any(fnmatch.fnmatchcase(text, pattern) for text in (cls.signature, cls.title, cls.id)):
            return verdict
    return None


def stuck_cancel_allowed(rules: StandingRules, tool: str | None) -> bool:
    if tool is None:
        return False
    if isinstance(rules.stuck_cancel, bool):
        return rules.stuck_cancel
    return tool in rules.stuck_cancel


def _owner(cls: ErrorClass, rules: StandingRules) -> Role:
    if cls.kind in PROPOSABLE and cls.state == "open":
        return "agent"
    if cls.kind == "stuck_sample" and stuck_cancel_allowed(rules, cls.instances[0].anomaly.tool):
        return "agent"
    return "operator"


def _question(cls: ErrorClass) -> str:
    count = cls.count
    if cls.state == "proposed" and cls.proposal is not None:
        proposal = cls.proposal
        once = " once the provider answers" if proposal.until is not None else ""
        return (
            f"Rule on {cls.title} ({count} instance(s)); proposed {proposal.verdict}{once} by "
            f"{proposal.by or 'the agent'}"
            + (f": {proposal.reason}" if proposal.reason else "")
            + (" (rule it with --when-provider-answers to wait likewise)" if once else "")
        )
    if cls.kind in PROPOSABLE:
        return f"Propose what to do about {cls.title} ({count} instance(s))."
    if cls.kind == "provider_stuck":
        latest = cls.instances[-1].anomaly
        return (
            f"Decide: {cls.title}: {latest.detail}. wait: Inspect goes on retrying (this closes "
            "itself once the provider answers); pause: spawn nothing new until `steward resume`."
        )
    if cls.kind == "stalled_task":
        # This stall's cause, its last worker's exit code or signal and log: not the first's.
        latest = cls.instances[-1].anomaly
        return f"Decide: {title_of(latest)}." + (f" {latest.detail}." if latest.detail else "")
    return f"Decide: {cls.title}."


def raise_decision(
    triage: Triage, cls: ErrorClass, rules: StandingRules, *, now: datetime, tend: int
) -> Decision:
    triage.decision_counter += 1
    decision = Decision(
        id=f"d-{triage.decision_counter}",
        class_id=cls.id,
        kind=cls.kind,
        owner=_owner(cls, rules),
        verdicts=list(VERDICTS[cls.kind]),
        question=_question(cls),
        raised_at=now,
        raised_tend=tend,
    )
    triage.decisions.append(decision)
    return decision


__all__ = [
    "ANSWERED_KEPT",
    "Anomaly",
    "AnomalyKind",
    "ClassState",
    "Decision",
    "EDITS",
    "ErrorClass",
    "INTERRUPTIONS",
    "Instance",
    "LEDGER_KINDS",
    "LIVE_VERDICTS",
    "LOG_VERDICTS",
    "LedgerOp",
    "PROPOSABLE",
    "RUN_STEPS",
    "Role",
    "Ruling",
    "RunStep",
    "SAMPLE_VERDICTS",
    "StandingRules",
    "Triage",
    "TriageOutcome",
    "VERDICTS",
    "WINDOW",
    "absorb",
    "class_id_of",
    "deepest_frame",
    "error_type_of",
    "forget_settled",
    "frame_label",
    "is_interruption",
    "needs_effect",
    "raise_decision",
    "run_step",
    "signature_of",
    "standing_verdict",
    "state_after",
    "stuck_cancel_allowed",
    "title_of",
]
