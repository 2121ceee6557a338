"""Steward's words, in one place: the run's phases, a task's states, the task table's columns
and the terms Steward's pages use without saying them each time (a tend, a setpoint...). Every
view says them from here: `status` (cli/render.py), status.md (status_view.py), `status --json`
(agent_status.py: the same words, as keys), `collect` (collect_text.py) and the Temporal web
UI's details (web_ui.py); the README's glossary says the same. Pure data, no imports of ours.

A phase or a task state is one word, the same for people and for `--json` (`signed_off`, not
"signed off" in one place and "ended" in another).
"""

from __future__ import annotations

from typing import NamedTuple

# The run's phase (RunPhase) -> what it means. `paused` is not a phase of its own but the word
# people see for a running run that starts no new workers.
PHASES: dict[str, str] = {
    "capturing": "Steward is resolving the definition's tasks; nothing runs yet",
    "queued": "waiting in its capacity domain's queue for room; nothing runs yet",
    "running": "task workers are running samples",
    "paused": "running, but no new task worker is started (`steward resume`)",
    "stalled": "a task kept dying and was given up on: a decision waits for you",
    "finished": "every task is complete or settled: the run waits for signoff",
    "cancelling": "stopping its task workers on the way to cancelled",
    "cancelled": "cancelled on request; the run has ended",
    "failed": "the run itself failed; it has ended",
    "signed_off": "signed off by the operator: its logs are final and the run has ended",
    "orphaned": "its workspace went away: its workers were stopped and the run has ended",
}

# A task's state (TaskPhase) -> what it means.
TASK_STATES: dict[str, str] = {
    "pending": "no task worker runs it now (not started yet, or waiting to start again)",
    "running": "a task worker is running its samples",
    "complete": "its log holds every sample",
    "stalled": "its task workers kept dying without progress; a decision waits for you",
    "given_up": "ruled given up: the run goes on without its missing samples",
    "cancelled": "left unfinished when its run was cancelled (views/ended.py)",
    "stopped": "left unfinished when its run failed or was orphaned (views/ended.py)",
}


class Column(NamedTuple):
    label: str
    """The header people read (status, status.md, the web UI)."""
    key: str | None
    """Its key in `status --json`'s tasks (None: not there)."""
    meaning: str


# The per-task table, in this order wherever it is shown (a view may leave a column out).
TASK_COLUMNS: tuple[Column, ...] = (
    Column("task", "name", "the task's name"),
    Column("model", "model", "the model it is evaluated with"),
    Column("state", "state", "where the task stands (see the task states)"),
    Column("samples", "done", "samples done / planned (planned = samples × epochs)"),
    Column("errors", "errors", "samples that ended in an error"),
    Column("in flight", "in_flight", "samples being worked on right now"),
    Column(
        "setpoint",
        "setpoint",
        "how many samples its task worker may run at once (Inspect's max_samples); "
        "the ramp moves it unless the definition pins it",
    ),
    Column("attempts", "attempts", "task workers started for it (a restart adds one)"),
)

COLUMN_LABELS: tuple[str, ...] = tuple(c.label for c in TASK_COLUMNS)

# Terms the pages use, each in one line (the README's glossary says the same).
TERMS: dict[str, str] = {
    "tend": "one pass of the run's supervision: look at the task workers, start, stop or "
    "restart them, triage errors, write status.md and the journal; on a timer and on events",
    "setpoint": "the samples a task's worker may run at once (Inspect's max_samples), which "
    "the ramp raises while the provider keeps up",
    "ceiling": "a task worker's share of a provider's connection budget: the most connections "
    "it opens to that provider",
    "connection budget": "how many connections a provider takes from all of the run's workers "
    "together (learned from its pushback)",
    "reserved capacity": "sandbox memory held × time, in Gi·min: what the run's reservation "
    "costs while it holds it",
    "decision": "a question the run cannot answer itself (an error class, a stuck sample...), "
    "owned by an agent or the operator and answered with `steward rule`",
    "error class": "samples that errored the same way, ruled on together",
    "signoff": "the operator's word that the run's logs are final; refused while anything "
    "blocks it (`steward signoff --check`)",
    "cursor": "the number of the last journal event a reader has seen; `collect` starts after it",
}


def phase_meaning(phase: str) -> str:
    """What a phase (or `paused`) means, in one line."""
    return PHASES.get(phase, phase)


def tends_text(count: int) -> str:
    """How many tends the run has had, said so a newcomer reads it ("3 tends so far")."""
    return f"{count} tend{'' if count == 1 else 's'} so far"


def setpoint_text(setpoint: int, pinned: bool) -> str:
    """A task's setpoint as its cell says it."""
    return f"{setpoint} pinned" if pinned else str(setpoint)
