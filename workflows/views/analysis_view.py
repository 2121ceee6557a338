"""analysis.md: Steward's facts about each task inside marked blocks, the rest is people's prose.

Pure. `merge_analysis` replaces only the text between a task's markers (matched by the task's
identifier) and appends blocks for tasks the file does not have yet; every character outside
the markers is kept as it was, so an agent's or operator's notes are never touched.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping

from steward.workflows.contracts import RunState, TaskState

FILE = "analysis.md"
END = "<!-- /steward:facts -->"
# A block: its begin marker, then text holding no other begin marker, then the end marker. A
# begin marker someone orphaned (its end deleted) therefore never swallows the prose after it.
_BLOCK = re.compile(
    r"<!-- steward:facts [^\n]*?id=(?P<id>[0-9a-f]{12}) -->\n"
    r"(?P<body>(?:(?!<!-- steward:facts ).)*?)" + re.escape(END),
    re.DOTALL,
)
NEW_FILE = (
    "# Analysis\n\n"
    "Write your reading of the run here. Steward keeps each task's facts (between its pair of\n"
    "`steward:facts` comment markers) up to date at every tend; everything outside those\n"
    "markers is yours and is never changed.\n"
)


def marker_id(identifier: str) -> str:
    """A task's short, stable key in its markers (identifiers are long and hold any text)."""
    return hashlib.sha1(identifier.encode()).hexdigest()[:12]


def begin_marker(name: str, identifier: str) -> str:
    return f"<!-- steward:facts {name} id={marker_id(identifier)} -->"


def block(name: str, identifier: str, body: str) -> str:
    return f"{begin_marker(name, identifier)}\n{body.rstrip()}\n{END}"


def merge_analysis(existing: str | None, bodies: Mapping[tuple[str, str], str]) -> str:
    """The file with each task's block body replaced ((name, identifier) -> body), new tasks
    appended at the end."""
    text = NEW_FILE if existing is None else existing
    by_id = {marker_id(identifier): (name, identifier) for name, identifier in bodies}
    seen: set[str] = set()

    def replace(match: re.Match) -> str:
        key = match.group("id")
        if key not in by_id or key in seen:
            return match.group(0)  # a task that left the run keeps its last facts
        seen.add(key)
        return block(*by_id[key], bodies[by_id[key]])

    merged = _BLOCK.sub(replace, text)
    fresh = [block(*task, body) for task, body in bodies.items() if marker_id(task[1]) not in seen]
    if fresh:
        merged = merged.rstrip("\n") + "\n\n" + "\n\n".join(fresh) + "\n"
    return merged


def task_facts(
    state: RunState,
    task: TaskState,
    scores: str | None,
    dollars: str | None,
    updated: str,
) -> str:
    """The facts block of one task: progress, error classes and rulings, scores, cost."""
    progress = task.progress
    lines = [
        f"### {task.spec.name} · {task.spec.model}",
        "",
        f"- Progress: {task.phase}, {progress.done}/{task.spec.planned_samples} samples"
        f" ({progress.errored} errored, {progress.in_flight} in flight), "
        f"{task.attempts} worker(s) started",
        f"- Scores: {scores or '— (when the task is complete)'}",
        f"- Cost: {_cost(task, dollars)}",
    ]
    classes = _classes(state, task)
    lines.append("- Error classes:" if classes else "- Error classes: none")
    lines += [f"  - {line}" for line in classes]
    lines += [f"- Log: `{task.log or '—'}`", f"- Updated: {updated}"]
    return "\n".join(lines)


def _cost(task: TaskState, dollars: str | None) -> str:
    tokens = sum(t.total for t in task.usage.values())
    if not tokens:
        return "nothing spent yet"
    return f"{tokens:,} tokens" + (f", {dollars}" if dollars else "")


def _classes(state: RunState, task: TaskState) -> list[str]:
    lines = []
    for c in state.triage.classes:
        if c.in_ledger:
            mine = c.tasks.get(task.spec.identifier, 0)
        else:
            mine = sum(1 for i in c.instances if i.anomaly.task == task.spec.identifier)
        if not mine:
            continue
        if c.ruling:
            standing = f" (standing rule {c.ruling.standing})" if c.ruling.standing else ""
            verdict = f"ruled {c.ruling.verdict} by {c.ruling.by or 'someone'}{standing}"
        elif c.proposal:
            verdict = f"proposed {c.proposal.verdict} by {c.proposal.by or 'the agent'}"
        else:
            verdict = "awaiting a ruling"
        lines.append(f"{c.id} {c.kind}: {c.title} — {mine} instance(s), {c.state}, {verdict}")
    return lines
