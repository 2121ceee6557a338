"""Rich renderings of run state for people."""

from __future__ import annotations

from datetime import UTC, datetime

from rich import box
from rich.markup import escape
from rich.table import Table

from steward.cli.output import console
from steward.workflows.contracts import TERMINAL_PHASES, RunStatus, TaskSpec, TendSummary
from steward.workflows.options import format_duration
from steward.workflows.policy.worker_watch import rulings_waiting
from steward.workflows.run.eval_run_state import describe_state, unsupervised
from steward.workflows.views.agent_status import blockers_of, next_tend
from steward.workflows.views.collect_text import collect_lines
from steward.workflows.views.ended import as_ended
from steward.workflows.views.status_view import (
    connection_lines,
    cost_line,
    hosts_line,
    scan_line,
    task_cells,
    task_rows,
)
from steward.workflows.views.vocabulary import COLUMN_LABELS, tends_text


def _when(at) -> str:
    return at.strftime("%H:%M:%S") if at else "—"


def _short_id(identifier: str, width: int | None) -> str:
    """Inspect's `{file}@{name}#{args_hash}/{model}/{config_hash}` without the file and the
    model (a column of its own), its hashes cut to `width` (None: whole)."""
    rest = identifier.rpartition("@")[2]
    head, slash, tail = rest.partition("/")
    if not slash:
        return rest
    name, _, args = head.partition("#")
    config = tail.rpartition("/")[2]

    def cut(text: str) -> str:
        return text if width is None else text[:width]

    return f"{name}#{cut(args)}·{cut(config)}" if args else f"{name}·{cut(config)}"


def short_ids(identifiers: list[str]) -> list[str]:
    """Task identifiers short enough for a table yet told apart: the task's name with the
    heads of its args hash and its configuration hash, longer only where they would collide
    (`--json` has them whole)."""
    wanted = len(set(identifiers))
    for width in (8, 12, None):
        shown = [_short_id(i, width) for i in identifiers]
        if len(set(shown)) == wanted:
            return shown
    without_file = [i.rpartition("@")[2] for i in identifiers]
    return without_file if len(set(without_file)) == wanted else identifiers


def print_link(label: str, target: str) -> None:
    """A URL or path on a line Rich never breaks (a terminal can still click or copy it);
    alone on the next line when the label would push it past the width."""
    if len(label) + 2 + len(target) <= console.width:
        console.print(f"{label}: {target}", soft_wrap=True, highlight=False, markup=False)
    else:
        console.print(f"{label}:", highlight=False, markup=False)
        console.print(target, soft_wrap=True, highlight=False, markup=False)


def print_tasks(tasks: list[TaskSpec]) -> None:
    shown_ids = short_ids([t.identifier for t in tasks])
    # Compact like the status table; the identifier is never cut (its hashes tell tasks apart).
    table = Table(
        title=f"{len(tasks)} task(s)", box=box.SIMPLE_HEAD, show_edge=False, padding=(0, 1, 0, 0)
    )
    for column in ("task", "model"):
        table.add_column(column, overflow="fold")
    table.add_column("samples x epochs", no_wrap=True)
    table.add_column("identifier", no_wrap=True, min_width=len(max(shown_ids, key=len, default="")))
    for t, shown in zip(tasks, shown_ids, strict=True):
        table.add_row(t.name, t.model, f"{t.samples} x {t.epochs}", shown)
    console.print(table)


def _next_tend(status: RunStatus) -> str:
    """The next tend as `status --json` says it (next_tend), in the status line's words."""
    state = status.state
    if state.phase in TERMINAL_PHASES:
        return ""
    at, said = next_tend(status)
    if at is None:
        return f"next tend: {said}"
    interval = state.timer.interval or status.tend_interval
    return f"next {_when(at)} (timer every {format_duration(interval)}; sooner on events)"


def _progress_age(status: RunStatus) -> str | None:
    """How old the running tasks' progress is (the oldest), and where it comes from."""
    running = {t.spec.identifier for t in status.state.tasks if t.phase == "running"}
    ages = [
        (status.read_at - at).total_seconds()
        for identifier, at in status.progress_at.items()
        if identifier in running and status.read_at is not None
    ]
    if not ages:
        return None
    source = "the workers' heartbeats" if status.live else "the last tend"
    return f"progress as of {max(0, int(max(ages)))}s ago at most ({source})"


