"""What `steward status --json` shows: a documented, versioned shape for agents and scripts,
`steward.status/1`, pure over the `RunStatus` the run's query returns. Keys are only ever added
within a version; a change of meaning or a removal is a new version. The run's whole internal
state is not part of it (`status --json --full` adds it, unversioned).

| key | what |
|---|---|
| schema | "steward.status/1" |
| workflow_id, workspace, web_ui | which run, where its files are, its Temporal web UI page |
| phase, phase_text | the run's phase (a word of vocabulary.PHASES, as `status` says it); the same for people (queue position, "paused") |
| paused, pause_reason | no new workers are started while paused |
| cancel_reason | why the run was cancelled ("" when no reason was given; null: not cancelled) |
| samples | {done, total} across the run |
| tasks | per task: name, model, state, done, total, in_flight, errors, setpoint, pinned, attempts, host (the columns of vocabulary.TASK_COLUMNS, by key) |
| decisions | open decisions: id, kind, owner (now), raised_for, question, verdicts, command (to answer, for its owner), raised_at, routed, routed_at, routed_because, route_at |
| signoff_blockers | what stands between the run and its signoff: kind, what, owner (operator / agent / run), command, ids (`steward signoff --check` shows the same list) |
| tends, last_tend_at | tends so far, and when the last ended |
| next_tend_at, next_tend | when the timer tends next (null: no timer is due) and why, in words |
| route_after, last_collect_at | seconds an agent's open item waits for a collect before it goes to the operator, and when an agent last collected |
| problems | what keeps the run's machinery from working, one sentence each |
| unsupervised | why nothing seems to be tending the run, or null |
| signed_off | {by, at} once signed off, else null |
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from steward.workflows.contracts import ENDING_PHASES, RunStatus, TaskState
from steward.workflows.options import format_duration
from steward.workflows.policy.blockers import Blocker, answer_command, owner_now
from steward.workflows.policy.decisions import Decision
from steward.workflows.policy.rulings import route_due
from steward.workflows.run.eval_run_state import describe_state, signoff_check, unsupervised
from steward.workflows.views.ended import as_ended

SCHEMA = "steward.status/1"


def agent_status(status: RunStatus, now: datetime) -> dict[str, Any]:
    """The run as `steward.status/1` says it (`now`: the reader's clock, for `unsupervised`)."""
    status = as_ended(status)  # an ended run: no timer, nothing pending or in flight
    state = status.state
    next_at, next_text = next_tend(status)
    return {
        "schema": SCHEMA,
        "workflow_id": status.workflow_id,
        "workspace": status.workspace,
        "web_ui": status.web_ui,
        "phase": state.phase,
        "phase_text": describe_state(state),
        "paused": state.paused,
        "pause_reason": state.pause_reason,
        "cancel_reason": state.cancel_reason,
        "samples": {"done": state.samples_done, "total": state.samples_total},
        "tasks": [task_view(t) for t in state.tasks],
        "decisions": [
            decision_view(status, d) for d in state.triage.decisions if d.open
        ],
        "signoff_blockers": [b.model_dump(mode="json") for b in blockers_of(status)],
        "tends": state.tend_count,
        "last_tend_at": _iso(state.last_tend_at),
        "next_tend_at": _iso(next_at),
        "next_tend": next_text,
        "route_after": status.route_after,
        "last_collect_at": _iso(state.triage.last_collect_at),
        "problems": problems(status),
        "unsupervised": unsupervised(state, status.tend_interval, now),
        "signed_off": (
            {"by": state.signoff.by, "at": _iso(state.signoff.at)} if state.signoff else None
        ),
    }


def blockers_of(status: RunStatus) -> list[Blocker]:
    """What stands between the run and its signoff: the check the run's signoff makes, over the
    state its status query returned (with whether a scan will read what is not scanned yet)."""
    return signoff_check(status.state, scan_waits=status.scan_waits)


def task_view(task: TaskState) -> dict[str, Any]:
    return {
        "name": task.spec.name,
        "model": task.spec.model,
        "state": task.phase,
        "done": task.progress.done,
        "total": task.spec.planned_samples,
        "in_flight": task.progress.in_flight,
        "errors": task.progress.errored,
        "setpoint": task.max_samples,
        "pinned": task.pinned,
        "attempts": task.attempts,
        "host": task.host,
    }


def decision_view(status: RunStatus, decision: Decision) -> dict[str, Any]:
    due = None
    if status.route_after is not None:
        due = route_due(status.state.triage, decision, status.route_after)
    return {
        "id": decision.id,
        "kind": decision.kind,
        "owner": owner_now(decision),
        "raised_for": decision.owner,
        "question": decision.question,
        "verdicts": decision.verdicts,
        "command": answer_command(decision),
        "raised_at": _iso(decision.raised_at),
        "routed": decision.routed,
        "routed_at": _iso(decision.routed_at),
        "routed_because": decision.routed_because,
        "route_at": _iso(due),  # goes to the operator then, unless an agent collects first
    }


def next_tend(status: RunStatus) -> tuple[datetime | None, str]:
    """When the run tends next on its timer (None: no timer is due) and why, in words. Never
    a time beside a timer that will not fire."""
    state = status.state
    if state.phase in ENDING_PHASES:
        return None, "none: the run has ended"
    if state.phase == "queued":
        return None, "when the run is admitted (it waits for capacity)"
    if not state.timer.armed:
        return None, "timer disarmed: tends on `steward tend` and on events"
    if state.next_tend_at is None:
        return None, "on an event (a command, a worker's exit); no timer due"
    interval = state.timer.interval or status.tend_interval
    return (
        state.next_tend_at,
        f"at {state.next_tend_at:%H:%M:%S} UTC (timer every {format_duration(interval)}, "
        "sooner on events or when an agent's item is due to go to the operator)",
    )


def problems(status: RunStatus) -> list[str]:
    """What keeps the run's machinery from working, one sentence each."""
    state = status.state
    said = [
        (state.error, "the run failed: {}"),
        (state.workspace_problem, "workspace not written: {}"),
        (state.tend_problem, "the last tend stopped short: {}"),
        (state.options_problem, "options not applied (the last good ones are kept): {}"),
        (state.scan_problem, "the integrity scan failed: {}"),
    ]
    return [template.format(text) for text, template in said if text]


def _iso(at: datetime | None) -> str | None:
    return at.isoformat() if at else None
