"""Small pure helpers over the run state shared by the workflow and its renderers."""

from __future__ import annotations

from .contracts import RunState


def visible_state(state: RunState) -> str:
    """The one word the web UI's list and `steward runs` show."""
    return "paused" if state.paused and state.phase == "running" else state.phase


def describe_state(state: RunState) -> str:
    word = visible_state(state)
    return {"stalled": "stalled (needs a decision)"}.get(word, word)
