"""The triage ledger, pure side: where every instance of a sample error class lives, so a run's
state stays the same size however many samples err.

A class of errored (or flagged) samples can hold thousands of instances; the run keeps only how
many it holds, per task, and the newest few (decisions.ErrorClass). Every instance is in the
ledger, a JSON-lines file in the workspace (activities/logs/triage_ledger.py writes and reads
it). The run decides what goes in and out (`Triage.record`: an instance taken in, one healed);
those changes ride on the next activity that reads the ledger, which appends them before it
reads (idempotent: each change has a sequence number), and the run forgets them once that
activity succeeded. What only the world can say is written by the activity that saw it: which
instances a ruling's effect was carried out on, which samples it re-ran.

A ruling on such a class is an order (`ledger_orders`): the apply activity carries it out on
the class's instances in the ledger and answers with an `OrderOutcome` per class, which
`take_outcomes` records.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from steward.workflows.policy.decisions import EDITS, Triage, needs_effect

MAX_NEW = 200  # new ledger instances one look hands the run (more: the next tend, at once)
MAX_HEALED = 1_000  # healed instances one look hands the run


class LedgerOrder(BaseModel):
    """A ruling to carry out on every instance of a ledger class the ledger holds."""

    class_id: str
    verdict: str
    by: str
    reason: str


class OrderOutcome(BaseModel):
    """What carrying out one order did, and what it left."""

    class_id: str
    verdict: str
    done: int = 0
    skipped: int = 0  # healthy in their task's newest log: nothing to act on
    remaining: int = 0  # not carried out yet (their task's log is not final, or a later call)
    waiting_tasks: list[str] = Field(default_factory=list)  # tasks holding the remaining ones
    edited_logs: dict[str, str] = Field(default_factory=dict)  # task -> the log now edited
    rerun_tasks: list[str] = Field(default_factory=list)


def ledger_orders(triage: Triage, settled_logs: dict[str, str]) -> list[LedgerOrder]:
    """The ledger classes whose ruling has something to do now: ruled and not yet carried out
    on a task whose log is final, or an exclusion or zero whose task has a newer final log
    than the one it was written into (`settled_logs`: task identifier -> its final log)."""
    orders = []
    for cls in triage.classes:
        ruling = cls.ruling
        if not cls.in_ledger or ruling is None or not needs_effect(cls.kind, ruling.verdict):
            continue
        if ruling.until is not None:
            continue  # it waits for its provider to answer (deferrals.py)
        waiting = cls.tasks.keys() if cls.waiting_tasks is None else cls.waiting_tasks
        due = cls.state == "ruled" and any(task in settled_logs for task in waiting)
        redo = (
            cls.state == "resolved"
            and ruling.verdict in EDITS
            and any(
                task in settled_logs and settled_logs[task] != cls.edited_logs.get(task)
                for task in cls.tasks
            )
        )
        if due or redo:
            orders.append(
                LedgerOrder(
                    class_id=cls.id, verdict=ruling.verdict, by=ruling.by, reason=ruling.reason
                )
            )
    return orders


def unapplied(triage: Triage, settled_logs: dict[str, str]) -> set[str]:
    """Ledger classes whose ruling still has work: not carried out, or due again."""
    return {c.id for c in triage.classes if c.in_ledger and c.state == "ruled"} | {
        o.class_id for o in ledger_orders(triage, settled_logs)
    }


def waiting_tasks(triage: Triage) -> set[str]:
    """Tasks whose ruled log edits on ledger classes are not done yet."""
    tasks: set[str] = set()
    for cls in triage.classes:
        if cls.ruling is not None and cls.ruling.until is not None:
            continue  # it waits for its provider, not for a worker (deferrals.py)
        if cls.in_ledger and cls.state == "ruled":
            tasks |= set(cls.tasks if cls.waiting_tasks is None else cls.waiting_tasks)
    return tasks


def take_outcomes(triage: Triage, outcomes: list[OrderOutcome]) -> None:
    """Record what the apply activity did with the orders (in place): a ruled class with
    nothing left is resolved."""
    for outcome in outcomes:
        cls = triage.find_class(outcome.class_id)
        if cls is None or cls.ruling is None or cls.ruling.verdict != outcome.verdict:
            continue  # ruled again meanwhile: the next order carries out the new ruling
        cls.waiting_tasks = sorted(outcome.waiting_tasks)
        cls.edited_logs.update(outcome.edited_logs)
        if cls.state == "ruled" and outcome.remaining == 0:
            cls.state = "resolved"


def written(triage: Triage, through: int) -> None:
    """The ledger holds every change up to `through`: the run forgets them (in place)."""
    triage.ledger_ops = [op for op in triage.ledger_ops if op.seq > through]
