"""What the Temporal web UI shows of a run, pure: a static summary and details set at start
(workspace, definition, tasks), the workflow's current details rewritten at every tend (phase,
per-task progress, open decisions, next tend; Markdown, which the UI renders), and a summary
per activity and timer that names what it does ("observe 4 workers", "next tend in 10m").

None of it is part of the history's commands: it rides along as metadata, so it changes
nothing a replay compares.
"""

from __future__ import annotations

from typing import Any

from steward.workflows.contracts import RunState, TaskSpec
from steward.workflows.names import Activity
from steward.workflows.options import format_duration
from steward.workflows.run.eval_run_state import describe_state
from steward.workflows.views.status_view import task_cells, task_rows
from steward.workflows.views.vocabulary import tends_text

# The per-task columns the web UI's details show (vocabulary.py's words, a subset).
UI_COLUMNS = ("task", "state", "samples", "errors", "in flight", "setpoint")


def static_summary(workspace: str, tasks: list[TaskSpec] | None) -> str:
    name = workspace.rstrip("/").split("/")[-1]
    count = f", {len(tasks)} task(s)" if tasks is not None else ""
    return f"Steward run · {name}{count}"


def static_details(workspace: str, definition: str, tasks: list[TaskSpec] | None) -> str:
    lines = [f"**Workspace** `{workspace}`", f"**Definition** `{definition}`"]
    if tasks:
        lines.append("")
        lines.append("| task | model | samples × epochs |")
        lines.append("|---|---|---|")
        lines += [f"| {t.name} | {t.model} | {t.samples} × {t.epochs} |" for t in tasks]
    return "\n".join(lines)


def current_details(workspace: str, state: RunState, next_tend: str) -> str:
    """The run as it stands, for the web UI's page of the workflow (a continued run has no
    static summary of its own: Temporal does not carry it over, so the workspace is here too)."""
    lines = [
        f"**{describe_state(state)}** · {state.samples_done}/{state.samples_total} samples · "
        f"{tends_text(state.tend_count)} · {next_tend}",
        "",
        f"Workspace `{workspace}`",
    ]
    if state.error:
        lines.append(f"\n**Error** {state.error}")
    if state.tasks:
        lines += [
            "",
            "| " + " | ".join(UI_COLUMNS) + " |",
            "|" + "---|" * len(UI_COLUMNS),
        ]
        lines += [
            "| " + " | ".join(task_cells(r)[label] for label in UI_COLUMNS) + " |"
            for r in task_rows(state.tasks)
        ]
    decisions = state.triage.open_decisions()
    if decisions:
        lines += ["", f"**{len(decisions)} open decision(s)** (`steward collect`):"]
        lines += [f"- {d.id} ({d.owner}): {d.question}" for d in decisions[:10]]
    return "\n".join(lines)


def next_tend_text(state: RunState, interval: float | None) -> str:
    if state.next_tend_at is None or interval is None:
        return "next tend on an event"
    return f"next tend at {state.next_tend_at:%H:%M:%S} UTC (every {format_duration(interval)})"


_SUMMARIES = {
    Activity.OBSERVE_RUN: lambda arg: (
        f"observe {len(arg.workers)} worker(s), {len(arg.tasks)} open task(s)"
    ),
    Activity.WRITE_WORKSPACE: lambda arg: "write status.md and the journal",
    Activity.NOTIFY: lambda arg: "notify (Apprise)",
    Activity.STOP_WORKERS: lambda arg: f"stop {len(arg.workers)} worker(s)",
    Activity.SCAN_TRANSCRIPTS: lambda arg: f"scan the transcripts of {len(arg.log_paths)} log(s)",
    Activity.WATCH_WORKER: lambda arg: (
        f"watch worker {arg.worker.worker_id} (pid {arg.worker.pid})"
    ),
    Activity.PROBE_PROVIDER: lambda arg: (
        f"probe {', '.join(arg.models)} (a rerun waits for an answer)"
    ),
}


def activity_summary(name: str, arg: Any) -> str:
    """What an activity does, in a few words (its name, when nothing more is known)."""
    describe = _SUMMARIES.get(name)
    if describe is not None:
        try:
            return describe(arg)
        except (AttributeError, TypeError):
            pass
    return name.replace("_", " ")
