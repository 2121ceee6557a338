"""What crosses the activity boundary: each activity's request and result. The run's own
state and what the CLI shows are contracts.py's; these are the messages to and from the world.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field

from steward.workflows.contracts import (
    JournalEvent,
    RunStatus,
    TaskSpec,
    WatchLimits,
    WorkerProcess,
)
from steward.workflows.policy.cost import CostCap, Price
from steward.workflows.policy.decisions import LedgerOp, StandingRules
from steward.workflows.policy.provider_budget import ConnectionShare
from steward.workflows.policy.rulings import Action
from steward.workflows.policy.triage_ledger import LedgerOrder, OrderOutcome


class CaptureRequest(BaseModel):
    workspace: str
    definition: str
    timeout: float | None = None  # seconds (the CLI's capture_timeout); None: the workspace's


class SelectedTask(BaseModel):
    identifier: str
    registry_name: str | None = None
    args_hash: str | None = None
    resume: str | None = None  # prior log whose completed samples are reused


class SpawnRequest(BaseModel):
    workspace: str
    definition: str
    worker_id: str
    eval_set_id: str
    log_dir: str
    max_samples: int
    tasks: list[SelectedTask]
    # budget-v1: the worker's adaptive-connection bounds (its share of the provider budget).
    connections: ConnectionShare | None = None
    host: str = ""  # hosts: the host it is placed on (empty: the workspace's)
    claim_logs: bool = False  # hosts: claim its task logs (activities/logs/log_owners.py) first


class ObserveRequest(BaseModel):
    log_dir: str
    workers: list[WorkerProcess]
    tasks: list[TaskSpec]  # the tasks not yet complete
    anomalies: AnomalyRequest | None = None  # also look for anomalies (one activity, not two)
    # orphan-v1: the run's workspace and workflow id, to tell whether the workspace is still its own
    workspace: str | None = None
    workflow_id: str | None = None
    # remote-stuck-v1: another host's observe also asks its live workers for samples stuck
    # this long (its specs are every task of those workers, not only the open ones)
    stuck_after: float | None = None


class HostStorageRequest(BaseModel):
    """host-check-v1: what a host must see before task workers go there."""

    workspace: str
    definition: str  # as the spawn names it (relative to the workspace, or absolute)
    log_dir: str


class StopRequest(BaseModel):
    workers: list[WorkerProcess]
    grace_seconds: float = 30.0


class StopResult(BaseModel):
    stopped_gracefully: list[str] = Field(default_factory=list)
    killed: list[str] = Field(default_factory=list)


class WatchRequest(BaseModel):
    worker: WorkerProcess
    log_dir: str
    limits: WatchLimits = Field(default_factory=WatchLimits)
    # The last sign of life of a hang already reported: a hang is reported again only after
    # the worker showed life since (it recovered, then hung anew).
    hang_reported: datetime | None = None
    complete_reported: bool = False  # the run heard its tasks' logs are success
    # budget-v1: report the worker's rate-limit pushback (and, once a budget was lowered, a
    # controller held at its ceiling while more waits), so the run retunes the shared budget
    # now, not at its next timer.
    report_pushback: bool = False
    report_saturated: bool = False
    rate_limit_reported: int | None = None  # its cumulative rate-limit retries last reported
    # Since when its provider had been failing when that was reported stuck: reported again
    # only after an answer (provider_answered), then a new failing as long.
    provider_stuck_reported: datetime | None = None


WatchEnd = Literal[
    "exited",
    "complete",
    "hung",
    "recovered",
    "lingering",
    "pushback",
    "saturated",
    "provider_stuck",
    "provider_answered",
]  # recovered: a worker reported hung showed life again (its hang decision lapses);
# provider_stuck: its provider answered nothing for provider_stuck_after; provider_answered:
# a provider reported stuck answers again (its decision lapses)
CONNECTION_ENDS = ("pushback", "saturated")  # the worker lives on: the run watches it again


class WorkerEnd(BaseModel):
    """Why a watch completed: the process exited, its tasks are complete while it winds down
    (the run finishes them without waiting for the exit), or it needs the run's attention."""

    worker_id: str
    kind: WatchEnd
    at: datetime
    detail: str  # one sentence for the journal and the decision
    exit_code: int | None = None  # None: not known (the watch was not the process's parent)
    signal: int | None = None
    log_status: dict[str, str | None] = Field(default_factory=dict)  # identifier -> newest log
    since: datetime | None = None  # hung / lingering: since when; recovered: its sign of life
    cause: str | None = None  # exited: the exception line its own log ends with, if any
    rate_limit_retries: int | None = None  # pushback / saturated: its cumulative count now
    # exited: the last lines of its own log (a few, each cut short), for a stalled task's question
    log_tail: list[str] = Field(default_factory=list)
    model: str | None = None  # provider_stuck / provider_answered: the model (its provider)


class WorkspaceWrite(BaseModel):
    workspace: str
    status: RunStatus
    journal: list[JournalEvent]


class TidyRequest(BaseModel):
    log_dir: str
    identifiers: list[str]


class SetpointChange(BaseModel):
    """A live retune of one task in one worker, through its control socket (no task: the
    worker's process-wide limits, such as its connection ceiling)."""

    socket: str
    task_id: str | None
    max_samples: int | None = None
    max_connections: int | None = None
    reason: str = ""


class SetpointRequest(BaseModel):
    changes: list[SetpointChange]


