"""How a run that has ended reads: no timer, nothing pending, nothing in flight.

A cancel puts the tasks it stopped back to `pending` in the run's state (the run counts from
their logs afterwards), and the state keeps the last tend's in-flight counts and what was being
scanned. Read as they are, a cancelled run would look as if it still meant to run them. Every
view (`status`, `status --wait`, `status --json`, status.md, the web UI's details) says the
ended run through `as_ended` (or `ended_state`) instead: a task it left unfinished is `cancelled` (the run was
cancelled) or `stopped` (it failed or was orphaned), nothing is in flight, nothing is being
scanned and no tend is due. The run's own state is not changed (`status --json --full` still
shows it as kept). Pure.
"""

from __future__ import annotations

from steward.workflows.contracts import ENDING_PHASES, TERMINAL_PHASES, RunState, RunStatus

UNFINISHED = frozenset({"pending", "running"})


def unfinished_word(run_phase: str) -> str:
    """What a task the run left unfinished is called once the run has ended."""
    return "cancelled" if run_phase in ("cancelling", "cancelled") else "stopped"


def as_ended(status: RunStatus) -> RunStatus:
    """The status as people and agents read it: unchanged while the run goes on; once it is
    ending, its unfinished tasks named for how it ended, and (once it has ended) nothing in
    flight, scanning, timed or heard from a worker."""
    if status.state.phase not in ENDING_PHASES:
        return status
    ended = status.state.phase in TERMINAL_PHASES
    return status.model_copy(
        update={"state": ended_state(status.state), "live": [] if ended else status.live}
    )


def ended_state(state: RunState) -> RunState:
    """`as_ended` for a view that has the state alone (the web UI's details)."""
    if state.phase not in ENDING_PHASES:
        return state
    ended = state.phase in TERMINAL_PHASES
    word = unfinished_word(state.phase)
    tasks = []
    for task in state.tasks:
        changes: dict = {}
        if task.phase in UNFINISHED:
            changes["phase"] = word
        if ended and task.progress.in_flight:
            changes["progress"] = task.progress.model_copy(update={"in_flight": 0})
        tasks.append(task.model_copy(update=changes) if changes else task)
    return state.model_copy(
        update={
            "tasks": tasks,
            "next_tend_at": None,
            "timer": state.timer.model_copy(update={"armed": False}),
            **({"scanning_logs": []} if ended else {}),
        }
    )
