"""Small pure helpers over the run state shared by the workflow and its renderers."""

from __future__ import annotations

from datetime import datetime

from steward.workflows.contracts import TERMINAL_PHASES, UNCHANGEABLE_PHASES, RunState
from steward.workflows.policy.blockers import Blocker, run_phase_blocker
from steward.workflows.policy.rulings import pending_actions, signoff_items
from steward.workflows.policy.run_policy import settled_logs, unscanned_logs
from steward.workflows.policy.triage_ledger import ledger_orders
from steward.workflows.policy.worker_watch import rulings_waiting


def visible_state(state: RunState) -> str:
    """The one word the web UI's list and `steward runs` show."""
    return "paused" if state.paused and state.phase == "running" else state.phase


def describe_state(state: RunState) -> str:
    word = visible_state(state)
    if word == "queued":
        cap = state.capacity
        return f"queued · pos {cap.position or '?'}" + (f" ({cap.reason})" if cap.reason else "")
    return {"stalled": "stalled (needs a decision)"}.get(word, word)


def effective_interval(phase: str, tend_interval: float) -> float:
    """A finished run waiting for signoff has nothing to converge: it tends at least every
    10 minutes (commands wake it at once)."""
    return max(tend_interval, 600.0) if phase == "finished" else tend_interval


def waits_for_commands(state: RunState) -> bool:
    """A finished run with nothing left to do on its own (no live worker, no undelivered
    notice, no unscanned log, no ruling to carry out, no agent item still to route to the
    operator if no agent looks) needs no timer: a command or a watch wakes it."""
    return (
        state.phase == "finished"
        and not state.workers
        and not state.outbox
        and not unscanned_logs(state)
        and not pending_actions(state.triage, settled_logs(state))
        and not ledger_orders(state.triage, settled_logs(state))
        and not any(d.open and d.owner == "agent" and not d.routed for d in state.triage.decisions)
    )


def unsupervised(state: RunState, tend_interval: float, now: datetime) -> str | None:
    """Why the run is unsupervised (no tend for two intervals: the Steward worker is down),
    or None. Judged by the reader against its own clock: a stopped workflow cannot say so."""
    if (
        state.phase in TERMINAL_PHASES | {"capturing", "queued"}
        or state.last_tend_at is None
        or not state.timer.armed  # disarmed: it tends only when asked
        or state.next_tend_at is None  # nothing scheduled: it waits for commands
    ):
        return None
    interval = effective_interval(state.phase, state.timer.interval or tend_interval)
    idle = (now - state.last_tend_at).total_seconds()
    if idle <= 2 * interval:
        return None
    return (
        f"unsupervised: no tend for {int(idle)} s (more than two {int(interval)} s intervals); "
        "is the Steward worker running? (`steward worker status`)"
    )


def signoff_check(state: RunState, *, scan_waits: bool) -> list[Blocker]:
    """Everything that stands between the run and its signoff, each with its owner and the
    command that clears it (`scan_waits`: a scan running or about to run will read the
    unscanned logs, and a signoff waits for it rather than being refused). The signoff's
    refusal sentence is this list grouped (blockers.refusal_lines)."""
    if state.phase in UNCHANGEABLE_PHASES:
        return [run_phase_blocker(state.phase)]
    unsettled = [t for t in state.tasks if t.phase not in ("complete", "given_up")]
    return signoff_items(
        state.triage,
        open_tasks=[t.spec.name for t in unsettled],
        stalled_tasks=[t.spec.name for t in unsettled if t.phase == "stalled"],
        unscanned=bool(unscanned_logs(state)) and not scan_waits,
        scan_problem=state.scan_problem,
        settled_logs=settled_logs(state),
        waiting_for=rulings_waiting(state),
        paused=state.paused,
        phase=state.phase,
    )