def task_table(status: RunStatus, title: str | None = None) -> Table:
    """Each task's progress, in the columns and words of vocabulary.py (task and model share
    a cell)."""
    # Compact (spaces between columns, no frame) so eight columns fit 80 wide; a header is
    # never cut (min_width): the task / model cell gives way first.
    table = Table(title=title, box=box.SIMPLE_HEAD, show_edge=False, padding=(0, 1, 0, 0))
    table.add_column("task / model", no_wrap=True)
    shown = COLUMN_LABELS[2:]
    for column in shown:
        table.add_column(column, no_wrap=True, min_width=len(column))
    for row in task_rows(status.state.tasks):
        cells = task_cells(row)
        cells["task"] = f"{escape(row['task'])}\n[dim]{escape(row['model'])}[/]"
        if row["host"]:
            cells["state"] += f"\n[dim]on {row['host']}[/]"
        table.add_row(cells["task"], *(cells[label] for label in shown))
    return table


def waiting_table(status: RunStatus) -> Table:
    """What `status --wait` keeps on screen while it waits."""
    status = as_ended(status)
    state = status.state
    title = (
        f"{describe_state(state)}: {state.samples_done}/{state.samples_total} samples "
        f"({tends_text(state.tend_count)}) — waiting until it finishes, stalls or ends"
    )
    return task_table(status, title=title)


def print_status(status: RunStatus) -> None:
    status = as_ended(status)  # an ended run: no timer, nothing pending or in flight
    state = status.state
    console.print(
        f"[bold]{status.workspace}[/]  run [cyan]{status.workflow_id}[/]", highlight=False
    )
    console.print(
        f"state: [bold]{describe_state(state)}[/]   samples {state.samples_done}/{state.samples_total}   "
        f"{tends_text(state.tend_count)}, last {_when(state.last_tend_at)}   {_next_tend(status)}",
        highlight=False,
    )
    if state.cancel_reason is not None:
        console.print(
            f"cancelled: {escape(state.cancel_reason or 'no reason given')}", highlight=False
        )
    if state.paused:
        console.print(
            f"[yellow]paused[/]: {state.pause_reason or 'no reason given'}", highlight=False
        )
    if state.sandbox_budget is not None:
        console.print(f"sandbox budget: {state.sandbox_budget}", highlight=False)
    scanned = scan_line(state)
    if scanned:
        console.print(f"scan: {scanned}", highlight=False)
    placed = hosts_line(state)
    if placed:
        console.print(f"hosts: {placed}", highlight=False)
    for line in connection_lines(state):
        console.print(f"connections: {line}", highlight=False)
    spent = cost_line(state)
    if spent:
        console.print(f"cost: {spent}", highlight=False)
    if state.drift:
        console.print(
            "[yellow]drift[/]: the definition was edited but not launched; `steward launch` "
            "would: " + "; ".join(state.drift),
            highlight=False,
        )
    cap = state.capacity
    if cap.domain_id is not None:
        held = ", ".join(f"{k} {v:g}" for k, v in cap.held.items()) or "nothing"
        bound = f"; bound from {cap.bound_source}" if cap.bound_source else ""
        console.print(f"capacity: {cap.backend}, holds {held}{bound}", highlight=False)
    if state.ramp_hold:
        console.print(
            f"[yellow]ramp held[/]: {state.ramp_hold_reason or 'no reason given'}", highlight=False
        )
    if state.error:
        console.print(f"[red]error[/]: {state.error}", highlight=False)
    if state.workspace_problem:
        console.print(workspace_line(state.workspace_problem), highlight=False)
    if state.tend_problem:
        console.print(f"[red]last tend stopped short[/]: {state.tend_problem}", highlight=False)
    if state.options_problem:
        console.print(
            f"[red]options not applied[/] (the last good ones are kept): {state.options_problem}",
            highlight=False,
        )
    warning = unsupervised(state, status.tend_interval, datetime.now(UTC))
    if warning:
        console.print(f"[red]{warning}[/]", highlight=False)
    open_decisions = state.triage.open_decisions()
    if open_decisions:
        console.print(
            f"[yellow]{len(open_decisions)} decision(s) open[/]: "
            + ", ".join(f"{d.id} ({d.owner})" for d in open_decisions)
            + " — `steward collect`",
            highlight=False,
        )
    for task in state.tasks:
        if task.phase == "stalled" and task.exit_cause:
            # What its workers die of (with the fix, for an OS error), not only that they do.
            console.print(
                f"[red]stalled[/] {task.spec.name}: {escape(task.exit_cause)}", highlight=False
            )
    waiting = rulings_waiting(state)
    if waiting:
        console.print(
            "[yellow]rulings wait[/] for " + "; ".join(waiting) + " to exit", highlight=False
        )
    if state.signoff:
        console.print(
            f"signed off by {state.signoff.by} at {_when(state.signoff.at)}", highlight=False
        )
    elif state.phase == "finished":
        blocking = blockers_of(status)
        console.print(
            f"signoff: [yellow]{len(blocking)} blocker(s)[/] — `steward signoff --check`"
            if blocking
            else "signoff: [green]nothing blocks it[/] — `steward signoff --by NAME`",
            highlight=False,
        )
    if state.tasks:
        console.print(task_table(status))
        age = _progress_age(status)
        if age:
            console.print(age, highlight=False)
    if status.web_ui:
        print_link("web UI", status.web_ui)
    if status.web_ui_runs:
        print_link("all runs", status.web_ui_runs)


