"""The contracts of what a run works on: its phases, its tasks as captured, its task workers and
what a look at them saw. Pydantic models shared by the CLI, the run workflow and its activities;
each field's docstring is also its description (`use_attribute_docstrings`)."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from steward.workflows.policy.capacity import SandboxSize
from steward.workflows.policy.cost import ModelTokens
from steward.workflows.policy.decisions import Anomaly
from steward.workflows.policy.provider_health import ProviderHealth
from steward.workflows.policy.ramp import RampReading
from steward.workflows.policy.rate_limits import RateLimitBudget

WORKFLOW_TASK_QUEUE = "steward"

RunPhase = Literal[
    "capturing",
    "queued",  # waiting in its capacity domain's queue; nothing spawned
    "running",
    "stalled",
    "finished",  # every task complete or settled; the run waits for signoff
    "cancelling",
    "cancelled",
    "failed",
    "signed_off",
    "orphaned",  # its workspace is gone (or belongs to another run): workers stopped, ended
]
TaskPhase = Literal["pending", "running", "complete", "stalled", "given_up"]
# Phases after which the workflow ends. (Runs from before signoff existed ended at "finished".)
TERMINAL_PHASES: frozenset[str] = frozenset({"signed_off", "cancelled", "failed", "orphaned"})
# Phases in which nothing more runs by itself: what `status --wait` waits for.
SETTLED_PHASES: frozenset[str] = TERMINAL_PHASES | {"finished", "stalled"}
# Phases with nothing left to tend: ended, or stopping its workers on the way to cancelled.
ENDING_PHASES: frozenset[str] = TERMINAL_PHASES | {"cancelling"}
# Phases that take no change of the run's work (signoff, relaunch): ending, or not yet resolved.
UNCHANGEABLE_PHASES: frozenset[str] = ENDING_PHASES | {"capturing"}


# ---------- capture ----------
class TaskSpec(BaseModel):
    """One resolved task (task x model) of the definition, as Inspect's capture reports it."""

    model_config = ConfigDict(use_attribute_docstrings=True)

    name: str
    """The task's name, as Inspect shows it."""
    model: str
    """The model it evaluates, as Inspect names it ("openai/gpt-4o")."""
    identifier: str
    """Inspect's task identifier: file, name, args, model and configuration (not epochs nor
    dataset size); the key Steward tracks the task and its logs by."""
    registry_name: str | None = None
    """Inspect's fully qualified registry name (None: an ad-hoc task, or not reported)."""
    args_hash: str | None = None
    """Inspect's hash of the task's args (None: not reported)."""
    file: str | None = None
    """The task's source file, relative to the workspace (None: not reported)."""
    samples: int
    """Dataset samples that will run (after any limit), per epoch."""
    epochs: int = 1
    """Times each sample is run."""
    sandbox: str | None = None
    """Sandbox provider type ("docker", "local", "k8s", ...); None: no sandbox."""
    sandbox_size: SandboxSize | None = None
    """What one sample starts (None: the light default)."""
    own_connections: str | None = None
    """The model connections the definition set itself (`max_connections=8`, or
    `adaptive_connections=...`): kept as it is, outside the run's connection budget (None: it
    set none, the budget decides)."""

    @property
    def planned_samples(self) -> int:
        return self.samples * self.epochs


class Capture(BaseModel):
    """What resolving the definition gives: its tasks and the limits it set itself."""

    model_config = ConfigDict(use_attribute_docstrings=True)

    tasks: list[TaskSpec]
    """Every task x model the definition asks for, in its order."""
    log_dir: str | None = None
    """The definition's own log_dir, if it passed one."""
    max_samples: int | None = None
    """The definition's own max_samples (samples at once per task), if it set one."""
    max_sandboxes: int | None = None
    """The definition's own max_sandboxes (sandboxes at once), if it set one."""
    max_tasks: int | None = None
    """The definition's own max_tasks (tasks running at once), if it set one."""
    cpus: int = 1
    """CPUs of the host that will run the workers (Docker's sandbox budget is 2 x CPUs)."""


# ---------- workers ----------


class WorkerProcess(BaseModel):
    """A per-task eval worker: a detached process running the definition in selection mode."""

    model_config = ConfigDict(use_attribute_docstrings=True)

    worker_id: str
    """The run's name for it ("w0001"), unique within the run."""
    tasks: list[str]
    """Identifiers of the tasks it runs."""
    pid: int
    """Its operating-system process id."""
    create_time: float
    """Its start time as psutil reports it (seconds since the epoch): with pid, tells this
    process from a later one reusing the pid."""
    socket: str
    """Path of its Inspect control socket."""
    output: str
    """Path of the file its stdout and stderr go to."""
    started_at: datetime
    """When Steward spawned it."""
    host: str = ""
    """Id of the host it runs on when not the workspace's (empty: the workspace's host)."""
    queue: str = ""
    """The activity task queue of that host (empty: the run's own, the workspace's host)."""


