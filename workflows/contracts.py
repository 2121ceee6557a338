"""Pydantic contracts between the CLI, the run workflow and its activities."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field, computed_field

from steward.workflows.policy.capacity import BackendChoice, CapacityState, SandboxSize
from steward.workflows.policy.cost import CostCap, ModelTokens, Price
from steward.workflows.policy.decisions import Anomaly, StandingRules, Triage
from steward.workflows.policy.hosts import HostLost
from steward.workflows.policy.provider_budget import ProviderBudget
from steward.workflows.policy.ramp import RampReading

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

    name: str
    model: str
    identifier: str
    registry_name: str | None = None
    args_hash: str | None = None
    file: str | None = None
    samples: int
    epochs: int = 1
    sandbox: str | None = None  # sandbox provider type ("docker", "local", "k8s", ...), None: none
    sandbox_size: SandboxSize | None = None  # what one sample starts (None: the light default)

    @property
    def planned_samples(self) -> int:
        return self.samples * self.epochs


class Capture(BaseModel):
    tasks: list[TaskSpec]
    log_dir: str | None = None  # the definition's own log_dir, if it passed one
    max_samples: int | None = None  # the definition's own max_samples, if it set one
    max_sandboxes: int | None = None  # the definition's own max_sandboxes, if it set one
    max_tasks: int | None = None  # the definition's own max_tasks: tasks running at once
    cpus: int = 1  # of the host that will run the workers (Docker's budget is 2 x CPUs)


# ---------- workers ----------


class WorkerProcess(BaseModel):
    """A per-task eval worker: a detached process running the definition in selection mode."""

    worker_id: str
    tasks: list[str]  # task identifiers it runs
    pid: int
    create_time: float  # with pid, tells this process from a later one reusing the pid
    socket: str  # Inspect control socket
    output: str  # stdout/stderr file
    started_at: datetime
    # hosts: where it runs when not on the workspace's host (its host id and activity queue;
    # empty: the workspace's host, whose queue is the run's own)
    host: str = ""
    queue: str = ""


# ---------- observation ----------
class Progress(BaseModel):
    total: int = 0
    completed: int = 0
    errored: int = 0
    in_flight: int = 0
    cancelled: int = 0

    @property
    def done(self) -> int:
        return self.completed + self.errored


class WorkerPulse(BaseModel):
    """A watch's heartbeat: how the worker is doing now. Read from the workflow's pending
    activities (`describe()`), never recorded in the history."""

    worker_id: str
    pid: int
    at: datetime
    progress: dict[str, Progress] = Field(default_factory=dict)  # task identifier -> progress
    source: Literal["socket", "log"] | None = None
    moved_at: datetime | None = None  # when progress last moved
    answered_at: datetime | None = None  # when the control socket last answered
    logged_at: datetime | None = None  # newest write to one of its tasks' logs
    success_at: datetime | None = None  # when every task's newest log was first seen success
    # Its connections (when the watch reads them): cumulative rate-limit retries of the
    # process, its controllers' lowest live limit and highest ceiling, and since when it has
    # been held at its ceiling, clean, with more samples waiting than connections.
    rate_limit_retries: int | None = None
    connection_limit: int | None = None
    connection_ceiling: int | None = None
    saturated_since: datetime | None = None


class TaskObservation(BaseModel):
    identifier: str
    ramp: RampReading | None = None  # concurrency figures, while its worker answers
    progress: Progress | None = None  # None: nothing known yet
    log: str | None = None  # newest log of the task
    log_status: Literal["started", "success", "cancelled", "error"] | None = None
    source: Literal["socket", "log", "none"] = "none"
    usage: dict[str, ModelTokens] | None = None  # the newest log's tokens per model


class Observation(BaseModel):
    alive: dict[str, bool] = Field(default_factory=dict)  # worker_id -> alive
    tasks: dict[str, TaskObservation] = Field(default_factory=dict)
    anomalies: list[Anomaly] | None = None  # when asked; None: not looked for
    anomaly_problem: str | None = None  # looking failed (the rest of the observation stands)
    healthy: list[str] = Field(default_factory=list)  # suspects healthy in their newest log
    orphaned: str | None = None  # orphan-v1: why the run's workspace is no longer its own


# ---------- run state ----------
class TaskState(BaseModel):
    spec: TaskSpec
    phase: TaskPhase = "pending"
    progress: Progress = Field(default_factory=Progress)
    log: str | None = None
    log_status: str | None = None
    worker_id: str | None = None
    attempts: int = 0  # workers started for it
    fruitless: int = 0  # consecutive worker deaths without new completed samples
    completed_at_spawn: int = 0
    max_samples: int = 50  # the setpoint: what new workers start at and the ramp moves
    pinned: bool = False  # the definition set max_samples: honoured exactly, never ramped
    ramp_baseline: RampReading | None = None  # last reading, the start of the next window
    pushback_streak: int = 0
    budget_clamped: bool = False  # the sandbox budget stopped its climb (journalled once)
    usage: dict[str, ModelTokens] = Field(default_factory=dict)  # its log's tokens per model
    extending: str | None = None  # a complete log that now holds too little (a relaunch grew it)
    exit_cause: str | None = None  # the exception line its last dead worker's own log ended with
    host: str | None = None  # hosts: the host its last worker ran on (its respawn goes back)


class JournalEvent(BaseModel):
    seq: int
    at: datetime
    event: str
    data: dict[str, Any] = Field(default_factory=dict)


class WatchLimits(BaseModel):
    """When a live worker is a problem (the run's options, re-read each tend)."""

    start_timeout: float = 600.0  # no log and no control socket this long after spawn: hung
    unresponsive_after: float = 300.0  # no sign of life this long while it lives: hung
    linger_after: float = 60.0  # alive this long after every task's log is success: stop it


class RunSettings(BaseModel):
    """The options the workflow decides with: resolved at launch, the ramp re-read each tend."""

    tend_interval: float = 600.0
    stall_after: int = 2
    max_workers: int | None = None
    samples_ramp: tuple[int, int] | Literal[False] = (50, 200)
    stuck_after: float = 5 * 3600.0
    heartbeat: float | Literal[False] = 3600.0
    watch: WatchLimits = Field(default_factory=WatchLimits)
    rules: StandingRules = Field(default_factory=StandingRules)
    scan_model: str | Literal[False] | None = None
    scanners: list[str] = Field(default_factory=list)
    capacity_backend: BackendChoice = "auto"
    kubernetes_namespace: str | None = None
    prices: dict[str, Price] = Field(default_factory=dict)
    cost_cap: CostCap | None = None
    # Hosts the task workers may be placed on (None: the workspace's host only; workflows/
    # placement.py), and how long a silent host stays its tasks' home.
    hosts: list[str] | Literal["any"] | None = None
    host_timeout: float = 120.0


class RunInput(BaseModel):
    workspace: str
    definition: str
    host_queue: str
    log_dir: str  # the log dir Steward chose (used unless the definition names its own)
    settings: RunSettings
    launched_by: str = ""
    web_ui: str | None = None  # the Temporal web UI page of this run, when there is one
    state: RunState | None = None  # carried over continue-as-new
    capture: Capture | None = None  # resolved by `steward launch` (else the run captures)
    definition_hash: str | None = None  # of the definition that was launched (drift)
    store_hits: dict[str, str] = Field(default_factory=dict)  # identifier -> log store path
    timer: bool = True  # `steward launch --no-timer`: the run tends only when asked
    # A continued run tends at once unless its handover came between tends with none due (it
    # then waits on, as the run it continues would have: a disarmed timer stays quiet).
    tend_due: bool = True


class TimerState(BaseModel):
    """The run's own tend timer: armed or not, and at what interval."""

    armed: bool = True
    interval: float | None = None  # armed explicitly at this interval; None: tend_interval


class TimerRequest(BaseModel):
    interval: float | None = None  # `steward timer arm --interval`; None: the configured one
    by: str = ""


class CostState(BaseModel):
    """Reserved capacity-time, and the cost cap's standing (LLM usage lives on the tasks)."""

    gi_minutes: float = 0.0  # memory reserved x time held, summed
    usd: float | None = None  # LLM dollars at the last tend (None: no price known)
    unpriced: list[str] = Field(default_factory=list)  # models with tokens but no price
    held_since: datetime | None = None  # when the held reservation was last accounted
    cap_paused: bool = False  # the run is paused because it crossed its cap
    cap_waived: str | None = None  # the cap (as JSON) an operator chose to continue past


class RunState(BaseModel):
    phase: RunPhase = "capturing"
    error: str | None = None
    paused: bool = False
    pause_reason: str | None = None
    ramp_hold: bool = False
    ramp_hold_reason: str | None = None
    options_problem: str | None = None  # _steward.yaml unreadable at the last tend
    cancel_reason: str | None = None
    log_dir: str = ""
    sandbox_budget: int | None = None  # fleet-wide bound on sandboxed tasks' setpoints; None: none
    max_tasks: int | None = None  # tasks running at once (the definition's); None: all
    tasks: list[TaskState] = Field(default_factory=list)
    workers: dict[str, WorkerProcess] = Field(default_factory=dict)
    lost_hosts: dict[str, datetime] = Field(default_factory=dict)  # host -> last heard, lost
    host_losses: list[HostLost] = Field(default_factory=list)  # told, for the next tend
    worker_counter: int = 0
    tend_count: int = 0
    started_at: datetime | None = None
    finished_at: datetime | None = None
    last_tend_at: datetime | None = None
    next_tend_at: datetime | None = None
    journal_seq: int = 0
    pending_journal: list[JournalEvent] = Field(default_factory=list)
    triage: Triage = Field(default_factory=Triage)
    outbox: list[Notice] = Field(default_factory=list)  # notifications not yet delivered
    notify_problem: str | None = None  # why the last delivery failed (journalled on change)
    tend_problems: list[str] = Field(default_factory=list)  # reasons already notified
    # Why the last workspace write failed (its journal stays in pending_journal); None: written.
    workspace_problem: str | None = None
    last_heartbeat_at: datetime | None = None
    scanned_logs: list[str] = Field(default_factory=list)
    scanning_logs: list[str] = Field(default_factory=list)  # what the running scan reads
    scan_problem: str | None = None
    signoff: Signoff | None = None
    capacity: CapacityState = Field(default_factory=CapacityState)
    cost: CostState = Field(default_factory=CostState)
    definition_hash: str | None = None  # of the definition committed last (launch or amend)
    drift: list[str] = Field(default_factory=list)  # delta lines of an edit not launched
    drift_hash: str | None = None  # the edited definition the drift lines describe
    reused: list[str] = Field(default_factory=list)  # task names satisfied from the log store
    timer: TimerState = Field(default_factory=TimerState)
    restart_workers: list[str] = Field(default_factory=list)  # hung workers ruled `restart`
    # budget-v1: endpoint -> the connection budget its workers share
    providers: dict[str, ProviderBudget] = Field(default_factory=dict)

    def task(self, identifier: str) -> TaskState:
        return next(t for t in self.tasks if t.spec.identifier == identifier)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def samples_done(self) -> int:
        return sum(t.progress.done for t in self.tasks)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def samples_total(self) -> int:
        return sum(t.spec.planned_samples for t in self.tasks)


class Notice(BaseModel):
    kind: Literal[
        "decision",
        "finished",
        "tend_failed",
        "heartbeat",
        "signed_off",
        "cancelled",
        "orphaned",
        "host_lost",
    ]
    text: str


class Signoff(BaseModel):
    by: str
    at: datetime
    publish: bool = False
    published: list[str] = Field(default_factory=list)
    archived: list[str] = Field(default_factory=list)
    logs: list[str] = Field(default_factory=list)


class TendSummary(BaseModel):
    tend: int
    at: datetime
    phase: RunPhase
    paused: bool
    spawned: list[str] = Field(default_factory=list)  # task names
    completed: list[str] = Field(default_factory=list)
    stalled: list[str] = Field(default_factory=list)
    restarted: list[str] = Field(default_factory=list)
    raised: list[str] = Field(default_factory=list)  # decision ids
    applied: int = 0  # ruling effects carried out
    problem: str | None = None  # why the tend could not run in full
    samples_done: int = 0
    samples_total: int = 0


class RunStatus(BaseModel):
    """What `steward status` shows: the state plus where the run lives."""

    workflow_id: str
    run_id: str | None = None
    workspace: str
    state: RunState
    tend_interval: float
    web_ui: str | None = None
    host_queue: str = ""  # the workspace's host (a worker with no queue of its own runs there)
    # Filled in by the reader from the watches' heartbeats (workflows/policy/worker_watch.py):
    live: list[WorkerPulse] = Field(default_factory=list)
    progress_at: dict[str, datetime] = Field(default_factory=dict)  # identifier -> as of when
    read_at: datetime | None = None


class RunEvent(BaseModel):
    """A journal event a pure decision asks for (the workflow journals it)."""

    event: str
    data: dict[str, Any] = Field(default_factory=dict)


class CommandNote(BaseModel):
    reason: str = ""
    by: str = ""


class CancelRequest(BaseModel):
    reason: str = ""
    by: str = ""


RunInput.model_rebuild()


# ---------- decisions ----------


class SignoffRequest(BaseModel):
    by: str
    publish: bool = False


class CollectView(BaseModel):
    """What `steward collect` returns: open decisions, classes, standing rules, and the
    journal events the workflow holds that are newer than the cursor."""

    decisions: list[dict[str, Any]]
    classes: list[dict[str, Any]]
    events: list[JournalEvent]
    cursor: int
    policies: list[str] = Field(default_factory=list)
    phase: RunPhase
    unattended: bool = False


RunState.model_rebuild()
RunInput.model_rebuild()
