"""Pydantic contracts between the CLI, the run workflow and its activities, by concern:
`tasks` (phases, captured tasks, task workers, what a look saw), `state` (the run's durable
state, settings and input), `commands` (what the run answers and is told). Each field's
docstring is also its description (`use_attribute_docstrings`): it shows in the JSON schema
only, never in what is serialised. Everything is importable from here too."""

from steward.workflows.contracts.commands import (
    CancelRequest,
    CollectView,
    CommandNote,
    RunEvent,
    RunStatus,
    SignoffRequest,
    TendSummary,
)
from steward.workflows.contracts.state import (
    CostState,
    JournalEvent,
    Notice,
    RunInput,
    RunSettings,
    RunState,
    Signoff,
    TaskState,
    TimerRequest,
    TimerState,
    WatchLimits,
)
from steward.workflows.contracts.tasks import (
    ENDING_PHASES,
    SETTLED_PHASES,
    TERMINAL_PHASES,
    UNCHANGEABLE_PHASES,
    WORKFLOW_TASK_QUEUE,
    Capture,
    Observation,
    Progress,
    RunPhase,
    TaskObservation,
    TaskPhase,
    TaskSpec,
    WorkerProcess,
    WorkerPulse,
)

__all__ = [
    "CancelRequest",
    "Capture",
    "CollectView",
    "CommandNote",
    "CostState",
    "ENDING_PHASES",
    "JournalEvent",
    "Notice",
    "Observation",
    "Progress",
    "RunEvent",
    "RunInput",
    "RunPhase",
    "RunSettings",
    "RunState",
    "RunStatus",
    "SETTLED_PHASES",
    "Signoff",
    "SignoffRequest",
    "TERMINAL_PHASES",
    "TaskObservation",
    "TaskPhase",
    "TaskSpec",
    "TaskState",
    "TendSummary",
    "TimerRequest",
    "TimerState",
    "UNCHANGEABLE_PHASES",
    "WORKFLOW_TASK_QUEUE",
    "WatchLimits",
    "WorkerProcess",
    "WorkerPulse",
]
