"""The service units `steward service install` writes: systemd units that systemd itself
accepts (`systemd-analyze verify`, where installed), launchd plists that parse, and install /
uninstall that say what to run where the service manager does not answer."""

from __future__ import annotations

import plistlib
import shutil
import subprocess
import sys

import pytest

from steward.worker import service_units


@pytest.fixture
def no_manager(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setattr(service_units, "manager", lambda: "systemd")
    real_which = shutil.which
    monkeypatch.setattr(
        service_units.shutil,
        "which",
        lambda name: None if name == "systemctl" else real_which(name),
    )
    return tmp_path


def test_install_writes_both_units_and_says_what_to_run(no_manager):
    data = no_manager / "data"
    data.mkdir()
    outcome = service_units.install(data)
    units = sorted(p.name for p in (no_manager / "config" / "systemd" / "user").iterdir())
    assert units == ["steward-temporal.service", "steward-worker.service"]
    assert outcome.written == [str(no_manager / "config/systemd/user" / u) for u in units]
    assert outcome.todo[:2] == [
        "systemctl --user daemon-reload",
        "systemctl --user enable --now steward-temporal.service steward-worker.service",
    ]
    assert any(t.startswith("loginctl enable-linger") for t in outcome.todo)
    worker = (no_manager / "config/systemd/user/steward-worker.service").read_text()
    assert f"ExecStart={sys.executable} -m steward.worker.service_main worker" in worker
    assert f'Environment="STEWARD_DATA_DIR={data}"' in worker
    assert "After=steward-temporal.service" in worker and "Restart=on-failure" in worker

    removed = service_units.uninstall()
    assert not any((no_manager / "config/systemd/user").iterdir())
    assert len([w for w in removed.written if w.startswith("removed")]) == 2


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd-analyze not installed")
def test_systemd_accepts_the_units_and_would_refuse_a_broken_one(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    for service in service_units.SERVICES:
        (tmp_path / f"steward-{service}.service").write_text(
            service_units.systemd_unit(service, sys.executable, data)
        )
    units = [str(tmp_path / f"steward-{s}.service") for s in service_units.SERVICES]
    checked = subprocess.run(["systemd-analyze", "verify", *units], capture_output=True, text=True)
    assert checked.returncode == 0, checked.stderr
    broken = tmp_path / "steward-broken.service"
    broken.write_text(service_units.systemd_unit("worker", str(tmp_path / "no-python"), data))
    refused = subprocess.run(["systemd-analyze", "verify", str(broken)], capture_output=True)
    assert refused.returncode != 0  # the check above can fail


def test_launchd_agents_parse_and_restart_on_failure_only(tmp_path):
    plist = plistlib.loads(service_units.launchd_plist("worker", "/opt/py/bin/python", tmp_path))
    assert plist["Label"] == "dev.steward.worker"
    assert plist["ProgramArguments"] == [
        "/opt/py/bin/python",
        "-m",
        "steward.worker.service_main",
        "worker",
    ]
    assert plist["EnvironmentVariables"]["STEWARD_DATA_DIR"] == str(tmp_path)
    assert plist["RunAtLoad"] is True and plist["KeepAlive"] == {"SuccessfulExit": False}


def test_units_that_cannot_be_written_are_refused_and_none_is_left(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CONFIG_HOME", "/proc/forbidden")
    monkeypatch.setattr(service_units, "manager", lambda: "systemd")
    with pytest.raises(service_units.UnitsError, match="/proc/forbidden/systemd/user"):
        service_units.install(tmp_path)
