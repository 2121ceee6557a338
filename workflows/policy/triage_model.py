"""The triage's data, pure: anomalies, the error classes they are grouped into, the decisions
raised on them, rulings and standing rules, the changes bound for the triage ledger; which
verdicts each kind takes and what a verdict does. decisions.py groups and raises with them."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field, model_validator

Role = Literal["agent", "operator"]
AnomalyKind = Literal[
    "sample_error",  # a sample errored
    "rerun_failed",  # a sample re-run by a ruling errored again
    "all_zero",  # a complete task scored zero on every sample
    "scan_finding",  # the scoring-integrity scan flagged a transcript
    "stuck_sample",  # no activity for stuck_after
    "stalled_task",  # given up after stall_after fruitless respawns
    "approval",  # a tool call waiting for a human
    "cost_cap",  # the run's LLM cost crossed its cap (the run is paused)
    "hung_worker",  # a live worker showed no sign of life (start_timeout, unresponsive_after)
    "provider_stuck",  # a task's provider answered none of its requests for provider_stuck_after
]
ClassState = Literal["open", "proposed", "ruled", "resolved", "accepted", "healed"]

SAMPLE_VERDICTS = ["rerun", "exclude", "zero", "score", "accept", "dismiss"]
VERDICTS: dict[str, list[str]] = {
    "sample_error": SAMPLE_VERDICTS,
    "rerun_failed": SAMPLE_VERDICTS,
    "scan_finding": SAMPLE_VERDICTS,
    "all_zero": ["rerun", "accept", "dismiss"],
    "stuck_sample": ["cancel_tool", "retry", "cancel", "dismiss"],
    "stalled_task": ["retry", "give_up"],
    "approval": ["approve", "reject", "terminate"],
    "cost_cap": ["continue", "cancel"],
    "hung_worker": ["restart", "wait"],
    # wait: Inspect goes on retrying (the decision closes itself once the provider answers);
    # pause: spawn nothing new until `steward resume`.
    "provider_stuck": ["wait", "pause"],
}
# Kinds an agent proposes on and the operator rules; the rest are the operator's alone.
PROPOSABLE = {"sample_error", "scan_finding", "all_zero"}
# Verdicts that change a log, per instance: they wait until the task's log is final.
LOG_VERDICTS = {"rerun", "exclude", "zero"}
EDITS = {"exclude", "zero"}  # score edits, re-applied when a task's log is replaced
# Verdicts that act on a live worker or a waiting approval.
LIVE_VERDICTS = {"cancel_tool", "retry", "cancel", "approve", "reject", "terminate"}


# Verdicts the run carries out itself, at the ruling (not an activity on the logs or a worker):
# the one description of what they do; eval_run_triage.py has a step of that name for each.
RunStep = Literal[
    "respawn_task", "give_up_task", "restart_worker", "waive_cost_cap", "cancel_run", "pause_run"
]
RUN_STEPS: dict[tuple[str, str], RunStep] = {
    ("stalled_task", "retry"): "respawn_task",  # its fruitless count starts again
    ("stalled_task", "give_up"): "give_up_task",  # the run finishes without it
    ("hung_worker", "restart"): "restart_worker",  # stopped at the next tend, its tasks respawn
    ("cost_cap", "continue"): "waive_cost_cap",  # resumed; this cap does not pause it again
    ("cost_cap", "cancel"): "cancel_run",
    ("provider_stuck", "pause"): "pause_run",  # spawn nothing new until `steward resume`
}


def run_step(kind: str, verdict: str) -> RunStep | None:
    """What the run itself does when the operator rules `verdict` on a class of `kind`."""
    return RUN_STEPS.get((kind, verdict))


def needs_effect(kind: str, verdict: str) -> bool:
    """Whether a verdict is carried out by an activity (else it is recorded, or the workflow
    itself applies it: a stalled task's retry / give up)."""
    return kind not in ("stalled_task", "hung_worker") and verdict in LOG_VERDICTS | LIVE_VERDICTS


def state_after(kind: str, verdict: str) -> ClassState:
    if verdict in ("accept", "dismiss"):
        return "accepted"
    return "ruled" if needs_effect(kind, verdict) else "resolved"


class Anomaly(BaseModel):
    """One problem a tend observed (an activity reports these; the policy groups them)."""

    kind: AnomalyKind
    task: str  # task identifier
    task_name: str
    sample_id: str | None = None
    epoch: int | None = None
    uuid: str | None = None  # what makes this occurrence itself: sample uuid, approval id, ...
    log: str | None = None
    error_type: str | None = None
    frame: str | None = None  # deepest meaningful frame, "pkg/module.py:function"
    detail: str = ""  # message, explanation, tool arguments (truncated)
    tool: str | None = None  # stuck tool call / approval tool
    scanner: str | None = None
    worker: str | None = None  # hung_worker, stuck_sample: the worker id
    cause: str | None = None  # stalled_task: what its last dead worker said (an exception line)
    model: str | None = None  # provider_stuck: the model whose provider does not answer

    @property
    def sample_ref(self) -> str:
        return f"{self.task}#{self.sample_id}@{self.epoch}"

    @property
    def key(self) -> str:
        """What makes an occurrence itself: the same errored sample (uuid) read again — after a
        restart, or from the log a re-run supersedes — is the same instance."""
        kind = "sample_error" if self.kind == "rerun_failed" else self.kind
        return f"{kind}/{self.sample_ref}/{self.uuid or ''}"

    @property
    def sample_key(self) -> str:
        """`key` for runs that count each (id, epoch) once: an errored sample read again from
        a resumed task's newer log (another uuid) is the same instance; a re-run that fails
        again is a new one (its uuid)."""
        if self.kind == "sample_error":
            return f"sample_error/{self.sample_ref}"
        if self.kind == "rerun_failed":
            return f"rerun_failed/{self.sample_ref}/{self.uuid or ''}"
        return self.key


class Ruling(BaseModel):
    verdict: str
    reason: str = ""
    by: str = ""
    role: Role = "operator"
    at: datetime | None = None
    standing: str | None = None  # the standing rule that made it, when one did
    # Held back until this happens ("provider_answers": a probe of the class's provider got an
    # answer; workflows/policy/deferrals.py); None: carried out at once.
    until: Literal["provider_answers"] | None = None


class Instance(BaseModel):
    key: str
    anomaly: Anomaly
    applied: str | None = None  # verdict whose effect is done for it
    applied_log: str | None = None  # the log the effect was written into


# Kinds whose instances can number in the thousands (one per errored or flagged sample): the
# run keeps only the newest few in its state and every one in its triage ledger, a file in the
# workspace (workflows/policy/triage_ledger.py); the others are few (one per task, tool, worker,
# approval) and live in the state whole.
LEDGER_KINDS = ("sample_error", "rerun_failed", "scan_finding")
WINDOW = 5  # instances a ledger class keeps in the state: the newest, for views and questions


class ErrorClass(BaseModel):
    id: str
    kind: AnomalyKind
    signature: str
    title: str
    instances: list[Instance] = Field(default_factory=list)
    state: ClassState = "open"
    proposal: Ruling | None = None
    ruling: Ruling | None = None
    # Ledger kinds only: how many instances the class holds (`instances` is the newest few), how
    # many of them each task holds, and what the last application of its ruling left.
    held: int = 0
    tasks: dict[str, int] = Field(default_factory=dict)
    waiting_tasks: list[str] | None = None  # tasks with ruled log edits not done (None: all)
    edited_logs: dict[str, str] = Field(default_factory=dict)  # task -> log its edits are in

    @property
    def settled(self) -> bool:
        return self.state in ("resolved", "accepted", "healed")

    @property
    def in_ledger(self) -> bool:
        return self.kind in LEDGER_KINDS

    @property
    def count(self) -> int:
        """How many instances the class holds."""
        return self.held if self.in_ledger else len(self.instances)

    def hold(self, instance: Instance) -> None:
        """Take a new instance in (a ledger class keeps the newest few in the state)."""
        self.instances.append(instance)
        if self.in_ledger:
            self.held += 1
            task = instance.anomaly.task
            self.tasks[task] = self.tasks.get(task, 0) + 1
            if self.waiting_tasks is not None and task not in self.waiting_tasks:
                self.waiting_tasks.append(task)  # a ruled class rules its new instances too
            del self.instances[:-WINDOW]

    def release(self, keys: dict[str, str]) -> int:
        """Let the instances with `keys` (key -> its task) go, healed or lapsed; how many of
        them the class held."""
        before = len(self.instances)
        self.instances = [i for i in self.instances if i.key not in keys]
        if not self.in_ledger:
            return before - len(self.instances)
        gone = 0
        for task in keys.values():
            if self.tasks.get(task, 0) > 0:
                self.tasks[task] -= 1
                gone += 1
                if not self.tasks[task]:
                    del self.tasks[task]
        self.held -= gone
        return gone


class Decision(BaseModel):
    id: str
    class_id: str
    kind: AnomalyKind
    owner: Role
    verdicts: list[str]
    question: str
    raised_at: datetime
    raised_tend: int
    routed: bool = False  # an agent's item routed to the operator too (no agent looked)
    # When and why it was routed; it stays the operator's (an agent may still propose on it).
    routed_at: datetime | None = None
    routed_because: str | None = None
    notified: bool = False
    answer: Ruling | None = None

    @property
    def open(self) -> bool:
        return self.answer is None

    @property
    def for_operator(self) -> bool:
        return self.owner == "operator" or self.routed


class StandingRules(BaseModel):
    preauthorized: dict[str, str] = Field(default_factory=dict)  # class pattern -> verdict
    stuck_cancel: bool | list[str] = False
    policies: list[str] = Field(default_factory=list)


class LedgerOp(BaseModel):
    """A change to the triage ledger the run decided and an activity has yet to write: an
    instance a ledger class took in, or one it let go (healed)."""

    seq: int
    op: Literal["add", "remove", "rerun"]
    class_id: str
    key: str  # the instance's key; rerun: the sample ref (task#id@epoch) a ruling re-ran
    anomaly: Anomaly | None = None  # add: the instance's anomaly
    applied: str | None = None  # add, of an instance held before the ledger: what was done
    applied_log: str | None = None


class Triage(BaseModel):
    """The decision side of a run's state."""

    classes: list[ErrorClass] = Field(default_factory=list)
    decisions: list[Decision] = Field(default_factory=list)
    decision_counter: int = 0
    last_collect_tend: int | None = None  # tend count when an agent last collected
    last_collect_at: datetime | None = None  # when an agent last collected (routing by time)
    reruns: dict[str, str] = Field(default_factory=dict)  # before the ledger: read once, moved
    ledger_ops: list[LedgerOp] = Field(default_factory=list)  # not yet written to the ledger
    ledger_seq: int = 0

    @model_validator(mode="after")
    def _into_the_ledger(self) -> Triage:
        """A run that kept every instance in its state (before 0.3.0) moves them to the ledger:
        each becomes an `add` the next ledger write carries, and the class keeps the newest."""
        for cls in self.classes:
            if not cls.in_ledger or cls.held or len(cls.instances) == 0:
                continue
            for instance in cls.instances:
                self.record("add", cls.id, instance.key, instance.anomaly)
                self.ledger_ops[-1].applied = instance.applied
                self.ledger_ops[-1].applied_log = instance.applied_log
                cls.tasks[instance.anomaly.task] = cls.tasks.get(instance.anomaly.task, 0) + 1
            cls.held = len(cls.instances)
            del cls.instances[:-WINDOW]
        for ref, class_id in self.reruns.items():
            self.record("rerun", class_id, ref)
        self.reruns = {}
        return self

    def record(
        self,
        op: Literal["add", "remove", "rerun"],
        class_id: str,
        key: str,
        anomaly: Anomaly | None = None,
    ) -> None:
        self.ledger_seq += 1
        self.ledger_ops.append(
            LedgerOp(seq=self.ledger_seq, op=op, class_id=class_id, key=key, anomaly=anomaly)
        )

    def find_class(self, class_id: str) -> ErrorClass | None:
        return next((c for c in self.classes if c.id == class_id), None)

    def find_decision(self, decision_id: str) -> Decision | None:
        return next((d for d in self.decisions if d.id == decision_id), None)

    def open_decisions(self) -> list[Decision]:
        return [d for d in self.decisions if d.open]
