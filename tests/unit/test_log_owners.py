"""At most one live writer per task log: a later worker's claim wins (activities/logs/log_owners.py)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from steward.activities.logs.log_owners import (
    DISOWNED_EXIT,
    OWNER_ENV,
    Claim,
    Disowned,
    later_owner,
    take,
)


def _claim(log_dir: Path, worker: str, host: str = "a", run: str = "run-1") -> Claim:
    return Claim(str(log_dir), run, worker, host, ("task-x", "task-y"))


def test_a_later_claim_wins_and_an_earlier_one_is_refused(tmp_path: Path):
    take(_claim(tmp_path, "w0009"))
    take(_claim(tmp_path, "w0010", host="b"))  # the re-placement on host b
    assert later_owner(_claim(tmp_path, "w0009")) == ("w0010", "b")
    with pytest.raises(Disowned, match="now belong to worker w0010 on host b"):
        take(_claim(tmp_path, "w0009"))  # host a's late retry
    assert later_owner(_claim(tmp_path, "w0010", host="b")) is None
    # A new run of the same workspace owns the logs whatever its worker ids.
    take(_claim(tmp_path, "w0001", run="run-2"))


def test_worker_ids_order_by_number_not_by_text(tmp_path: Path):
    take(_claim(tmp_path, "w10000"))
    assert later_owner(_claim(tmp_path, "w9999")) == ("w10000", "a")


def test_a_disowned_worker_stops_itself(tmp_path: Path):
    """The guard in a real process: it runs until a later claim lands, then exits at once."""
    mine = _claim(tmp_path, "w0002")
    take(mine)
    script = "from steward.activities.logs.log_owners import guard; import time; guard(); time.sleep(60)"
    env = {**os.environ, OWNER_ENV: mine.to_env()}
    worker = subprocess.Popen([sys.executable, "-c", script], env=env, stderr=subprocess.PIPE)
    try:
        time.sleep(3)
        assert worker.poll() is None  # still its own
        take(_claim(tmp_path, "w0003", host="b"))
        assert worker.wait(10) == DISOWNED_EXIT
        assert b"now belong to worker w0003 on host b" in worker.stderr.read()
    finally:
        worker.kill()
        worker.wait()
