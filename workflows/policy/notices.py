"""What to tell the operator, and when. Pure: the workflow passes `now`.

At most one message per tend: everything due is gathered into the outbox and delivered as one;
an undelivered outbox is tried again next tend.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from steward.workflows.contracts import Notice, RunState


def decision_notices(state: RunState) -> list[Notice]:
    """Open decisions the operator should hear about and has not (marks them notified)."""
    notices = []
    for decision in state.triage.open_decisions():
        if decision.notified or not decision.for_operator:
            continue
        decision.notified = True
        routed = ""
        if decision.routed:
            routed = f" (routed to you: {decision.routed_because or 'no agent has looked'})"
        notices.append(
            Notice(
                kind="decision",
                text=f"{decision.id}: {decision.question}{routed} — answer with "
                f"`steward rule {decision.id} <{'|'.join(decision.verdicts)}>`",
            )
        )
    return notices


def heartbeat_notice(
    state: RunState, heartbeat: float | Literal[False], now: datetime
) -> Notice | None:
    """An hourly (configurable) line while the run progresses; the first one an interval
    after the run started."""
    if heartbeat is False or state.phase != "running" or state.paused:
        return None
    since = state.last_heartbeat_at or state.started_at
    if since is None or (now - since).total_seconds() < heartbeat:
        return None
    state.last_heartbeat_at = now
    return Notice(
        kind="heartbeat",
        text=f"Heartbeat: running, {state.samples_done}/{state.samples_total} samples, "
        f"{len(state.triage.open_decisions())} decision(s) open.",
    )


def tend_problem_notice(state: RunState, problem: str) -> Notice | None:
    """A tend that could not run: told once per distinct reason."""
    if problem in state.tend_problems:
        return None
    state.tend_problems.append(problem)
    return Notice(kind="tend_failed", text=f"A tend could not run: {problem}")


# A tend_failed notice of its own: the tend ran, but its files could not be written (the text,
# not a kind of its own, tells it apart: the message's headline says which).
UNWRITABLE = "The workspace cannot be written"


def workspace_notice(state: RunState, problem: str) -> Notice | None:
    """A workspace that cannot be written: told once per episode, which lasts until a write
    succeeds (`state.workspace_problem` is set until then)."""
    if state.workspace_problem is not None:
        return None
    return Notice(
        kind="tend_failed",
        text=f"{UNWRITABLE} ({problem}). The run goes on and keeps its journal; the next tend "
        "after you fix it writes everything.",
    )


def message(workspace_name: str, outbox: list[Notice]) -> tuple[str, str]:
    """(title, body) of the one message that carries the outbox."""
    kinds = {n.kind for n in outbox}
    if "signed_off" in kinds:
        headline = "signed off"
    elif "decision" in kinds:
        count = sum(1 for n in outbox if n.kind == "decision")
        headline = f"{count} decision(s) need you"
    elif "finished" in kinds:
        headline = "finished"
    elif "tend_failed" in kinds:
        unwritable = all(n.text.startswith(UNWRITABLE) for n in outbox if n.kind == "tend_failed")
        headline = "cannot write the workspace" if unwritable else "cannot tend"
    elif "cancelled" in kinds:
        headline = "cancelled"
    elif "orphaned" in kinds:
        headline = "orphaned: its workspace is gone"
    elif "host_lost" in kinds:
        headline = "a host was lost"
    elif "host_back" in kinds:
        headline = "a host is back"
    else:
        headline = "heartbeat"
    body = "\n".join(f"- {n.text}" for n in outbox)
    return f"Steward · {workspace_name}: {headline}", body
