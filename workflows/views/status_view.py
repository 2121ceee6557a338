"""Render a run's state as the operator's page (status.md) and as table rows. Pure."""

from __future__ import annotations

from datetime import datetime

from steward.workflows.contracts import RunState, RunStatus, TaskState
from steward.workflows.options import format_duration
from steward.workflows.policy.deferrals import waiting_text
from steward.workflows.policy.run_policy import llm_cost
from steward.workflows.run.eval_run_state import describe_state
from steward.workflows.views.agent_status import next_tend
from steward.workflows.views.ended import as_ended
from steward.workflows.views.vocabulary import COLUMN_LABELS, setpoint_text, tends_text


def _when(at: datetime | None) -> str:
    return at.strftime("%Y-%m-%d %H:%M:%S UTC") if at else "—"


def task_rows(tasks: list[TaskState]) -> list[dict]:
    return [
        {
            "task": t.spec.name,
            "model": t.spec.model,
            "phase": t.phase,
            "done": t.progress.done,
            "total": t.spec.planned_samples,
            "errored": t.progress.errored,
            "in_flight": t.progress.in_flight,
            "attempts": t.attempts,
            "max_samples": t.max_samples,
            "pinned": t.pinned,
            "host": t.host,  # hosts: where its last worker ran, when not the workspace's host
        }
        for t in tasks
    ]


def task_cells(row: dict) -> dict[str, str]:
    """A task's row (task_rows) as the text of each column, by its label (vocabulary.py)."""
    return {
        "task": row["task"],
        "model": row["model"],
        "state": row["phase"],
        "samples": f"{row['done']}/{row['total']}",
        "errors": str(row["errored"]),
        "in flight": str(row["in_flight"]),
        "setpoint": setpoint_text(row["max_samples"], row["pinned"]),
        "attempts": str(row["attempts"]),
    }


def hosts_line(state: RunState) -> str | None:
    """Where the task workers run when some are on other hosts, and the hosts lost."""
    placed: dict[str, int] = {}
    for worker in state.workers.values():
        if worker.host:
            placed[worker.host] = placed.get(worker.host, 0) + 1
    if not placed and not state.lost_hosts:
        return None
    parts = [f"{n} worker(s) on {host}" for host, n in sorted(placed.items())]
    parts += [
        f"{host} lost (silent since {at:%Y-%m-%d %H:%M:%S} UTC)"
        for host, at in sorted(state.lost_hosts.items())
    ]
    return "; ".join(parts)


def scan_line(state: RunState) -> str | None:
    """How far the integrity scan has got: complete tasks whose logs it read, and what it
    reads now (None until a task is complete)."""
    logs = [t.log for t in state.tasks if t.phase == "complete" and t.log]
    if not logs:
        return None
    scanned = sum(log in state.scanned_logs for log in logs)
    line = f"{scanned} of {len(logs)} complete task(s) scanned"
    if state.scanning_logs:
        line += f", scanning {len(state.scanning_logs)}"
    if state.scan_problem:
        line += f"; last attempt failed: {state.scan_problem}"
    return line


def connection_lines(state: RunState) -> list[str]:
    """Each provider's connection budget: its limit, where it came from, the workers' shares."""
    lines = []
    for endpoint, budget in sorted(state.providers.items()):
        origin = "learned" if budget.learned else "one process's default"
        shares = "/".join(str(s) for _, s in sorted(budget.shares.items()))
        lines.append(
            f"{endpoint}: {budget.limit} connections ({origin})"
            + (f", each task worker's ceiling {shares}" if shares else "")
            + (f", {budget.pushbacks} pushback(s)" if budget.pushbacks else "")
        )
    for rate_limit in state.rate_limits:
        lines.append(f"rate limit {rate_limit.line()}")
    for task in state.tasks:
        if task.spec.own_connections:
            lines.append(
                f"{task.spec.name}: its own {task.spec.own_connections}, kept (the definition "
                "set it; the run's budget does not override it)"
            )
    return lines


def cost_line(state: RunState) -> str | None:
    """LLM cost and reserved capacity-time, side by side (None before anything was spent)."""
    llm = llm_cost(state)
    if not llm.models and not state.cost.gi_minutes:
        return None
    models = "; ".join(
        f"{model} {t.input + t.cache_read + t.cache_write:,} in / {t.output:,} out"
        + (f" ({t.cached_share:.0%} cached)" if t.cache_read else "")
        for model, t in sorted(llm.models.items())
    )
    usd = state.cost.usd
    dollars = f"${usd:,.4g}" if usd is not None else "$ unknown"
    if state.cost.unpriced and usd is not None:
        dollars += f" (no price for {', '.join(state.cost.unpriced)})"
    return (
        f"LLM {llm.total_tokens():,} tokens, {dollars}"
        + (f" [{models}]" if models else "")
        + f" · reserved capacity {state.cost.gi_minutes:,.1f} Gi·min (sandbox memory × time held)"
    )


