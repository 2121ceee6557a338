"""What wakes an agent (`steward wait`, the MCP server's notifications), and how each such
event is said in one sentence. The run's journal is the record: these are the journal events
an agent minding the run acts on, plus `phase changed`, which `wait` makes itself when the
run's phase differs from the one the agent last saw (not every change of phase has a journal
line of its own)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from steward.workflows.contracts import JournalEvent
from steward.workflows.views.collect_text import EVENT_SENTENCES, event_sentence

# journal event -> why an agent wakes for it (documented in the README and the runbook)
WAKE_EVENTS: dict[str, str] = {
    "decision raised": "a decision needs an answer (the agent's or the operator's)",
    "proposed": "an agent proposed a verdict; the operator's decision on it was raised",
    "ruled": "a decision was ruled",
    "ruled by standing rule": "a class was ruled by `preauthorized`",
    "decision closed": "the run closed a decision whose cause went away",
    "routed to operator": "an agent's item went to the operator too",
    "healed": "errored samples completed cleanly when their task resumed",
    "worker hung": "a task worker stopped answering",
    "task stalled": "a task kept dying and was given up on (the run is stalled)",
    "scanned": "an integrity scan ended",
    "scan failed": "an integrity scan failed",
    "finished": "every task is complete or settled: the run waits for signoff",
    "signed off": "the run was signed off and has ended",
    "cancelled": "the run was cancelled and has ended",
    "orphaned": "the run's workspace went away and the run has ended",
    "failed": "the run failed and has ended",
    "paused": "the run was paused",
    "resumed": "the run was resumed",
    "host lost": "a host running task workers went silent",
    "cost cap crossed": "the cost cap was crossed and the run paused",
    "tend failed": "a tend could not finish",
    "phase changed": "the run's phase is not the one last seen",
}
ENDED = "ended"  # what `collect` calls the phase of a run whose workflow has ended


def as_dict(event: JournalEvent) -> dict[str, Any]:
    """A held journal event as its journal line says it."""
    return {"seq": event.seq, "at": event.at.isoformat(), "event": event.event, **event.data}


def wakes(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e for e in events if e.get("event") in WAKE_EVENTS]


def phase_change(was: str | None, now: str, events: list[dict[str, Any]]) -> dict | None:
    """The `phase changed` event when the phase is not the one last seen, unless a journal
    event among `events` already says so (`finished`, `signed off`, ...)."""
    if was is None or was == now or (was == ENDED and now in _ENDED_PHASES):
        return None
    said = {e.get("event", "").replace(" ", "_") for e in events}
    if now in said:
        return None
    return {"event": "phase changed", "from": was, "to": now}


_ENDED_PHASES = frozenset({"signed_off", "cancelled", "failed", "orphaned", ENDED})


# How each waking event is said: the sentences `collect` says them with.
SENTENCES: dict[str, str] = {name: EVENT_SENTENCES[name] for name in WAKE_EVENTS}


def sentence(event: dict[str, Any]) -> str:
    """One sentence for a person (collect's)."""
    return event_sentence(event)


class JournalTail:
    """The journal file's events after a cursor, read incrementally: the first read goes
    through the file once, later reads only what was appended since (journals grow long and
    `wait` looks every half second). A line still being written is left for the next read."""

    def __init__(self, path: Path, since: int) -> None:
        self.path, self.since, self.offset = path, since, 0

    def read(self) -> list[dict[str, Any]]:
        try:
            with open(self.path, "rb") as handle:
                if handle.seek(0, 2) < self.offset:  # replaced or truncated: read it again
                    self.offset = 0
                handle.seek(self.offset)
                chunk = handle.read()
        except FileNotFoundError:
            return []
        end = chunk.rfind(b"\n") + 1
        self.offset += end
        events = []
        for line in chunk[:end].decode("utf-8", errors="replace").splitlines():
            try:
                event = json.loads(line)
            except ValueError:
                continue  # a line torn by a crash stays torn; the journal says so itself
            if isinstance(event, dict) and isinstance(event.get("seq"), int):
                if event["seq"] > self.since:
                    events.append(event)
        return events
