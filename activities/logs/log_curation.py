"""Keep the log dir to one log per task: a log superseded by a newer success log of its task
(what a resumed worker leaves behind) goes to the archive as the run goes, and at signoff every
log that is not a task's final log does; the final logs may then be published to the log store.

Nothing is deleted: the archive (workflows/policy/layout.py) keeps what leaves the log dir.
"""

from __future__ import annotations

from pathlib import Path

from temporalio import activity

from steward.activities.logs.log_listing import logs_by_identifier
from steward.activities.logs.log_store import archive_location, move, publish
from steward.activities.workspace.options import load_options
from steward.workflows.activity_io import CurateRequest, CurateResult, TidyRequest
from steward.workflows.names import Activity


def _archive(path: str, log_dir: str) -> str:
    return move(path, archive_location(log_dir))


@activity.defn(name=Activity.TIDY_LOGS)
def tidy_logs(request: TidyRequest) -> list[str]:
    """Move logs superseded by a newer success log of the same task to the archive, so the log
    dir holds each sample exactly once."""
    moved = []
    logs = logs_by_identifier(request.log_dir, fresh_status=True)
    for identifier in request.identifiers:
        entries = logs.get(identifier, [])
        successes = [info.path for info in entries if info.status == "success"]
        if not successes:
            continue
        keep = successes[-1]
        for info in entries:
            if info.path != keep and Path(info.path).exists():
                _archive(info.path, request.log_dir)
                moved.append(info.path)
    return moved


@activity.defn(name=Activity.CURATE_LOGS)
def curate_logs(request: CurateRequest) -> CurateResult:
    """At signoff: every log in the log dir that is not a task's final log goes to the archive;
    with `publish`, the final logs are copied into the configured log store."""
    result = CurateResult()
    keep = {str(Path(p)) for p in request.keep}
    directory = Path(request.log_dir)
    for path in sorted(directory.glob("*.eval")) if directory.is_dir() else []:
        if str(path) not in keep:
            result.archived.append(_archive(str(path), request.log_dir))
    if request.publish:
        store = load_options(Path(request.workspace)).log_store
        if not store:
            result.problem = "no log_store is configured, so nothing was published"
            return result
        try:
            result.published = publish(sorted(keep), store)
        except ValueError as err:  # a Flow store without the flow extra: say so, don't retry
            result.problem = str(err)
    return result