def render_status_markdown(status: RunStatus) -> str:
    status = as_ended(status)  # an ended run: no timer, nothing pending or in flight
    state = status.state
    next_at, next_said = next_tend(status)
    lines = [
        f"# Run status: {describe_state(state)}",
        "",
        f"- Workspace: `{status.workspace}`",
        f"- Workflow: `{status.workflow_id}`" + (f" — {status.web_ui}" if status.web_ui else ""),
        f"- Progress: {state.samples_done} / {state.samples_total} samples",
        f"- Started: {_when(state.started_at)}",
        f"- Last tend: {_when(state.last_tend_at)} ({tends_text(state.tend_count)})",
        "- Next tend: "
        + (
            f"{_when(next_at)} (every {format_duration(status.tend_interval)})"
            if next_at
            else next_said
        ),
        f"- Logs: `{state.log_dir or '—'}`",
    ]
    if state.paused:
        lines.append(
            f"- **Paused**: {state.pause_reason or 'no reason given'} (`steward resume` to continue)"
        )
    if state.sandbox_budget is not None:
        lines.append(
            f"- Sandbox budget: {state.sandbox_budget} (summed setpoints of sandboxed tasks)"
        )
    spent = cost_line(state)
    if spent:
        lines.append(f"- Cost: {spent}")
    scanned = scan_line(state)
    if scanned:
        lines.append(f"- Scan: {scanned}")
    placed = hosts_line(state)
    if placed:
        lines.append(f"- Hosts: {placed}")
    lines += [f"- Connection budget: {line}" for line in connection_lines(state)]
    if state.reused:
        lines.append(f"- From the log store (not run): {', '.join(state.reused)}")
    if state.drift:
        lines.append(
            "- **Drift**: the definition was edited but not launched; `steward launch` would: "
            + "; ".join(state.drift)
        )
    cap = state.capacity
    if cap.domain_id is not None:
        held = ", ".join(f"{k} {v:g}" for k, v in cap.held.items()) or "nothing"
        lines.append(
            f"- Capacity: {cap.backend} (`{cap.domain_id}`), holds {held}"
            + (f"; bound from {cap.bound_source}" if cap.bound_source else "")
        )
    if state.ramp_hold:
        lines.append(
            f"- **Ramp held**: {state.ramp_hold_reason or 'no reason given'} (`steward ramp resume`)"
        )
    for deferral in state.deferrals:
        lines.append(
            f"- **Waiting for the provider**: {waiting_text(deferral)}; next probe "
            f"{_when(deferral.next_probe_at)}"
            + (f" (last: {deferral.last_problem})" if deferral.last_problem else "")
        )
    if state.error:
        lines.append(f"- **Error**: {state.error}")
    if state.workspace_problem:  # seen when one of the files could still be written
        lines.append(f"- **Workspace not written**: {state.workspace_problem}")
    if state.tend_problem:
        lines.append(f"- **Last tend stopped short**: {state.tend_problem}")
    if state.options_problem:
        lines.append(
            f"- **Options not applied** (the last good ones are kept): {state.options_problem}"
        )
    if state.cancel_reason is not None:
        lines.append(f"- Cancelled: {state.cancel_reason or 'no reason given'}")
    stalled = [  # with what their workers die of, when they said
        f"{t.spec.name} ({t.exit_cause})" if t.exit_cause else t.spec.name
        for t in state.tasks
        if t.phase == "stalled"
    ]
    if stalled:
        lines.append(
            f"- **Needs you**: given up after repeated worker deaths: {', '.join(stalled)}"
        )
    lines += [
        "",
        "| " + " | ".join(COLUMN_LABELS) + " |",
        "|" + "---|" * len(COLUMN_LABELS),
    ]
    for row in task_rows(state.tasks):
        cells = task_cells(row)
        if row["host"]:
            cells["state"] += f" on {row['host']}"
        lines.append("| " + " | ".join(cells[label] for label in COLUMN_LABELS) + " |")
    lines += _decision_lines(state)
    return "\n".join(lines) + "\n"


def _decision_lines(state: RunState) -> list[str]:
    triage = state.triage
    lines: list[str] = []
    open_decisions = triage.open_decisions()
    if open_decisions:
        lines += ["", "## Needs a decision", ""]
        for d in open_decisions:
            because = d.routed_because or "no agent has looked"
            owner = f"agent's, routed to you: {because}" if d.routed else d.owner
            lines.append(
                f"- **{d.id}** ({owner}): {d.question} — `steward rule {d.id} "
                f"<{'|'.join(d.verdicts)}>`"
            )
    if triage.classes:
        lines += [
            "",
            "## Error classes",
            "",
            "| class | kind | what | instances | state | ruling |",
            "|---|---|---|---|---|---|",
        ]
        for c in triage.classes:
            ruling = f"{c.ruling.verdict} by {c.ruling.by}" if c.ruling else "—"
            if c.ruling is not None and c.ruling.until is not None:
                ruling += " (once the provider answers)"
            lines.append(f"| {c.id} | {c.kind} | {c.title} | {c.count} | {c.state} | {ruling} |")
    if state.signoff:
        lines += [
            "",
            f"**Signed off** by {state.signoff.by} at {_when(state.signoff.at)}: "
            f"{len(state.signoff.logs)} log(s).",
        ]
    return lines
