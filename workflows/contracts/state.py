"""The contracts of a run's durable state: each task as tended, the journal, the live settings,
the workflow's input, and the state itself (what continue-as-new carries)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, computed_field

from steward.workflows.contracts.tasks import (
    Capture,
    Progress,
    RunPhase,
    TaskPhase,
    TaskSpec,
    WorkerProcess,
)
from steward.workflows.policy.capacity import BackendChoice
from steward.workflows.policy.capacity_contracts import CapacityState
from steward.workflows.policy.cost import CostCap, ModelTokens, Price
from steward.workflows.policy.decisions import StandingRules, Triage
from steward.workflows.policy.deferrals import Deferral
from steward.workflows.policy.hosts import HostLost
from steward.workflows.policy.provider_budget import ProviderBudget
from steward.workflows.policy.ramp import RampReading
from steward.workflows.policy.rate_limits import RateLimitBudget


class TaskState(BaseModel):
    """One task of the run, as the workflow tends it."""

    model_config = ConfigDict(use_attribute_docstrings=True)

    spec: TaskSpec
    """The task as the definition resolved it."""
    phase: TaskPhase = "pending"
    """Where the task stands."""
    progress: Progress = Field(default_factory=Progress)
    """Its progress as last observed."""
    log: str | None = None
    """Path of its newest log (None: none yet)."""
    log_status: str | None = None
    """That log's status ("started", "success", "cancelled", "error")."""
    worker_id: str | None = None
    """The worker running it now (None: none)."""
    attempts: int = 0
    """Workers started for it."""
    fruitless: int = 0
    """Consecutive worker deaths without new completed samples."""
    completed_at_spawn: int = 0
    """Its completed samples when its current worker was spawned (did the worker add any?)."""
    max_samples: int = 50
    """The setpoint (samples at once): what new workers start at and the ramp moves."""
    pinned: bool = False
    """The definition set max_samples: honoured exactly, never ramped."""
    ramp_baseline: RampReading | None = None
    """Last ramp reading, the start of the next window."""
    pushback_streak: int = 0
    """Consecutive ramp windows that saw provider pushback."""
    budget_clamped: bool = False
    """The sandbox budget stopped its climb (journalled once)."""
    usage: dict[str, ModelTokens] = Field(default_factory=dict)
    """Its log's tokens per model."""
    extending: str | None = None
    """A complete log that now holds too little (a relaunch grew the task): its path."""
    exit_cause: str | None = None
    """What its last dead worker died of: the exception line or error its own log ended with
    (an operating-system error as its cause and fix), or a SIGKILL's likely cause."""
    exit_detail: str | None = None
    """How its last dead worker ended: its id, pid and exit code or signal."""
    exit_log_tail: list[str] = Field(default_factory=list)
    """The last lines of its last dead worker's own log (a few, each cut short)."""
    host: str | None = None
    """hosts: the host its last worker ran on (its respawn goes back there)."""


class JournalEvent(BaseModel):
    """One line of the run's journal."""

    model_config = ConfigDict(use_attribute_docstrings=True)

    seq: int
    """Its number in the run's journal, counting from 1."""
    at: datetime
    """When it happened (workflow time)."""
    event: str
    """What happened, in a few words ("spawned", "signed off")."""
    data: dict[str, Any] = Field(default_factory=dict)
    """Its particulars, JSON-serialisable."""


class WatchLimits(BaseModel):
    """When a live worker is a problem (the run's options, re-read each tend)."""

    model_config = ConfigDict(use_attribute_docstrings=True)

    start_timeout: float = 600.0
    """Seconds after spawn with no log and no control socket: hung."""
    unresponsive_after: float = 300.0
    """Seconds with no sign of life while it lives: hung."""
    linger_after: float = 60.0
    """Seconds alive after every task's log is success: stop it."""
    provider_stuck_after: float | Literal[False] = 180.0
    """Seconds its provider may answer none of its requests (only retries) before the run asks
    about it (False: never)."""