def workspace_line(problem: str) -> str:
    return (
        f"[red]workspace not written[/]: {problem} (the journal is kept; "
        "the next tend after you fix it writes everything)"
    )


def print_tend(summary: TendSummary, workspace_problem: str | None = None) -> None:
    parts = [
        f"Tend {summary.tend} done: {summary.phase}",
        f"samples {summary.samples_done}/{summary.samples_total}",
    ]
    for label, names in (
        ("spawned", summary.spawned),
        ("completed", summary.completed),
        ("restarted", summary.restarted),
        ("stalled", summary.stalled),
    ):
        if names:
            parts.append(f"{label}: {', '.join(names)}")
    if summary.paused:
        parts.append("paused")
    console.print(" · ".join(parts), highlight=False)
    if summary.problem:
        console.print(f"[red]problem[/]: {summary.problem}", highlight=False)
    if workspace_problem:
        console.print(workspace_line(workspace_problem), highlight=False)


def print_runs(rows: list[dict]) -> None:
    """One block per run: its workspace on a line of its own (never broken), then the rest."""
    console.print(f"{len(rows)} run(s)", highlight=False)
    for row in rows:
        state = row["state"]
        if row.get("position"):
            state = f"queued · pos {row['position']}" + (
                f" ({row['queue_reason']})" if row.get("queue_reason") else ""
            )
        console.print(str(row["workspace"]), soft_wrap=True, highlight=False, markup=False)
        console.print(
            f"  {state} · {row['samples_done']}/{row['samples_total']} samples · "
            f"started {(row['started'] or '—')[:19]} · {row['workflow_id']}",
            highlight=False,
            markup=False,
        )


def print_hosts(rows: list[dict]) -> None:
    """One row per host: Docker sandboxes it still has room for, task workers of running runs
    on it, its Steward/Inspect versions."""
    if not rows:
        console.print(
            "No host has announced itself: start `steward worker` on each host.", highlight=False
        )
        return
    table = Table()
    for column in (
        "host",
        "state",
        "heard",
        "cpus",
        "memory",
        "sandboxes",
        "workers",
        "versions",
    ):
        table.add_column(column, no_wrap=True)
    for row in rows:
        table.add_row(
            row["host_id"],
            row["state"],
            f"{row['silent_s']:.0f}s ago",
            str(row["cpus"]),
            f"{row['memory_gb']:g}G",
            "—" if row["sandboxes_free"] is None else str(row["sandboxes_free"]),
            str(row["task_workers"]),
            f"{row['steward_version'] or '?'}/{row['inspect_version'] or '?'}",
        )
    console.print(table)


def print_collect(document: dict) -> None:
    """`steward collect`: one sentence per open decision (with its command) and per event."""
    for line in collect_lines(document):
        console.print(line, highlight=False, markup=False, soft_wrap=True)


def print_timer(document: dict) -> None:
    if document.get("ended"):
        console.print("timer: none (the run has ended)", highlight=False)
        return
    if not document["armed"]:
        console.print("timer: disarmed (the run tends only on `steward tend`)", highlight=False)
        return
    line = f"timer: armed, every {document['interval']}, next tend {document['next_tend_at']}"
    if document["differs"]:
        line += f" (_steward.yaml says tend_interval: {document['configured']})"
    console.print(line, highlight=False)


def print_signoff_check(document: dict) -> None:
    """`steward signoff --check`: each blocker with its owner and the command that clears it."""
    blockers = document["blockers"]
    if not blockers:
        console.print(
            "Nothing blocks the signoff: the operator signs off with `steward signoff --by NAME`.",
            highlight=False,
        )
        return
    console.print(
        f"{len(blockers)} blocker(s) before the signoff (run {document['phase']}):",
        highlight=False,
    )
    table = Table()
    for column in ("blocker", "owner"):
        table.add_column(column, overflow="fold")
    table.add_column("clears it", overflow="fold")
    for blocker in blockers:
        table.add_row(escape(blocker["what"]), blocker["owner"], escape(blocker["command"]))
    console.print(table)
