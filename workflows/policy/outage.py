"""When the watchdog speaks: once when supervision goes down, once when it is back. Pure: the
watchdog (worker/watchdog.py, run by `steward doctor --notify`) passes what it checked, the
runs it knows and the time, and keeps the state this returns in Steward's data directory.

Supervision is down when Temporal does not answer or no Steward worker serves this host (the
checks `steward doctor` makes). An outage is told once, to the destinations of the runs it
leaves unsupervised; a check while it lasts says nothing more. The first check that finds
supervision back says so, with how long it was down, to whoever was told of the outage. A
notice that could not be delivered is tried again at the next check (a "back" keeps its
times), so "once" means once delivered; an outage nobody heard of ends without a "back".
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field

from steward.workflows.contracts import TERMINAL_PHASES

# Runs that need a worker to go on: a finished run only waits for its signoff (a command, which
# needs the worker anyway and says so when it is down).
AT_REST = TERMINAL_PHASES | {"finished"}
NAMED_RUNS = 5  # a notice names this many runs, then "and N more"


class SupervisionCheck(BaseModel):
    """What one check found. `what` and `fix` are sentences (no secrets in them)."""

    down: bool
    what: str = ""  # e.g. "the Steward worker (pid 4242) has exited"
    fix: str = ""  # e.g. "run `steward worker start`"


class WatchedRun(BaseModel):
    """A run this host supervises, as last seen (from Temporal, or recorded when it was up)."""

    workflow_id: str
    workspace: str
    state: str = "running"


class OutageNotice(BaseModel):
    kind: Literal["down", "back"]
    title: str
    text: str  # one line
    runs: list[str] = Field(default_factory=list)  # the workspaces whose destinations hear it


class OutageState(BaseModel):
    """The watchdog's memory between checks (a file in Steward's data directory)."""

    down_since: datetime | None = None  # the first check that found supervision down
    what: str = ""  # what that check found
    told: bool = False  # this outage's "down" notice was delivered
    told_runs: list[str] = Field(default_factory=list)  # ... for these runs' destinations
    unsent_back: OutageNotice | None = None  # a "back" not yet delivered
    last_check_at: datetime | None = None
    last_result: str = ""  # one line: what the last check found and did


def at_stake(runs: list[WatchedRun]) -> list[WatchedRun]:
    return [run for run in runs if run.state not in AT_REST]


def span_text(seconds: float) -> str:
    """4321 -> "1h 12m 1s"; the largest two units are enough."""
    whole = max(0, int(seconds))
    parts = []
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60), ("s", 1)):
        if whole >= size or (unit == "s" and not parts):
            parts.append(f"{whole // size}{unit}")
            whole %= size
    return " ".join(parts[:2])


def clock_text(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%d %H:%M:%S %Z").strip()


def _names(runs: list[WatchedRun]) -> str:
    named = [f"{run.workspace} ({run.state})" for run in runs[:NAMED_RUNS]]
    more = len(runs) - len(named)
    return ", ".join(named) + (f" and {more} more" if more > 0 else "")


def down_notice(
    host: str, since: datetime, check: SupervisionCheck, runs: list[WatchedRun]
) -> OutageNotice:
    text = (
        f"Steward on {host} is not supervising runs since {clock_text(since)}: {check.what}. "
        f"Unsupervised: {_names(runs)}. To fix: {check.fix}."
    )
    return OutageNotice(
        kind="down",
        title=f"Steward: supervision down on {host}",
        text=text,
        runs=[run.workspace for run in runs],
    )


def back_notice(
    host: str, since: datetime, what: str, now: datetime, runs: list[str]
) -> OutageNotice:
    text = (
        f"Steward on {host} supervises again since {clock_text(now)}, after "
        f"{span_text((now - since).total_seconds())} down ({what}); the runs tend again."
    )
    return OutageNotice(
        kind="back", title=f"Steward: supervision back on {host}", text=text, runs=runs
    )


def observe(
    previous: OutageState,
    check: SupervisionCheck,
    runs: list[WatchedRun],
    host: str,
    now: datetime,
) -> tuple[OutageState, OutageNotice | None]:
    """The state after this check, and the notice to send now (None: nothing new to tell).

    The state returned assumes nothing was delivered yet; pass it with the notice and whether
    it was delivered to `delivered`."""
    state = previous.model_copy(deep=True)
    state.last_check_at = now
    stake = at_stake(runs)
    if check.down:
        if state.down_since is None:  # a new outage (an undelivered "back" is superseded)
            state.down_since, state.what, state.told = now, check.what, False
            state.told_runs, state.unsent_back = [], None
        if state.told or not stake:
            state.last_result = f"down since {clock_text(state.down_since)} ({state.what}); " + (
                "already told" if state.told else "no run is left unsupervised"
            )
            return state, None
        state.last_result = f"down since {clock_text(state.down_since)} ({state.what})"
        return state, down_notice(host, state.down_since, check, stake)
    if state.down_since is not None:  # back
        since, what, told_runs, told = state.down_since, state.what, state.told_runs, state.told
        state.down_since, state.what, state.told, state.told_runs = None, "", False, []
        state.last_result = f"up; was down {span_text((now - since).total_seconds())}"
        if not told:
            return state, None  # nobody heard of it
        everyone = list(dict.fromkeys([*told_runs, *(run.workspace for run in stake)]))
        return state, back_notice(host, since, what, now, everyone)
    if state.unsent_back is not None:
        state.last_result = "up; telling that supervision is back"
        return state, state.unsent_back
    state.last_result = "up"
    return state, None


def delivered(state: OutageState, notice: OutageNotice, ok: bool) -> OutageState:
    """The state once `notice` was (ok) or was not delivered."""
    after = state.model_copy(deep=True)
    if notice.kind == "down":
        after.told = ok
        after.told_runs = list(notice.runs) if ok else []
        after.last_result += "; told" if ok else "; could not tell anyone (tried again next check)"
    else:
        after.unsent_back = None if ok else notice
        after.last_result += "; told" if ok else "; could not tell (tried again next check)"
    return after
