"""Docker address pools: advice from the daemon (through the real docker client, against a fake
Engine API on a Unix socket) and the daemon.json merge; `launch` advising and merging is in
tests/e2e/test_docker_pools.py."""

from __future__ import annotations

import json

import pytest

from steward.activities.capacity.docker_pools import (
    BUILTIN_POOLS,
    FINER_POOLS,
    DaemonJsonError,
    advise,
    daemon_pools,
    merge_finer_pools,
    network_capacity,
)


def test_capacity_of_the_builtin_and_the_finer_pools():
    assert network_capacity(BUILTIN_POOLS) == 32
    assert network_capacity(FINER_POOLS) == 512


def test_a_daemon_without_the_setting_uses_the_builtin_pools(fake_docker, tmp_path):
    daemon = fake_docker(None)
    advice = advise(40, daemon_pools(daemon.url), tmp_path / "daemon.json")
    assert advice.short and (advice.wanted, advice.capacity) == (40, 32)
    assert "40" in advice.message() and "32" in advice.message() and "512" in advice.message()
    assert json.loads(advice.snippet()) == {"default-address-pools": FINER_POOLS}


def test_a_daemon_with_finer_pools_is_enough(fake_docker, tmp_path):
    daemon = fake_docker(
        [{"Base": "172.17.0.0/12", "Size": 20}, {"Base": "192.168.0.0/16", "Size": 24}]
    )
    advice = advise(300, daemon_pools(daemon.url), tmp_path / "daemon.json")
    assert not advice.short and advice.capacity == 512


def test_no_daemon_is_a_note_not_an_error(tmp_path):
    advice = advise(40, daemon_pools(f"unix://{tmp_path / 'nothing.sock'}", timeout=1))
    assert advice.capacity is None and not advice.short
    assert "No Docker daemon answered" in advice.message()


def test_merge_keeps_other_settings_and_a_backup(tmp_path):
    path = tmp_path / "daemon.json"
    path.write_text(json.dumps({"log-driver": "json-file", "default-address-pools": BUILTIN_POOLS}))
    backup = merge_finer_pools(path)
    merged = json.loads(path.read_text())
    assert merged == {"log-driver": "json-file", "default-address-pools": FINER_POOLS}
    assert (
        backup is not None
        and json.loads(backup.read_text())["default-address-pools"] == BUILTIN_POOLS
    )


def test_merge_creates_a_missing_file(tmp_path):
    path = tmp_path / "etc" / "docker" / "daemon.json"
    assert merge_finer_pools(path) is None
    assert json.loads(path.read_text()) == {"default-address-pools": FINER_POOLS}


@pytest.mark.parametrize("content", ["{not json", "[1, 2]"])
def test_bad_daemon_json_is_refused_and_left_alone(tmp_path, content):
    path = tmp_path / "daemon.json"
    path.write_text(content)
    with pytest.raises(DaemonJsonError) as refused:
        merge_finer_pools(path)
    assert str(path) in str(refused.value) and "\n" not in str(refused.value)
    assert path.read_text() == content
    assert not list(tmp_path.glob("daemon.json.bak-*"))
