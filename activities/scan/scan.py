"""The scoring-integrity scan a run must pass before sign-off: the Temporal activity.

The scan itself is activities/scan/scout_scan.py. The activity runs it in child processes
(activities/scan/scan_children.py, forked from a server that has scout imported already:
activities/scan/scan_process.py), not in the worker: scout allows one scan per process at a time
(a module-level flag), re-enters a running asyncio loop through nest_asyncio (which patches
asyncio process-wide), sets a process-wide display and model context, reads `scout.yaml` and
`.env` from the process's working directory, and imports the user's scanner files for good.
"""

from __future__ import annotations

from temporalio import activity
from temporalio.exceptions import ApplicationError

from steward.activities.scan.scan_children import scan_in_subprocess
from steward.activities.scan.scout_scan import ScanFailed, ScanRequestError
from steward.workflows.names import Activity


@activity.defn(name=Activity.SCAN_TRANSCRIPTS)
async def scan_transcripts_activity(request: dict) -> list[dict]:
    """Temporal activity: `{"log_paths", "results_dir", "scan_model", "scanners", "cwd",
    "max_connections"}`, and with scan-widen-v1 `{"scan_key", "run_id",
    "connections_ceiling"}`: the scan follows the run's share for it as it changes."""
    try:
        return await scan_in_subprocess(request)
    except ScanRequestError as err:
        raise ApplicationError(str(err), type="ScanRequestError", non_retryable=True) from err
    except ScanFailed as err:
        raise ApplicationError(str(err), type="ScanFailed") from err
