"""What the run shows an agent that collects its decisions (`steward collect`). Pure."""

from __future__ import annotations

from typing import Any

from steward.workflows.contracts import CollectView, RunSettings, RunState
from steward.workflows.policy.blockers import answer_command, owner_now
from steward.workflows.policy.decisions import Decision


def collect_view(state: RunState, settings: RunSettings, since: int) -> CollectView:
    triage = state.triage
    return CollectView(
        decisions=[decision_view(state, d) for d in triage.decisions if d.open],
        classes=[
            {
                "id": c.id,
                "kind": c.kind,
                "title": c.title,
                "signature": c.signature,
                "state": c.state,
                "instances": c.count,
                "proposal": c.proposal.model_dump(mode="json") if c.proposal else None,
                "ruling": c.ruling.model_dump(mode="json") if c.ruling else None,
            }
            for c in triage.classes
        ],
        events=[e for e in state.pending_journal if e.seq > since],
        cursor=state.journal_seq,
        policies=settings.rules.policies,
        phase=state.phase,
        unattended=any(d.routed for d in triage.open_decisions()),
    )


def decision_view(state: RunState, decision: Decision) -> dict[str, Any]:
    cls = state.triage.find_class(decision.class_id)
    instances = cls.instances if cls else []
    return {
        "id": decision.id,
        "kind": decision.kind,
        # Who owns it now: an agent's item routed to the operator is theirs (the agent may
        # still propose on it); `raised_for` is whose it was when raised.
        "owner": owner_now(decision),
        "raised_for": decision.owner,
        "routed": decision.routed,
        "routed_at": decision.routed_at.isoformat() if decision.routed_at else None,
        "routed_because": decision.routed_because,
        "command": answer_command(decision),
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
        # a ledger class shows its newest few; the triage ledger in .steward/ holds them all
        "instances_held": cls.count if cls else 0,
    }
