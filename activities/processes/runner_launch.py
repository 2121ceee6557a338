"""How Steward starts a user's definition: `python -m steward.worker.definition_runner DEFINITION` in the
workspace, steered by environment variables. Capture, the smoke run and every spawned worker
are started from `runner_launch`, so their command lines cannot drift apart.

Which variables each start clears is one decision: ALL the steering variables below are
cleared from the inherited environment, and each start then sets those it needs. A variable
left in the Steward worker's own environment (a capture manifest, a run-wide overrides
document, another run's selection) would otherwise steer a run it was never meant for: Inspect
refuses capture and selection set together, and reads an overrides document in both modes, so a
stray one would make capture describe a run the workers do not run. Steward sets no overrides
document; a worker's overrides travel in its selection. INSPECT_EVAL_SET_NO_PRUNE, a user's
deliberate escape hatch, is inherited.

The worker side reads the same names (worker/definition_runner.py, worker/approver.py). This
module imports nothing heavy: the runner imports it before the user's definition runs.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from steward.workflows.policy.layout import approvals_dir_of

if TYPE_CHECKING:
    from steward.workflows.activity_io import SelectedTask

RUNNER_MODULE = "steward.worker.definition_runner"

# Inspect's eval-set runner protocol
CAPTURE_ENV = "INSPECT_EVAL_SET_CAPTURE"  # capture: write the tasks' manifest here, run nothing
SELECTION_ENV = "INSPECT_EVAL_SET_SELECTION"  # selection: run the tasks this document selects
OVERRIDES_ENV = "INSPECT_EVAL_SET_OVERRIDES"  # run-wide overrides (Steward uses none)
SELECTION_VERSION = 7  # of the selection document's format
# Steward's own
SANDBOX_SIDECAR_ENV = "STEWARD_CAPTURE_SANDBOXES"  # capture: write each task's sandbox here
WORKER_ENV = "STEWARD_WORKER"  # "1": approvals sent to a human are answered through Steward
APPROVALS_DIR_ENV = "STEWARD_APPROVALS_DIR"  # where those approvals are asked and answered
# The endpoints' shared pacing states (activities/capacity/rate_pacing.py), in the data dir
RATE_LIMITS_ENV = "STEWARD_RATE_LIMITS"
# The kind of the process's model requests in that pacing (rate_limits.EVAL_KIND when unset;
# the scan child sets rate_limits.SCAN_KIND): each kind keeps its own tokens average
PACING_KIND_ENV = "STEWARD_PACING_KIND"
# "1": the worker's adaptive connections are Steward's share of the run's budget (not the
# definition's own), so where pacing holds the rate they may skip Inspect's slow start
PACED_CONNECTIONS_ENV = "STEWARD_PACED_CONNECTIONS"

# The start of the runner's own refusal on stderr (a bad `.env`, an empty task list): capture
# shows the sentence after it as it is, not as a failure of the user's code.
REFUSAL_MARK = "steward refused: "

STEERING_ENV = (
    CAPTURE_ENV,
    SELECTION_ENV,
    OVERRIDES_ENV,
    SANDBOX_SIDECAR_ENV,
    WORKER_ENV,
    APPROVALS_DIR_ENV,
    RATE_LIMITS_ENV,
    PACING_KIND_ENV,
    PACED_CONNECTIONS_ENV,
)


def runner_launch(definition: str, steering: Mapping[str, str]) -> tuple[list[str], dict[str, str]]:
    """The command line and environment that run `definition` (from the workspace directory)
    steered by `steering` alone: every steering variable is cleared first, then these are set."""
    inherited = {k: v for k, v in os.environ.items() if k not in STEERING_ENV}
    return [sys.executable, "-m", RUNNER_MODULE, definition], {**inherited, **steering}


def capture_steering(manifest: Path, sandboxes: Path) -> dict[str, str]:
    """Resolve the tasks without running them: Inspect writes their manifest, and the runner
    the sandbox each task starts."""
    return {CAPTURE_ENV: str(manifest), SANDBOX_SIDECAR_ENV: str(sandboxes)}


def worker_steering(selection: Path, workspace: str) -> dict[str, str]:
    """Run the selected tasks. A worker is detached (no terminal), so tool approvals a policy
    sends to a human are answered through Steward (worker/approver.py) instead. Its model
    requests are paced inside the provider's rate limits with the rest of the fleet's."""
    return {
        SELECTION_ENV: str(selection),
        WORKER_ENV: "1",
        APPROVALS_DIR_ENV: approvals_dir_of(workspace),
        RATE_LIMITS_ENV: str(rate_limits_dir()),
    }


def rate_limits_dir() -> Path:
    """Where every run's workers share what they learn of the endpoints' rate limits."""
    from steward.activities.workspace.supervised_runs import steward_data_dir

    return steward_data_dir() / "rate-limits"


def selection_document(
    eval_set_id: str, tasks: list[SelectedTask], overrides: Mapping[str, object]
) -> dict:
    """What a worker's selection file holds: which tasks it runs, and its own overrides."""
    return {
        "version": SELECTION_VERSION,
        "eval_set_id": eval_set_id,
        "tasks": [task.model_dump(exclude_none=True) for task in tasks],
        "overrides": dict(overrides),
    }