class RunSettings(BaseModel):
    """The options the workflow decides with: resolved at launch, the ramp re-read each tend."""

    model_config = ConfigDict(use_attribute_docstrings=True)

    tend_interval: float = 600.0
    """Seconds between scheduled tends."""
    stall_after: int = 2
    """Fruitless respawns before a task is given up on (stalled)."""
    max_workers: int | None = None
    """Worker processes to pack the run into (None: one per task)."""
    samples_ramp: tuple[int, int] | Literal[False] = (50, 200)
    """(start, ceiling) of the samples-at-once ramp; False: no automatic ramp."""
    stuck_after: float = 5 * 3600.0
    """Seconds without activity after which a sample is reported stuck."""
    heartbeat: float | Literal[False] = 3600.0
    """Seconds between liveness heartbeats while the run progresses; False: none."""
    watch: WatchLimits = Field(default_factory=WatchLimits)
    """When a live worker is hung or lingering."""
    rules: StandingRules = Field(default_factory=StandingRules)
    """Standing decision rules (preauthorized rulings, stuck-call cancels, policies)."""
    scan_model: str | Literal[False] | None = None
    """The model scanners use (None: the eval model; False: ignore SCOUT_SCAN_MODEL)."""
    scanners: list[str] = Field(default_factory=list)
    """Scanners run in addition to the definition's."""
    capacity_backend: BackendChoice = "auto"
    """Where sandboxed tasks are counted (auto, docker, kubernetes, none)."""
    kubernetes_namespace: str | None = None
    """The namespace whose ResourceQuota bounds k8s sandboxes (None: kubeconfig's)."""
    prices: dict[str, Price] = Field(default_factory=dict)
    """Model (or pattern) -> USD per million tokens."""
    cost_cap: CostCap | None = None
    """Pause and ask once the run's LLM cost crosses this (None: no cap)."""
    hosts: list[str] | Literal["any"] | None = None
    """Hosts the task workers may be placed on (None: the workspace's host only;
    workflows/policy/placement.py)."""
    host_timeout: float = 120.0
    """Seconds a silent host stays its tasks' home before it is lost."""
    route_after: float | None = None
    """Seconds an agent's open decision waits for an agent to collect before it goes to the
    operator (None: 2 x the tend interval)."""


class RunInput(BaseModel):
    """What starts (or continues as new) a run's workflow."""

    model_config = ConfigDict(use_attribute_docstrings=True)

    workspace: str
    """Path of the workspace directory."""
    definition: str
    """The eval-set definition file, relative to the workspace."""
    host_queue: str
    """The activity task queue of the workspace's host."""
    log_dir: str
    """The log dir Steward chose (used unless the definition names its own)."""
    settings: RunSettings
    """The options the run decides with."""
    launched_by: str = ""
    """Who launched it."""
    web_ui: str | None = None
    """The Temporal web UI page of this run, when there is one."""
    state: RunState | None = None
    """The state carried over continue-as-new (None: a new run)."""
    capture: Capture | None = None
    """The tasks resolved by `steward launch` (None: the run captures them itself)."""
    definition_hash: str | None = None
    """Hash of the definition that was launched (to tell drift)."""
    store_hits: dict[str, str] = Field(default_factory=dict)
    """Task identifier -> the log store path that answers it (reused, not run)."""
    timer: bool = True
    """False (`steward launch --no-timer`): the run tends only when asked."""
    tend_due: bool = True
    """A continued run tends at once unless its handover came between tends with none due (it
    then waits on, as the run it continues would have: a disarmed timer stays quiet)."""


class TimerState(BaseModel):
    """The run's own tend timer: armed or not, and at what interval."""

    model_config = ConfigDict(use_attribute_docstrings=True)

    armed: bool = True
    """Whether scheduled tends fire."""
    interval: float | None = None
    """Seconds, when armed explicitly at an interval; None: tend_interval."""


class TimerRequest(BaseModel):
    """`steward timer arm`: arm the run's tend timer."""

    model_config = ConfigDict(use_attribute_docstrings=True)

    interval: float | None = None
    """Seconds (`--interval`); None: the configured tend_interval."""
    by: str = ""
    """Who asked."""


class CostState(BaseModel):
    """Reserved capacity-time, and the cost cap's standing (LLM usage lives on the tasks)."""

    model_config = ConfigDict(use_attribute_docstrings=True)

    gi_minutes: float = 0.0
    """Memory reserved x time held, summed (GiB-minutes)."""
    usd: float | None = None
    """LLM cost in US dollars at the last tend (None: no price known)."""
    unpriced: list[str] = Field(default_factory=list)
    """Models with tokens but no price."""
    held_since: datetime | None = None
    """When the held reservation was last accounted (None: nothing held)."""
    cap_paused: bool = False
    """The run is paused because it crossed its cap."""
    cap_waived: str | None = None
    """The cap (as JSON) an operator chose to continue past."""


