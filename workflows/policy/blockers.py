"""What stands between a run and its signoff, pure: each blocker with who owns it (the operator,
an agent, or the run itself, which clears it by going on) and the command that clears it.

`steward signoff --check`, `status --json`'s `signoff_blockers` and the signoff's refusal
sentence are all made from the one list rulings.signoff_items builds with `of_triage`, so they
cannot disagree: the sentence (`refusal_lines`) groups the list the way the refusal always read.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from steward.workflows.policy.decisions import PROPOSABLE, Decision, Triage

BlockerKind = Literal[
    "run",  # the run cannot be signed off in its phase (ended, or still resolving its tasks)
    "tasks_running",  # tasks not complete yet that the run is working on
    "task_stalled",  # a task given up on after fruitless respawns: its decision waits
    "class_unruled",  # an error class without a ruling (open, or proposed by an agent)
    "decision_open",  # a decision nobody answered
    "rulings_unapplied",  # rulings the run has still to carry out on the logs
    "scan_pending",  # transcripts the integrity scan has still to read
]
Owner = Literal["operator", "agent", "run"]


class Blocker(BaseModel):
    """One thing that keeps the run from its signoff."""

    kind: BlockerKind
    what: str
    """For people: what it is."""
    owner: Owner
    """Who clears it: the operator, an agent, or the run itself (by going on)."""
    command: str
    """What clears it: a command line (NAME: who you are), or `wait: ...` for the run's own."""
    ids: list[str] = Field(default_factory=list)
    """The tasks, error classes or decisions it names."""


def owner_now(decision: Decision) -> Owner:
    """Who owns an open decision now: an agent's item routed to the operator is theirs."""
    return "operator" if decision.for_operator else "agent"


def answer_command(decision: Decision) -> str:
    """The command its owner answers `decision` with (an agent's verdict on an error class is
    a proposal, ruled on by the operator)."""
    verdicts = "|".join(decision.verdicts)
    if owner_now(decision) == "operator":
        return f"steward rule {decision.id} {verdicts} --by NAME"
    if decision.kind == "stuck_sample":
        return f"steward rule {decision.id} cancel_tool --agent --by NAME"
    return f'steward rule {decision.id} {verdicts} --agent --by NAME --reason "..."'


def run_phase_blocker(phase: str) -> Blocker:
    """A run that cannot be signed off in its phase, whatever else holds."""
    if phase == "capturing":
        command = "wait: the run is still resolving its tasks"
    elif phase == "signed_off":
        command = "nothing: the run is already signed off"
    else:
        command = "nothing: the run has ended (`steward launch` starts a new run)"
    return Blocker(kind="run", what=f"the run is {phase}", owner="run", command=command)


