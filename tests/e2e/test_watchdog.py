"""The watchdog outside the Steward worker (`steward doctor --notify`): a live run's Apprise
destinations hear once that supervision is down and once that it is back, whether the worker
was killed or Temporal itself is gone (then from the record the watchdog kept while it was up).

Its own services (data directory, ports): killing the session's worker would hold up the other
tests of this pytest process."""

from __future__ import annotations

import os
import signal

from harness.helpers import (
    Steward,
    make_workspace,
    pid_alive,
    private_steward,
    wait_for,
)
from harness.receiver import Receiver

TITLE = "Steward: supervision"


def _watch(private: Steward, code: int) -> dict:
    result = private("doctor", "--notify", "--json")
    assert result.code == code, (result.stdout, result.stderr)
    return result.json["watchdog"]


def test_watchdog_tells_once_when_supervision_goes_and_once_when_it_is_back(steward, tmp_path):
    # no service units of this user's
    private = private_steward(steward, tmp_path, XDG_CONFIG_HOME=str(tmp_path / "config"))
    with Receiver() as receiver:

        def notices() -> list[dict]:
            return [m for m in receiver.messages if m.get("title", "").startswith(TITLE)]

        workspace = make_workspace(
            private,
            tmp_path,
            {"long": 400},  # still running at the end: a run that needs its supervisor
            options="samples_ramp: [1, 1]\nheartbeat: 5s\n",  # the run notifies by itself
            dotenv=f"STEWARD_OFFLINE_DELAY=0.5\nSTEWARD_NOTIFICATION={receiver.url}\n",
        )
        try:
            private.ok("launch", cwd=workspace)
            # The run's own notify activity records where it is told, for the watchdog.
            record = private.data_dir() / "supervised-runs.json"
            wait_for(lambda: record.exists() and str(workspace) in record.read_text(), timeout=60)
            assert oct(record.stat().st_mode & 0o777) == "0o600"
            up = _watch(private, 0)
            assert not up["down"] and up["notice"] is None and up["runs"] == [str(workspace)]

            worker = private.service_pid("worker")
            os.kill(worker, signal.SIGKILL)
            wait_for(lambda: not pid_alive(worker), what="the Steward worker to die")
            down = _watch(private, 1)
            assert down["notice"] == "down" and down["delivered"] and down["destinations"] == 1
            assert _watch(private, 1)["notice"] is None  # still down: nothing new
            assert len(notices()) == 1
            text = notices()[0]["message"]
            assert f"the Steward worker (pid {worker}) has exited" in text
            assert f"{workspace} (running)" in text and "`steward worker start`" in text

            private.ok("worker", "start")
            back = _watch(private, 0)
            assert back["notice"] == "back" and back["delivered"]
            assert _watch(private, 0)["notice"] is None
            assert [n["title"].split()[2] for n in notices()] == ["down", "back"]
            assert "supervises again" in notices()[1]["message"]

            # Temporal gone too, as after a reboot without the service units: the runs and
            # their destinations come from what the watchdog recorded while it answered.
            private.ok("stop")
            gone = _watch(private, 1)
            assert gone["notice"] == "down" and gone["runs"] == [str(workspace)]
            assert _watch(private, 1)["notice"] is None
            private.ok("server", "start")
            private.ok("worker", "start")
            assert _watch(private, 0)["notice"] == "back"
            assert [n["title"].split()[2] for n in notices()] == ["down", "back", "down", "back"]
            assert "does not answer" in notices()[2]["message"]
            assert str(workspace) in notices()[2]["message"]
            # The destinations (they may hold tokens) are in no output of the watchdog.
            assert receiver.url not in (private.data_dir() / "watchdog.json").read_text()
        finally:
            private("cancel", "--reason", "test over", cwd=workspace, timeout=120)
            private("stop")
