"""The watchdog's own files and its check with Temporal down (no server at all: what a reboot
without the service units leaves), delivering for real to a loopback Apprise receiver."""

from __future__ import annotations

import json
import stat

import pytest

from harness.helpers import free_port
from harness.receiver import Receiver
from steward.activities.workspace import supervised_runs
from steward.worker import watchdog
from steward.worker.doctor import examine
from steward.workflows.options import StewardOptions
from steward.workflows.policy.outage import WatchedRun


@pytest.fixture
def data(monkeypatch, tmp_path):
    path = tmp_path / "data"
    path.mkdir()
    monkeypatch.setenv("STEWARD_DATA_DIR", str(path))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))  # no units installed
    return path


def test_the_record_of_destinations_is_private_and_keeps_what_it_cannot_reread(data):
    supervised_runs.remember(data, "steward-a", "/runs/a", ["json://secret-token@host/a"])
    record = data / supervised_runs.RECORD
    assert stat.S_IMODE(record.stat().st_mode) == 0o600
    assert supervised_runs.read(data)["/runs/a"].destinations == ["json://secret-token@host/a"]

    # The watchdog's refresh: exactly the live runs; one whose options cannot be read now
    # (None) keeps the destinations recorded for it; a run no longer live leaves the file.
    supervised_runs.remember(data, "steward-gone", "/runs/gone", ["json://x/gone"])
    before = supervised_runs.replace(
        data,
        [
            (WatchedRun(workflow_id="steward-a", workspace="/runs/a", state="stalled"), None),
            (WatchedRun(workflow_id="steward-c", workspace="/runs/c"), ["json://x/c"]),
        ],
    )
    assert set(before) == {"/runs/a", "/runs/gone"}
    now = supervised_runs.read(data)
    assert set(now) == {"/runs/a", "/runs/c"}
    assert now["/runs/a"].destinations == ["json://secret-token@host/a"]
    assert now["/runs/a"].state == "stalled"
    assert stat.S_IMODE(record.stat().st_mode) == 0o600
    assert not [p for p in data.iterdir() if p.name.endswith(".tmp")]


def test_the_record_stays_bounded_without_a_watchdog_to_tidy_it(data, monkeypatch):
    monkeypatch.setattr(supervised_runs, "KEPT_RUNS", 3)
    for index in range(5):
        supervised_runs.remember(data, f"steward-{index}", f"/runs/{index}", [])
    assert sorted(supervised_runs.read(data)) == ["/runs/2", "/runs/3", "/runs/4"]


def test_temporal_down_is_told_once_to_the_recorded_destinations(data):
    options = StewardOptions(temporal_port=free_port(), temporal_ui_port=free_port())
    with Receiver() as receiver:
        supervised_runs.remember(data, "steward-a", "/runs/a", [receiver.url])
        supervised_runs.remember(data, "steward-b", "/runs/b", [receiver.url, receiver.url])

        first = watchdog.watch(options, examine(options))
        assert first.down and first.notice == "down" and first.delivered
        assert first.destinations == 1  # the same URL for two runs is told once
        assert len(receiver.messages) == 1
        message = receiver.messages[0]
        assert message["title"] == "Steward: supervision down on " + watchdog.host_id()
        text = message["message"]
        assert f"Temporal at 127.0.0.1:{options.temporal_port} does not answer" in text
        assert "/runs/a (running), /runs/b (running)" in text
        assert "`steward server start` and `steward worker start`" in text
        # The URL (it may hold a token) is in no output of the watchdog.
        assert receiver.url not in json.dumps(first.as_dict())
        assert receiver.url not in (data / watchdog.STATE_FILE).read_text()

        second = watchdog.watch(options, examine(options))
        assert second.down and second.notice is None and "already told" in second.result
        assert len(receiver.messages) == 1


def test_nothing_recorded_means_nobody_to_tell(data):
    options = StewardOptions(temporal_port=free_port(), temporal_ui_port=free_port())
    outcome = watchdog.watch(options, examine(options))
    assert outcome.down and outcome.notice is None and outcome.runs == []
    assert "no run is left unsupervised" in outcome.result