# ---------- observation ----------
class Progress(BaseModel):
    """A task's sample counts; a sample counts once per epoch."""

    model_config = ConfigDict(use_attribute_docstrings=True)

    total: int = 0
    """Samples planned (samples x epochs)."""
    completed: int = 0
    """Samples finished without error."""
    errored: int = 0
    """Samples finished with an error."""
    in_flight: int = 0
    """Samples running now (known only while the control socket answers)."""
    cancelled: int = 0
    """Samples cancelled (known only from the control socket)."""

    @property
    def done(self) -> int:
        return self.completed + self.errored


class WorkerPulse(BaseModel):
    """A watch's heartbeat: how the worker is doing now. Read from the workflow's pending
    activities (`describe()`), never recorded in the history."""

    model_config = ConfigDict(use_attribute_docstrings=True)

    worker_id: str
    """The worker it is about."""
    pid: int
    """The worker's process id."""
    at: datetime
    """When the watch took this reading."""
    progress: dict[str, Progress] = Field(default_factory=dict)
    """Task identifier -> its progress."""
    source: Literal["socket", "log"] | None = None
    """Where the progress was read: the control socket, the log, or nowhere yet (None)."""
    moved_at: datetime | None = None
    """When progress last moved."""
    answered_at: datetime | None = None
    """When the control socket last answered."""
    logged_at: datetime | None = None
    """Time of the newest write to one of its tasks' logs."""
    success_at: datetime | None = None
    """When every task's newest log was first seen success."""
    rate_limit_retries: int | None = None
    """Rate-limit retries of the process so far, cumulative (None: its connections unread)."""
    connection_limit: int | None = None
    """Lowest live connection limit of its controllers (connections)."""
    connection_ceiling: int | None = None
    """Highest connection ceiling of its controllers (connections)."""
    saturated_since: datetime | None = None
    """Since when it has been held at its ceiling, clean, with more samples waiting than
    connections (None: it is not)."""
    provider: ProviderHealth | None = None
    """Whether its tasks' provider answers (None: not read; workflows/policy/provider_health.py)."""


class TaskObservation(BaseModel):
    """What one observation saw of one task."""

    model_config = ConfigDict(use_attribute_docstrings=True)

    identifier: str
    """The task's identifier."""
    ramp: RampReading | None = None
    """Concurrency figures, while its worker answers."""
    progress: Progress | None = None
    """Its progress; None: nothing known yet."""
    log: str | None = None
    """Path of the task's newest log."""
    log_status: Literal["started", "success", "cancelled", "error"] | None = None
    """That log's status (None: no log)."""
    source: Literal["socket", "log", "none"] = "none"
    """Where the progress was read: the control socket, the log, or nowhere."""
    usage: dict[str, ModelTokens] | None = None
    """The newest log's tokens per model (None: not read)."""


class Observation(BaseModel):
    """What a tend's look at the world found: which workers live and how each task stands."""

    model_config = ConfigDict(use_attribute_docstrings=True)

    alive: dict[str, bool] = Field(default_factory=dict)
    """Worker id -> whether its process is alive (a worker left out is presumed alive)."""
    tasks: dict[str, TaskObservation] = Field(default_factory=dict)
    """Task identifier -> what was seen of it."""
    anomalies: list[Anomaly] | None = None
    """Anomalies found in the logs, when asked; None: not looked for."""
    anomaly_problem: str | None = None
    """Why looking for anomalies failed (the rest of the observation stands)."""
    healthy: list[str] = Field(default_factory=list)
    """Suspect samples ("id@epoch") healthy in their newest log."""
    healed: dict[str, dict[str, str]] = Field(default_factory=dict)
    """Class id -> {instance key: its task}: ledger instances healthy in their newest log."""
    more_anomalies: bool = False
    """More new anomalies were found than one look hands over: tend again at once."""
    ledger_through: int = 0
    """The triage ledger holds the run's changes up to this sequence number."""
    orphaned: str | None = None
    """orphan-v1: why the run's workspace is no longer its own (None: it is)."""
    rate_limits: list[RateLimitBudget] = Field(default_factory=list)
    """The rate limits the workers learned of the run's endpoints, in the provider's units
    (activities/capacity/rate_pacing.py)."""
