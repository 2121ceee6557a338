"""The contracts of what a run answers and is told: a tend's summary, the status query, journal
events of pure decisions, and the commands (notes, cancel, signoff) and the collect view."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from steward.workflows.contracts.state import JournalEvent, RunInput, RunState
from steward.workflows.contracts.tasks import RunPhase, WorkerPulse


class TendSummary(BaseModel):
    """What one tend did."""

    model_config = ConfigDict(use_attribute_docstrings=True)

    tend: int
    """Its number (the run's tend_count)."""
    at: datetime
    """When it ran."""
    phase: RunPhase
    """The run's phase after it."""
    paused: bool
    """Whether the run was paused after it."""
    spawned: list[str] = Field(default_factory=list)
    """Names of the tasks it spawned workers for."""
    completed: list[str] = Field(default_factory=list)
    """Names of the tasks it found complete."""
    stalled: list[str] = Field(default_factory=list)
    """Names of the tasks it gave up on."""
    restarted: list[str] = Field(default_factory=list)
    """Names of the tasks sent back to pending to run again (their worker died or its host was
    lost)."""
    raised: list[str] = Field(default_factory=list)
    """Ids of the decisions it raised."""
    applied: int = 0
    """Ruling effects carried out."""
    problem: str | None = None
    """Why the tend could not run in full."""
    samples_done: int = 0
    """Samples done across the run after it."""
    samples_total: int = 0
    """Samples planned across the run."""


class RunStatus(BaseModel):
    """What `steward status` shows: the state plus where the run lives."""

    model_config = ConfigDict(use_attribute_docstrings=True)

    workflow_id: str
    """The run's Temporal workflow id."""
    run_id: str | None = None
    """The Temporal run id of its current execution."""
    workspace: str
    """Path of the workspace directory."""
    state: RunState
    """The run's state."""
    tend_interval: float
    """Seconds between scheduled tends."""
    web_ui: str | None = None
    """The Temporal web UI page of this run, when there is one."""
    web_ui_runs: str | None = None
    """The web UI's list of Steward's runs only (filled in by the reader)."""
    host_queue: str = ""
    """The workspace's host queue (a worker with no queue of its own runs there)."""
    live: list[WorkerPulse] = Field(default_factory=list)
    """The watches' newest heartbeats, filled in by the reader
    (workflows/policy/worker_watch.py)."""
    progress_at: dict[str, datetime] = Field(default_factory=dict)
    """Task identifier -> when its progress was read (filled in by the reader)."""
    read_at: datetime | None = None
    """When the reader filled in the live part."""
    route_after: float | None = None
    """Seconds an agent's open item waits for an agent to collect before it goes to the
    operator (None: a run that routes after two tends without a collect)."""
    scan_waits: bool = False
    """A scan runs, or is about to, and will read the logs not scanned yet: a signoff waits for
    it, so they do not block it (the status query says; readers build the signoff blockers from
    the state with it: workflows/run/eval_run_state.signoff_check)."""


class RunEvent(BaseModel):
    """A journal event a pure decision asks for (the workflow journals it)."""

    model_config = ConfigDict(use_attribute_docstrings=True)

    event: str
    """What happened, in a few words."""
    data: dict[str, Any] = Field(default_factory=dict)
    """Its particulars, JSON-serialisable."""


class CommandNote(BaseModel):
    """An operator's command with no argument of its own (pause, resume, ramp hold...)."""

    model_config = ConfigDict(use_attribute_docstrings=True)

    reason: str = ""
    """Why, as the operator said."""
    by: str = ""
    """Who."""


class CancelRequest(BaseModel):
    """`steward cancel`."""

    model_config = ConfigDict(use_attribute_docstrings=True)

    reason: str = ""
    """Why, as the operator said."""
    by: str = ""
    """Who."""


RunInput.model_rebuild()


# ---------- decisions ----------


class SignoffRequest(BaseModel):
    """`steward signoff`."""

    model_config = ConfigDict(use_attribute_docstrings=True)

    by: str
    """Who signs off."""
    publish: bool = False
    """Publish the final logs to the log store."""


class CollectView(BaseModel):
    """What `steward collect` returns: open decisions, classes, standing rules, and the
    journal events the workflow holds that are newer than the cursor."""

    model_config = ConfigDict(use_attribute_docstrings=True)

    decisions: list[dict[str, Any]]
    """The open decisions, as JSON."""
    classes: list[dict[str, Any]]
    """Every anomaly class, as JSON."""
    events: list[JournalEvent]
    """Journal events newer than the cursor asked for, among those the workflow holds."""
    cursor: int
    """Seq of the newest journal event: the cursor to pass next time."""
    policies: list[str] = Field(default_factory=list)
    """Rules an agent applies, as prose."""
    phase: RunPhase
    """Where the run stands."""
    unattended: bool = False
    """Some of the agent's open items went to the operator: no agent collected in time."""


RunState.model_rebuild()
RunInput.model_rebuild()