class RunState(BaseModel):
    """Everything the workflow knows of its run; carried over continue-as-new."""

    model_config = ConfigDict(use_attribute_docstrings=True)

    phase: RunPhase = "capturing"
    """Where the run stands."""
    error: str | None = None
    """Why the run failed (phase "failed")."""
    paused: bool = False
    """No new workers are spawned while paused (running ones go on)."""
    pause_reason: str | None = None
    """Why it was paused, as the pauser said."""
    ramp_hold: bool = False
    """The ramp climbs no setpoint (it still cuts on pushback)."""
    ramp_hold_reason: str | None = None
    """Why the ramp is held, as the holder said."""
    options_problem: str | None = None
    """Why _steward.yaml was unreadable at the last tend (None: read)."""
    cancel_reason: str | None = None
    """Why the run was cancelled."""
    log_dir: str = ""
    """The log dir the run writes to (the definition's own, or Steward's choice)."""
    sandbox_budget: int | None = None
    """Fleet-wide bound on sandboxed tasks' summed setpoints (samples); None: none."""
    max_tasks: int | None = None
    """Tasks running at once (the definition's); None: all."""
    tasks: list[TaskState] = Field(default_factory=list)
    """Every task of the run, in the definition's order."""
    workers: dict[str, WorkerProcess] = Field(default_factory=dict)
    """Worker id -> the worker process, for those believed alive."""
    lost_hosts: dict[str, datetime] = Field(default_factory=dict)
    """Host id -> when it was last heard from, for hosts judged lost."""
    refused_hosts: dict[str, str] = Field(default_factory=dict)
    """Host id -> why it takes none of this run's task workers (it cannot see the definition
    or the log storage); asked again at each placement, so a host put right is used."""
    host_losses: list[HostLost] = Field(default_factory=list)
    """Host losses told to the run, for the next tend to act on."""
    worker_counter: int = 0
    """Workers ever spawned by the run (numbers the next worker id)."""
    tend_count: int = 0
    """Tends done."""
    started_at: datetime | None = None
    """When the run started."""
    finished_at: datetime | None = None
    """When it last finished, failed or was cancelled (None: it has not, or was reopened)."""
    last_tend_at: datetime | None = None
    """When the last tend ran."""
    next_tend_at: datetime | None = None
    """When the timer's next tend is due (None: none scheduled)."""
    journal_seq: int = 0
    """Seq of the newest journal event."""
    pending_journal: list[JournalEvent] = Field(default_factory=list)
    """Journal events not yet written to the workspace (the newest JOURNAL_KEPT at most)."""
    journal_dropped: int = 0
    """Journal events let go unwritten while the workspace could not be written (the oldest
    beyond JOURNAL_KEPT): said in the journal once it can be written again."""
    triage: Triage = Field(default_factory=Triage)
    """Anomaly classes, decisions and their rulings."""
    outbox: list[Notice] = Field(default_factory=list)
    """Notifications not yet delivered."""
    notify_problem: str | None = None
    """Why the last delivery failed (journalled on change)."""
    tend_problems: list[str] = Field(default_factory=list)
    """Reasons of failed tends already notified (each is notified once)."""
    tend_problem: str | None = None
    """Why the last tend stopped short (it could not observe the run, or an activity's result
    was too large for Temporal); None: it finished."""
    workspace_problem: str | None = None
    """Why the last workspace write failed (its journal stays in pending_journal); None:
    written."""
    last_heartbeat_at: datetime | None = None
    """When the last liveness heartbeat was sent."""
    scanned_logs: list[str] = Field(default_factory=list)
    """Paths of the logs already scanned."""
    scanning_logs: list[str] = Field(default_factory=list)
    """Paths of the logs the running scan reads."""
    scan_problem: str | None = None
    """Why the last scan failed (None: it did not)."""
    signoff: Signoff | None = None
    """The signoff, once signed off."""
    capacity: CapacityState = Field(default_factory=CapacityState)
    """The run's standing with its capacity domain (queued, admitted, what it holds)."""
    cost: CostState = Field(default_factory=CostState)
    """Reserved capacity-time and the cost cap's standing."""
    definition_hash: str | None = None
    """Hash of the definition committed last (launch or amend)."""
    drift: list[str] = Field(default_factory=list)
    """Delta lines of an edit of the definition not launched."""
    drift_hash: str | None = None
    """Hash of the edited definition the drift lines describe."""
    reused: list[str] = Field(default_factory=list)
    """Names of the tasks satisfied from the log store."""
    timer: TimerState = Field(default_factory=TimerState)
    """The run's own tend timer."""
    restart_workers: list[str] = Field(default_factory=list)
    """Ids of hung workers ruled `restart`, for the next tend."""
    providers: dict[str, ProviderBudget] = Field(default_factory=dict)
    """budget-v1: endpoint -> the connection budget its workers share."""
    rate_limits: list[RateLimitBudget] = Field(default_factory=list)
    """The rate limits the workers learned of the run's endpoints, in the provider's units, as
    the last look saw them (workflows/policy/rate_limits.py)."""
    deferrals: list[Deferral] = Field(default_factory=list)
    """Rulings that wait for their provider to answer a probe (workflows/policy/deferrals.py)."""

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
    """A notification to deliver (through Apprise)."""

    model_config = ConfigDict(use_attribute_docstrings=True)

    kind: Literal[
        "decision",
        "finished",
        "tend_failed",
        "heartbeat",
        "signed_off",
        "cancelled",
        "orphaned",
        "host_lost",
        "host_back",
    ]
    """What it is about."""
    text: str
    """Its message, as the reader sees it."""


class Signoff(BaseModel):
    """The run's signoff: who accepted its results, and what became of its logs."""

    model_config = ConfigDict(use_attribute_docstrings=True)

    by: str
    """Who signed off."""
    at: datetime
    """When."""
    publish: bool = False
    """Whether the final logs were to be published to the log store."""
    published: list[str] = Field(default_factory=list)
    """Where they were published (paths in the log store)."""
    archived: list[str] = Field(default_factory=list)
    """Where the logs that were not final went (paths in the archive)."""
    logs: list[str] = Field(default_factory=list)
    """Paths of the final logs, one per complete task."""
