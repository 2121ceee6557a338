"""The relaunch delta, as pure policy: what `steward launch` of an edited definition changes.

There is no amend command: the user edits the eval-set definition and launches again. Launch
compares the new capture with what the run committed (its tasks, and each one's current log)
and with the archived logs, and reports one row per task:

- add: new work, not in the previous definition.
- extend: same task (same identifier), asking for more than the committed plan covers (raised
  epochs, a grown dataset). Inspect's identifier covers task file and name, task args, model,
  solver, generate config, model args, version and limits, but not epochs nor dataset size, so
  these keep the identifier. A task extends when either its samples or its epochs rose (the
  committed log does not cover what is asked), even if the product stays the same.
- removed: gone from the definition; its log moves to logs-archive/.
- superseded: displaced by a new task of the same name and model under a different
  configuration (a different identifier); its log moves to logs-archive/. The superseded row
  carries the old identifier (`identifier`) and the new one (`superseded_by`); the new task's
  own row (add or restore) names the old one in `previous`. So a changed task gives two rows.
- restore: asked for again, and an archived log answers it (same identifier, at least the
  samples and the epochs asked): it moves back instead of re-running. An archived log that is
  too small does not answer it: the task is an add (the detail says why).
- unchanged: same identifier and nothing more asked: kept, its log stays. A smaller plan (fewer
  samples or epochs, none more) is unchanged too, with a detail saying so.

Rows follow the new definition's order (a superseded row just before its successor's row), then
the removed ones in committed order.

The gate: a purely additive delta commits without comment. A delta that would move results OUT
of the log directory is refused unless the user accepts the archive. Only rows that move a log
count: a removed or superseded task that never wrote a log moves nothing, so it is not gated
(`Delta.additive` is still False for it; `Delta.archiving` is what the gate looks at). Restores
move logs back in, which is never gated.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from steward.workflows.contracts import Capture, TaskSpec
from steward.workflows.policy.layout import archive_dir_of

RowKind = Literal["add", "extend", "removed", "superseded", "restore", "unchanged"]
ARCHIVE_DIR = archive_dir_of("logs") + "/"  # as the user sees it, beside the usual logs/
_KIND_WIDTH = max(len(k) for k in ("add", "extend", "removed", "superseded", "restore"))


class ArchivedLog(BaseModel):
    """A log in logs-archive/, with what it covers."""

    identifier: str
    name: str
    model: str
    samples: int
    epochs: int
    path: str


class DeltaRow(BaseModel):
    kind: RowKind
    name: str
    model: str
    identifier: str  # the new task's (for removed and superseded: the old task's)
    previous: str | None = None  # add/restore of a changed task: the identifier it displaces
    superseded_by: str | None = None  # superseded: the identifier that displaces it
    moves: list[str] = []  # log paths that move (out to the archive, or back for restore)
    detail: str = ""


class Delta(BaseModel):
    rows: list[DeltaRow]

    @property
    def changed(self) -> bool:
        return any(row.kind != "unchanged" for row in self.rows)

    @property
    def moving(self) -> list[DeltaRow]:
        """Removed and superseded rows, whether or not they have a log to move."""
        return [row for row in self.rows if row.kind in ("removed", "superseded")]

    @property
    def archiving(self) -> list[DeltaRow]:
        """The rows whose logs would move out to the archive: what the gate refuses."""
        return [row for row in self.moving if row.moves]

    @property
    def additive(self) -> bool:
        return not self.moving


def _plan(samples: int, epochs: int) -> str:
    return f"{samples} samples x {epochs} epoch{'s' if epochs != 1 else ''}"


def _work_change(old: TaskSpec | ArchivedLog, new: TaskSpec) -> str:
    """'epochs 1 -> 3', 'samples 10 -> 20 (x2 epochs)', both, or '' when the plan is the same."""
    parts = []
    if new.samples != old.samples:
        part = f"samples {old.samples} -> {new.samples}"
        if new.epochs == old.epochs and new.epochs != 1:
            part += f" (x{new.epochs} epochs)"
        parts.append(part)
    if new.epochs != old.epochs:
        parts.append(f"epochs {old.epochs} -> {new.epochs}")
    return ", ".join(parts)


def _config_change(old: TaskSpec, new: TaskSpec) -> str:
    """Why the identifier changed, as far as the capture tells."""
    parts = []
    if old.file and new.file and old.file != new.file:
        parts.append("task file changed")
    if old.registry_name and new.registry_name and old.registry_name != new.registry_name:
        parts.append("task changed")
    if old.args_hash and new.args_hash and old.args_hash != new.args_hash:
        parts.append("task args changed")
    if not parts:
        parts.append("configuration changed (solver, generate config, model args or limits)")
    work = _work_change(old, new)
    if work:
        parts.append(work)
    return ", ".join(parts)


def _covers(log: ArchivedLog, task: TaskSpec) -> bool:
    return log.identifier == task.identifier and (
        log.samples >= task.samples and log.epochs >= task.epochs
    )


def _logs_moving(paths: list[str]) -> str:
    n = len(paths)
    return f"{n} log{'s' if n != 1 else ''}"


def _archive_note(moves: list[str]) -> str:
    """What a removed or superseded row says of its log."""
    return f"{_logs_moving(moves)} to {ARCHIVE_DIR}" if moves else "no log to move"


def _row(
    kind: RowKind,
    task: TaskSpec,
    *detail: str,
    moves: list[str] | None = None,
    previous: str | None = None,
    superseded_by: str | None = None,
) -> DeltaRow:
    """The row of `kind` about `task`; its detail is the non-empty parts joined by '; '."""
    return DeltaRow(
        kind=kind,
        name=task.name,
        model=task.model,
        identifier=task.identifier,
        previous=previous,
        superseded_by=superseded_by,
        moves=moves or [],
        detail="; ".join(part for part in detail if part),
    )


def compute_delta(
    committed: list[TaskSpec],
    logs: dict[str, str | None],
    new: list[TaskSpec],
    archived: list[ArchivedLog],
) -> Delta:
    """The rows of relaunching `new` over the `committed` tasks.

    `logs` maps a committed identifier to its current log path (None or missing: it never wrote
    one). `archived` is in order of preference (the first log that covers a task restores it;
    each archived log answers one task at most). A repeated identifier in `new` counts once.
    """
    committed_by_id: dict[str, TaskSpec] = {}
    for task in committed:
        committed_by_id.setdefault(task.identifier, task)
    new_ids = {task.identifier for task in new}
    # committed tasks gone from the new definition: superseded if a successor claims them
    gone = [task for task in committed_by_id.values() if task.identifier not in new_ids]
    claimed: set[str] = set()
    used_archive: set[int] = set()
    seen: set[str] = set()
    rows: list[DeltaRow] = []

    def old_moves(identifier: str) -> list[str]:
        path = logs.get(identifier)
        return [path] if path else []

    for task in new:
        if task.identifier in seen:
            continue
        seen.add(task.identifier)
        old = committed_by_id.get(task.identifier)
        if old is not None:
            change = _work_change(old, task)
            if task.samples > old.samples or task.epochs > old.epochs:
                rows.append(_row("extend", task, change))
            elif change:
                smaller = f"{change}: a smaller plan; the committed log stays as it is"
                rows.append(_row("unchanged", task, smaller))
            else:
                rows.append(_row("unchanged", task))
            continue

        predecessor = next(
            (
                g
                for g in gone
                if g.identifier not in claimed and (g.name, g.model) == (task.name, task.model)
            ),
            None,
        )
        why = ""
        previous = None
        if predecessor is not None:
            claimed.add(predecessor.identifier)
            why = _config_change(predecessor, task)
            previous = predecessor.identifier
            moves = old_moves(predecessor.identifier)
            rows.append(
                _row(
                    "superseded",
                    predecessor,
                    why,
                    _archive_note(moves),
                    moves=moves,
                    superseded_by=task.identifier,
                )
            )

        restore = next(
            (
                (i, log)
                for i, log in enumerate(archived)
                if i not in used_archive and _covers(log, task)
            ),
            None,
        )
        if restore is not None:
            i, log = restore
            used_archive.add(i)
            covers = f"archived log covers {_plan(log.samples, log.epochs)}"
            rows.append(_row("restore", task, why, covers, moves=[log.path], previous=previous))
            continue

        too_small = [
            log
            for i, log in enumerate(archived)
            if i not in used_archive and log.identifier == task.identifier
        ]
        plan = _plan(task.samples, task.epochs)
        if too_small:
            best = max(too_small, key=lambda log: log.samples * log.epochs)
            plan += f"; the archived log covers only {_plan(best.samples, best.epochs)}"
        rows.append(_row("add", task, why, plan, previous=previous))

    for task in gone:
        if task.identifier not in claimed:
            moves = old_moves(task.identifier)
            rows.append(_row("removed", task, _archive_note(moves), moves=moves))
    return Delta(rows=rows)


def gate(delta: Delta, accept_archive: bool) -> str | None:
    """None when the delta may be committed; else one sentence saying what would move out."""
    archiving = delta.archiving
    if not archiving or accept_archive:
        return None
    listed = ", ".join(
        f"{row.kind} {row.name} ({row.model}, {_logs_moving(row.moves)})" for row in archiving
    )
    return (
        f"This launch would move results to {ARCHIVE_DIR}: {listed}; "
        "launch again with --accept-archive to commit it."
    )


def delta_lines(delta: Delta) -> list[str]:
    """Human lines, one per row that says something: plain unchanged rows are left out (an
    unchanged row with a detail, a smaller plan, is shown); "no changes" when nothing changed."""
    lines = []
    for row in delta.rows:
        if row.kind == "unchanged" and not row.detail:
            continue
        line = f"{row.kind:<{_KIND_WIDTH}} {row.name} ({row.model})"
        if row.detail:
            line += f": {row.detail}"
        lines.append(line)
    if not delta.changed:
        lines.insert(0, "no changes")
    return lines


# ---------------------------------------------------------------- the workflow's side
class AmendRequest(BaseModel):
    """A relaunch: the new capture, its delta against the run, and what the store answers."""

    capture: Capture
    rows: list[DeltaRow]
    definition_hash: str | None = None
    store_hits: dict[str, str] = Field(default_factory=dict)
    by: str = ""


class AmendResult(BaseModel):
    added: list[str] = Field(default_factory=list)  # task names that will run
    archived: list[str] = Field(default_factory=list)
    restored: list[str] = Field(default_factory=list)
    reused: list[str] = Field(default_factory=list)
