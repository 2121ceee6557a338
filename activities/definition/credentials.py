"""Which credentials the run's workers would see: the Steward worker's own environment, then
the workspace's `.env` chain (what each worker loads, nearest first, never overriding). Only
the variables' names and where they were found are returned, never their values."""

from __future__ import annotations

import os
from pathlib import Path

from dotenv import dotenv_values
from temporalio import activity

from steward.activities.workspace.options import dotenv_chain
from steward.workflows.names import Activity
from steward.workflows.prelaunch.credentials import (
    CredentialsReport,
    CredentialsRequest,
    Found,
    unmet,
)


def visible(workspace: Path, names: set[str]) -> list[Found]:
    found = [
        Found(variable=name, source="the Steward worker's environment")
        for name in sorted(names)
        if os.environ.get(name)
    ]
    seen = {f.variable for f in found}
    for env_file in reversed(dotenv_chain(workspace)):  # nearest first
        values = dotenv_values(env_file)
        for name in sorted(names - seen):
            if values.get(name):
                found.append(Found(variable=name, source=str(env_file)))
                seen.add(name)
    return found


@activity.defn(name=Activity.CHECK_CREDENTIALS)
def check_credentials(request: CredentialsRequest) -> CredentialsReport:
    names = {name for r in request.requirements for group in r.groups for name in group}
    found = visible(Path(request.workspace), names)
    missing = unmet(request.requirements, {f.variable for f in found})
    return CredentialsReport(found=found, missing=missing)
