"""What the Temporal web UI shows of a run, pure: a static summary and details set at start
(workspace, definition, tasks), the workflow's current details rewritten at every tend, and a
summary per activity and timer that names what it does ("observe 4 workers", "next tend in
10m"). Steward's links open the run's page on its *User Metadata* tab, where these are.

How the UI (2.54, the dev server's) renders them, checked in Chromium (tests/e2e/test_web_ui.py
keeps a screenshot): Markdown in a frame of its own, a newline is a line break; lists need a
blank line before them; a table is a real table but its cells have no padding, so its columns
run together ("samplesenrorsin flight"): columns go in a fenced block, monospace and aligned
with spaces; "3/6" outside code turns into a superscript fraction, so prose says "3 of 6";
HTML and entities are shown as text. The Current Details pane is half the page: about 66
monospace characters fit at 1400 px, so the table keeps to the columns below and cuts long
task names.

None of it is part of the history's commands: it rides along as metadata, so it changes
nothing a replay compares.
"""

from __future__ import annotations

from typing import Any

from steward.workflows.contracts import TERMINAL_PHASES, RunState, TaskSpec
from steward.workflows.names import Activity
from steward.workflows.options import format_duration
from steward.workflows.run.eval_run_state import describe_state
from steward.workflows.views.ended import ended_state
from steward.workflows.views.status_view import task_cells, task_rows
from steward.workflows.views.vocabulary import tends_text

# The per-task columns the web UI's details show (vocabulary.py's words, a subset).
UI_COLUMNS = ("task", "state", "samples", "errors", "in flight", "setpoint")
NAME_WIDTH = 18  # a longer task name is cut with "…" (the pane is half the page)
MOST_DECISIONS = 10


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def columns(header: tuple[str, ...], rows: list[list[str]]) -> list[str]:
    """A fenced block of aligned columns (two spaces between them): the UI pads no table cell."""
    cut = [[c if len(c) <= NAME_WIDTH else c[: NAME_WIDTH - 1] + "…" for c in r] for r in rows]
    widths = [max(len(r[i]) for r in [list(header), *cut]) for i in range(len(header))]

    def line(cells: list[str]) -> str:
        return "  ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)).rstrip()

    return ["```", line(list(header)), *(line(r) for r in cut), "```"]


def page_url(workflow_page: str | None, run_id: str) -> str | None:
    """An execution's page on its *User Metadata* tab, from the workflow's page (the UI
    opens the bare one on the latest execution's timeline: it keeps no tab across the
    redirect)."""
    return f"{workflow_page}/{run_id}/user-metadata" if workflow_page else None


def static_summary(workspace: str, tasks: list[TaskSpec] | None) -> str:
    name = workspace.rstrip("/").split("/")[-1]
    count = f" · {_plural(len(tasks), 'task')}" if tasks is not None else ""
    return f"Steward run · {name}{count} — where it stands: Current Details"


def static_details(workspace: str, definition: str, tasks: list[TaskSpec] | None) -> str:
    lines = [f"**Workspace** `{workspace}`", f"**Definition** `{definition}`"]
    if tasks:
        lines.append("")
        lines += columns(
            ("task", "model", "samples × epochs"),
            [[t.name, t.model, f"{t.samples} × {t.epochs}"] for t in tasks],
        )
    return "\n".join(lines)


def headline(state: RunState) -> str:
    """The first line: the state, samples done of planned, open decisions."""
    decisions = len(state.triage.open_decisions())
    said = [
        f"**{describe_state(state)}**",
        f"{state.samples_done} of {state.samples_total} samples done",
    ]
    if decisions:
        said.append(_plural(decisions, "open decision"))
    return " · ".join(said)


def next_step(state: RunState, next_tend: str) -> str:
    """What the person reading the page does next, with its command."""
    if state.phase in TERMINAL_PHASES:
        return "nothing: the run has ended (`steward launch` starts a new one)"
    if state.triage.open_decisions():
        return "answer the open decisions below (`steward collect` says each with its command)"
    if state.phase == "finished":
        return "`steward signoff --check`, then `steward signoff --by NAME`"
    if state.paused:
        return "`steward resume` when it should start task workers again"
    return f"nothing needs you; {next_tend}"


def current_details(workspace: str, state: RunState, next_tend: str) -> str:
    """The run as it stands, for the web UI's page of the workflow: state, samples, open
    decisions and the next step first, then the tasks (a continued run has no static summary
    of its own: Temporal does not carry it over, so the workspace is here too)."""
    state = ended_state(state)  # an ended run reads as ended: nothing pending, in flight or timed
    lines = [headline(state), f"**Next:** {next_step(state, next_tend)}"]
    if state.error:
        lines.append(f"**Error:** {state.error}")
    if state.cancel_reason is not None:
        lines.append(f"**Cancelled:** {state.cancel_reason or 'no reason given'}")
    if state.paused:
        lines.append(f"**Paused:** {state.pause_reason or 'no reason given'}")
    if state.tasks:
        lines.append("")
        lines += columns(
            UI_COLUMNS,
            [[task_cells(r)[label] for label in UI_COLUMNS] for r in task_rows(state.tasks)],
        )
    decisions = state.triage.open_decisions()
    if decisions:
        lines += [""]
        lines += [
            f"- **{d.id}** ({d.owner}): {d.question} — `steward rule {d.id} "
            f"<{'|'.join(d.verdicts)}>`"
            for d in decisions[:MOST_DECISIONS]
        ]
        if len(decisions) > MOST_DECISIONS:
            lines.append(f"- … and {len(decisions) - MOST_DECISIONS} more (`steward collect`)")
    lines += ["", f"Workspace `{workspace}` · {tends_text(state.tend_count)}"]
    return "\n".join(lines)


def handed_over(workspace: str, state: RunState) -> str:
    """An execution's last details, as it continues as new: a link to it (`launch` prints
    the first execution's) then says where the run went on."""
    return "\n".join(
        [
            "**continued as new** · this execution's history was full: the run goes on in its "
            "latest execution (*Latest Execution* above; `steward status` prints its link)",
            f"As of the handover: {headline(state)}",
            "",
            f"Workspace `{workspace}` · {tends_text(state.tend_count)}",
        ]
    )


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
