"""Keep analysis.md's facts blocks current (called from each tend's workspace write)."""

from __future__ import annotations

from pathlib import Path

import structlog

from steward.activities.logs.paths import write_atomic
from steward.activities.workspace.options import OptionsError, load_options
from steward.workflows.contracts import RunStatus, TaskState
from steward.workflows.policy.cost import LlmCost, Price, money
from steward.workflows.views.analysis_view import FILE, merge_analysis, task_facts

log = structlog.get_logger("steward.analysis")
_scores: dict[str, tuple[float, str | None]] = {}  # log path -> (mtime, its scores line)


def scores_line(path: str | None) -> str | None:
    """The metrics of a finished log's scorers, e.g. `match: accuracy 0.75, stderr 0.25`
    (read from its header, once per version of the file)."""
    if not path:
        return None
    try:
        mtime = Path(path).stat().st_mtime
    except OSError:
        return None
    cached = _scores.get(path)
    if cached and cached[0] == mtime:
        return cached[1]
    from inspect_ai.log import read_eval_log

    try:
        header = read_eval_log(path, header_only=True)
    except Exception as err:  # noqa: BLE001 - a log being written may not read yet
        log.debug("scores unreadable", log=path, problem=str(err))
        return None
    line = None
    if header.results and header.results.scores:
        line = "; ".join(
            f"{score.name}: "
            + ", ".join(f"{name} {metric.value:.4g}" for name, metric in score.metrics.items())
            for score in header.results.scores
        )
    _scores[path] = (mtime, line)
    return line


def _dollars(task: TaskState, prices: dict[str, Price]) -> str | None:
    usd, _ = LlmCost(models=task.usage).dollars(prices)
    return money(usd) if usd is not None and task.usage else None


def write_analysis(workspace: Path, status: RunStatus) -> None:
    """Rewrite the facts blocks of analysis.md; the prose around them is kept byte for byte."""
    state = status.state
    try:
        prices = load_options(workspace).prices or {}
    except OptionsError:
        prices = {}
    at = state.last_tend_at.strftime("%Y-%m-%d %H:%M:%S UTC") if state.last_tend_at else "—"
    updated = f"tend #{state.tend_count} at {at}"
    bodies = {
        (t.spec.name, t.spec.identifier): task_facts(
            state,
            t,
            scores_line(t.log) if t.phase == "complete" else None,
            _dollars(t, prices),
            updated,
        )
        for t in state.tasks
    }
    path = workspace / FILE
    existing = path.read_text() if path.is_file() else None
    merged = merge_analysis(existing, bodies)
    if merged != existing:
        write_atomic(path, merged)
