"""What the benchmarks share: a private Steward (data dir, ports) driven through the CLI."""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

from harness.helpers import Steward, free_port, pid_alive, wait_for


def private_steward(prefix: str) -> tuple[Path, Steward]:
    """A scratch root and a Steward whose embedded services live in it, on free ports."""
    root = Path(tempfile.mkdtemp(prefix=prefix))
    env = {k: v for k, v in os.environ.items() if not k.startswith("STEWARD_")}
    env.update(
        STEWARD_DATA_DIR=str(root / "data"),
        STEWARD_TEMPORAL_PORT=str(free_port()),
        STEWARD_TEMPORAL_UI_PORT=str(free_port()),
    )
    (root / "data").mkdir()
    return root, Steward(env)


def run_to_last_sample(steward: Steward, workspace: Path, timeout: float = 3600) -> float:
    """Seconds from launch to the run's last sample; the run is cancelled then (what comes
    after, its scan, is not measured)."""
    steward.ok("launch", "--no-smoke", cwd=workspace)
    start = time.monotonic()
    wait_for(
        lambda: (s := steward.state(workspace))["samples_done"] >= s["samples_total"] > 0,
        timeout=timeout,
        interval=0.5,
        what="the run's last sample",
    )
    seconds = time.monotonic() - start
    steward("cancel", "--reason", "measured", cwd=workspace)
    return seconds


def wait_until_moved(
    home: Steward, workspace: Path, moved: set[str], old: set[str], timeout: float
) -> None:
    """Until every task in `moved` is held by a live task worker other than the `old` ones
    (its host lost: the run placed it again)."""

    def running_again() -> bool:
        state = home.state(workspace)
        holders = {
            i: w for w in state["workers"].values() if w["worker_id"] not in old for i in w["tasks"]
        }
        return all(i in holders and pid_alive(holders[i]["pid"]) for i in moved)

    wait_for(running_again, timeout=timeout, interval=0.2, what="the tasks moved")