class LiveOptionsRequest(BaseModel):
    workspace: str
    definition: str | None = None  # also hash the definition file (drift)


class LiveOptions(BaseModel):
    """The options re-read each tend (the agent writes standing rules during a run)."""

    samples_ramp: tuple[int, int] | Literal[False] | None = None  # None: options unreadable now
    problem: str | None = None
    rules: StandingRules | None = None
    heartbeat: float | Literal[False] | None = None
    stuck_after: float | None = None
    prices: dict[str, Price] | None = None
    cost_cap: CostCap | None = None
    definition_hash: str | None = None  # of the definition file as it is now
    tend_interval: float | None = None  # as _steward.yaml says now
    watch: WatchLimits | None = None
    route_after: float | None = None  # None: 2 x tend_interval (applied with `rules`)


class AnomalyRequest(BaseModel):
    workspace: str
    log_dir: str
    tasks: list[TaskSpec]  # every task of the run
    workers: list[WorkerProcess]
    stuck_after: float
    known_errors: list[str] = Field(default_factory=list)  # sample uuids already triaged
    # Samples the run holds (task#id@epoch): say which are healthy in the newest log.
    suspects: list[str] = Field(default_factory=list)
    # The triage ledger (workflows/policy/triage_ledger.py): where it is, the run's changes to
    # write first, and the classes whose instances to check for healing.
    ledger: str | None = None
    ledger_ops: list[LedgerOp] = Field(default_factory=list)
    suspect_classes: list[str] = Field(default_factory=list)


class ApplyRequest(BaseModel):
    workspace: str
    actions: list[Action]
    workers: list[WorkerProcess] = Field(default_factory=list)
    # Rulings on ledger classes, carried out on the instances the ledger holds; log edits only
    # where the task's log is final (`settled_logs`: task identifier -> that log).
    orders: list[LedgerOrder] = Field(default_factory=list)
    settled_logs: dict[str, str] = Field(default_factory=dict)
    ledger: str | None = None
    ledger_ops: list[LedgerOp] = Field(default_factory=list)


class ApplyResult(BaseModel):
    done: list[Action] = Field(default_factory=list)
    # Not carried out: the sample is healthy in its task's newest log (nothing wrong to act on).
    skipped: list[Action] = Field(default_factory=list)
    problems: list[str] = Field(default_factory=list)
    rerun_tasks: list[str] = Field(default_factory=list)  # task identifiers to re-spawn
    outcomes: list[OrderOutcome] = Field(default_factory=list)  # one per order
    ledger_through: int = 0  # the ledger holds the run's changes up to this seq


class NotifyRequest(BaseModel):
    workspace: str
    title: str
    body: str


class NotifyResult(BaseModel):
    configured: bool
    delivered: bool
    problem: str | None = None


class ScanRequest(BaseModel):
    """The scoring-integrity scan of some transcripts (activities/scan/scan.py runs it in a child)."""

    log_paths: list[str]
    results_dir: str
    scan_model: str | Literal[False] | None = None
    scanners: list[str] = Field(default_factory=list)
    cwd: str | None = None  # where relative paths in the scan's options resolve (the workspace)
    max_connections: int | None = None  # budget-v1: its share of the provider budget
    # scan-widen-v1: whom to ask for its share as it changes (EvalRun.scan_connections), and
    # the most it may be given (the provider budget)
    scan_key: str | None = None
    run_id: str | None = None
    connections_ceiling: int | None = None


class CurateRequest(BaseModel):
    workspace: str
    log_dir: str
    keep: list[str]  # the final logs
    publish: bool = False


class CurateResult(BaseModel):
    archived: list[str] = Field(default_factory=list)
    published: list[str] = Field(default_factory=list)
    problem: str | None = None


class FetchRequest(BaseModel):
    hits: dict[str, str]  # task identifier -> log store path
    log_dir: str


class MoveRequest(BaseModel):
    moves: list[tuple[str, str]]  # (log path, destination directory)


ObserveRequest.model_rebuild()


class BudgetCall(BaseModel):
    """The run's connection budgets, exchanged with the provider ledger: which endpoint each of
    its models reaches (resolved under the workspace's environment), and what it learned."""

    workspace: str
    run_id: str
    models: list[str] = Field(default_factory=list)
    learned: dict[str, int] = Field(default_factory=dict)  # endpoint -> limit


class LearnedBudget(BaseModel):
    limit: int
    learned_at: datetime
    run_id: str


class BudgetAnswer(BaseModel):
    endpoints: dict[str, str] = Field(default_factory=dict)  # model -> endpoint
    known: dict[str, LearnedBudget] = Field(default_factory=dict)  # endpoint -> lesson


class BudgetExchange(BaseModel):
    run_id: str
    endpoints: list[str] = Field(default_factory=list)
    learned: dict[str, int] = Field(default_factory=dict)


class ProviderLedgerInput(BaseModel):
    known: dict[str, LearnedBudget] = Field(default_factory=dict)


class ProbeRequest(BaseModel):
    """Does the provider answer? One cheap request per model (a rerun deferred until it does:
    workflows/policy/deferrals.py), made as the workspace's task workers would make it."""

    workspace: str
    models: list[str]
    timeout: float = 30.0  # seconds for each model's request


class ProbeResult(BaseModel):
    answered: bool  # every model answered
    endpoints: dict[str, str] = Field(default_factory=dict)  # model -> the endpoint probed
    problems: dict[str, str] = Field(default_factory=dict)  # model -> what its request met