def of_triage(
    triage: Triage,
    *,
    open_tasks: list[str],
    stalled_tasks: list[str],
    unapplied: list[str],
    unscanned: bool,
    scan_problem: str | None,
    waiting_for: list[str],
    paused: bool = False,
    phase: str = "running",
) -> list[Blocker]:
    """Every blocker of a live run, in the refusal's order: tasks, error classes, decisions,
    rulings to carry out, the scan. `open_tasks` are the names of tasks not complete or given
    up (`stalled_tasks` among them); `unapplied` the classes whose rulings are not done."""
    blockers = _task_blockers(triage, open_tasks, stalled_tasks, paused, phase)
    open_decisions = triage.open_decisions()
    for cls in triage.classes:
        if cls.state not in ("open", "proposed"):
            continue
        decision = next((d for d in open_decisions if d.class_id == cls.id), None)
        what = f"error class {cls.id} ({cls.title}) is not ruled"
        if cls.state == "proposed" and cls.proposal is not None:
            what += (
                f": {cls.proposal.by or 'an agent'} proposed {cls.proposal.verdict}, "
                "the operator rules"
            )
        blockers.append(
            Blocker(
                kind="class_unruled",
                what=what + (f" (decision {decision.id})" if decision else ""),
                owner=owner_now(decision) if decision else "operator",
                command=answer_command(decision) if decision else "steward collect",
                ids=[cls.id],
            )
        )
    for decision in open_decisions:
        owner = owner_now(decision)
        note = ""
        if decision.routed:
            note = f" (routed to the operator: {decision.routed_because or 'no agent looked'})"
        elif owner == "agent" and decision.kind in PROPOSABLE:
            note = " (the agent's verdict is a proposal the operator rules on)"
        blockers.append(
            Blocker(
                kind="decision_open",
                what=f"decision {decision.id} is open{note}: {decision.question}",
                owner=owner,
                command=answer_command(decision),
                ids=[decision.id],
            )
        )
    # A rerun ruled --when-provider-answers waits for its provider, not for a tend or a worker.
    deferred = [c for c in unapplied if _waits_for_provider(triage, c)]
    unapplied = [c for c in unapplied if c not in deferred]
    if unapplied:
        waiting = f" (waiting for {'; '.join(waiting_for)} to exit)" if waiting_for else ""
        blockers.append(
            Blocker(
                kind="rulings_unapplied",
                what=f"rulings not yet applied: {', '.join(unapplied)}{waiting}",
                owner="run",
                command=(
                    f"wait: the rulings are carried out once {'; '.join(waiting_for)} exit"
                    if waiting_for
                    else "wait: the run carries them out at its next tend (`steward tend` now)"
                ),
                ids=list(unapplied),
            )
        )
    if deferred:
        blockers.append(
            Blocker(
                kind="rulings_unapplied",
                what=f"rulings waiting for their provider to answer: {', '.join(deferred)}",
                owner="run",
                command=(
                    "wait: the run probes the provider and carries them out once it answers "
                    "(`steward status` shows the probes; rule anew to apply now)"
                ),
                ids=deferred,
            )
        )
    if unscanned:
        blockers.append(
            Blocker(
                kind="scan_pending",
                what="transcripts not scanned yet"
                + (f" (last attempt: {scan_problem})" if scan_problem else ""),
                owner="run",
                command=(
                    "steward tend (tries the scan again; every tend does)"
                    if scan_problem
                    else "wait: the integrity scan runs once every task is settled"
                ),
            )
        )
    return blockers


def _task_blockers(
    triage: Triage, open_tasks: list[str], stalled_tasks: list[str], paused: bool, phase: str
) -> list[Blocker]:
    blockers = []
    running = [name for name in open_tasks if name not in stalled_tasks]
    if running:
        if paused:
            owner, command = "operator", "steward resume (the run is paused), then wait"
        elif phase == "queued":
            owner, command = "run", "wait: the run is queued for capacity and starts by itself"
        else:
            owner, command = "run", f"wait: {len(running)} task(s) still running"
        blockers.append(
            Blocker(
                kind="tasks_running",
                what=f"tasks not complete yet: {', '.join(running)}",
                owner=owner,
                command=command,
                ids=running,
            )
        )
    for name in stalled_tasks:
        decision = next(
            (
                d
                for d in triage.open_decisions()
                if d.kind == "stalled_task" and _names_task(triage, d, name)
            ),
            None,
        )
        blockers.append(
            Blocker(
                kind="task_stalled",
                what=f"task {name} stalled (its workers kept dying)"
                + (f": decision {decision.id}" if decision else ""),
                owner="operator",
                command=answer_command(decision) if decision else "steward collect",
                ids=[name],
            )
        )
    return blockers


def _waits_for_provider(triage: Triage, class_id: str) -> bool:
    cls = triage.find_class(class_id)
    return cls is not None and cls.ruling is not None and cls.ruling.until is not None


def _names_task(triage: Triage, decision: Decision, name: str) -> bool:
    cls = triage.find_class(decision.class_id)
    return cls is not None and any(i.anomaly.task_name == name for i in cls.instances)


def refusal_lines(blockers: list[Blocker]) -> list[str]:
    """The blockers as the signoff's refusal says them, grouped by kind."""
    lines = [b.what for b in blockers if b.kind == "run"]
    groups = (
        ("tasks not complete or settled", ("tasks_running", "task_stalled")),
        ("error classes not ruled", ("class_unruled",)),
        ("decisions open", ("decision_open",)),
    )
    for label, kinds in groups:
        ids = [i for b in blockers if b.kind in kinds for i in b.ids]
        if ids:
            lines.append(f"{label}: {', '.join(ids)}")
    lines += [b.what for b in blockers if b.kind in ("rulings_unapplied", "scan_pending")]
    return lines
