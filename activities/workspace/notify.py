"""Deliver a notification through Apprise.

The destination (`notification` / `STEWARD_NOTIFICATION`: Apprise URLs, or an Apprise config
file) is read here, from the workspace's options, every time: it holds secrets (tokens in the
URL), so it never travels through the workflow's history, the journal or status.md. The one
copy kept is in Steward's data directory, readable by its owner only (supervised_runs.py), for
the watchdog that must tell these destinations when the worker itself is down.
"""

from __future__ import annotations

import logging
from pathlib import Path

from temporalio import activity

from steward.activities.workspace import supervised_runs
from steward.activities.workspace.options import OptionsError, load_options
from steward.workflows.activity_io import NotifyRequest, NotifyResult
from steward.workflows.names import Activity

# Apprise logs the services it reaches; keep URLs (secrets) out of the worker's log.
logging.getLogger("apprise").setLevel(logging.CRITICAL)


# workspace -> its destinations as last read: a broken _steward.yaml must not silence the
# message that says so.
_last_known: dict[str, list[str]] = {}


def destinations(workspace: Path) -> list[str]:
    try:
        value = load_options(workspace).notification
    except OptionsError:
        if str(workspace) in _last_known:
            return _last_known[str(workspace)]
        raise
    found = [] if not value else [value] if isinstance(value, str) else list(value)
    _last_known[str(workspace)] = found
    return found


def deliver(targets: list[str], title: str, body: str) -> bool:
    import apprise

    notifier = apprise.Apprise()
    for target in targets:
        path = Path(target).expanduser()
        if "://" not in target and path.is_file():
            config = apprise.AppriseConfig()
            config.add(str(path))
            notifier.add(config)
        else:
            notifier.add(target)
    if len(notifier) == 0:
        return False
    return bool(notifier.notify(title=title, body=body))


@activity.defn(name=Activity.NOTIFY)
def notify(request: NotifyRequest) -> NotifyResult:
    try:
        targets = destinations(Path(request.workspace))
    except OptionsError as err:
        return NotifyResult(configured=True, delivered=False, problem=str(err))
    _remember(request.workspace, targets)
    if not targets:
        return NotifyResult(configured=False, delivered=False)
    if deliver(targets, request.title, request.body):
        return NotifyResult(configured=True, delivered=True)
    # Never echo the destination: it may carry a token.
    return NotifyResult(configured=True, delivered=False, problem="delivery failed")


def _remember(workspace: str, targets: list[str]) -> None:
    """Record where this run is told, for the watchdog; a record that cannot be written must
    not stop the notification itself."""
    try:
        supervised_runs.remember(
            supervised_runs.steward_data_dir(), activity.info().workflow_id, workspace, targets
        )
    except (OSError, RuntimeError) as err:  # RuntimeError: called outside an activity
        activity.logger.warning("could not record the run's destinations for the watchdog: %s", err)
