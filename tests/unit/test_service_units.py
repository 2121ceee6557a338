"""The service units `steward service install` writes: systemd units that systemd itself
accepts (`systemd-analyze verify`, where installed), launchd plists that parse, and install /
uninstall that say what to run where the service manager does not answer."""

from __future__ import annotations

import json
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


def test_install_writes_the_units_and_says_what_to_run(no_manager):
    data = no_manager / "data"
    data.mkdir()
    outcome = service_units.install(data)
    units = sorted(p.name for p in (no_manager / "config" / "systemd" / "user").iterdir())
    assert units == [
        "steward-temporal.service",
        "steward-watchdog.service",
        "steward-watchdog.timer",
        "steward-worker.service",
    ]
    assert sorted(outcome.written) == [str(no_manager / "config/systemd/user" / u) for u in units]
    assert outcome.todo[:2] == [
        "systemctl --user daemon-reload",
        "systemctl --user enable --now steward-temporal.service steward-worker.service "
        "steward-watchdog.timer",
    ]
    assert any(t.startswith("loginctl enable-linger") for t in outcome.todo)
    worker = (no_manager / "config/systemd/user/steward-worker.service").read_text()
    assert f"ExecStart={sys.executable} -m steward.worker.service_main worker" in worker
    assert f'Environment="STEWARD_DATA_DIR={data}"' in worker
    assert "After=steward-temporal.service" in worker and "Restart=on-failure" in worker

    assert outcome.reason == "systemctl is not on PATH" and not outcome.applied

    # Without systemctl nothing can have enabled them: deleting them is the whole uninstall.
    removed = service_units.uninstall()
    assert not any((no_manager / "config/systemd/user").iterdir())
    assert len([w for w in removed.written if w.startswith("removed")]) == 4
    assert removed.todo == [] and removed.applied


def test_the_watchdog_runs_doctor_notify_on_a_timer_of_its_own(no_manager):
    data = no_manager / "data"
    data.mkdir()
    service_units.install(data, watchdog_interval=90.0)
    user = no_manager / "config/systemd/user"
    timer = (user / "steward-watchdog.timer").read_text()
    assert "OnActiveSec=90s" in timer and "OnUnitActiveSec=90s" in timer
    assert "Unit=steward-watchdog.service" in timer and "WantedBy=timers.target" in timer
    oneshot = (user / "steward-watchdog.service").read_text()
    assert f"ExecStart={sys.executable} -m steward.cli doctor --notify" in oneshot
    assert "Type=oneshot" in oneshot and f'Environment="STEWARD_DATA_DIR={data}"' in oneshot
    assert "SuccessExitStatus=1" in oneshot  # `doctor` says "down" with exit 1: not a failure
    # It must run while the worker and the server are down: it depends on neither.
    assert "After=" not in oneshot and "Wants=" not in oneshot and "Requires=" not in oneshot
    # What the notices tell people to run, once the units are there.
    assert service_units.start_command(["worker"]) == "systemctl --user start steward-worker"
    status = service_units.status()
    assert status["watchdog"]["installed"] and status["watchdog"]["unit"].endswith(".timer")
    service_units.uninstall()
    assert service_units.start_command(["worker"]) is None


def test_the_watchdog_unit_runs_the_real_command(tmp_path):
    """What the unit's ExecStart names exists: `python -m steward.cli doctor --notify --help`."""
    done = subprocess.run(
        [sys.executable, *service_units.WATCHDOG_COMMAND, "--help"],
        capture_output=True,
        text=True,
        timeout=120,
        env={"STEWARD_DATA_DIR": str(tmp_path), "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 0, done.stderr
    assert "--notify" in done.stdout


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd-analyze not installed")
def test_systemd_accepts_the_units_and_would_refuse_a_broken_one(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    for service in service_units.SERVICES:
        (tmp_path / f"steward-{service}.service").write_text(
            service_units.systemd_unit(service, sys.executable, data)
        )
    (tmp_path / "steward-watchdog.service").write_text(
        service_units.systemd_watchdog_service(sys.executable, data)
    )
    (tmp_path / "steward-watchdog.timer").write_text(service_units.systemd_watchdog_timer(60.0))
    units = [str(tmp_path / f"steward-{s}.service") for s in service_units.SERVICES] + [
        str(tmp_path / "steward-watchdog.service"),
        str(tmp_path / "steward-watchdog.timer"),
    ]
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
    watchdog = plistlib.loads(
        service_units.launchd_watchdog_plist("/opt/py/bin/python", tmp_path, 60)
    )
    assert watchdog["Label"] == "dev.steward.watchdog" and watchdog["StartInterval"] == 60
    assert watchdog["ProgramArguments"] == [
        "/opt/py/bin/python",
        "-m",
        "steward.cli",
        "doctor",
        "--notify",
    ]
    assert "KeepAlive" not in watchdog  # a check that ends is not restarted: the interval runs it


def test_units_that_cannot_be_written_are_refused_and_none_is_left(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CONFIG_HOME", "/proc/forbidden")
    monkeypatch.setattr(service_units, "manager", lambda: "systemd")
    with pytest.raises(service_units.UnitsError, match="/proc/forbidden/systemd/user"):
        service_units.install(tmp_path)


@pytest.mark.parametrize(
    ("interval", "said"), [("5", "is not a duration"), ("5s", "is shorter than 10s")]
)
def test_a_watchdog_interval_that_cannot_be_is_refused_and_nothing_is_written(
    tmp_path, interval, said
):
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "steward.cli",
            "service",
            "install",
            "--watchdog-interval",
            interval,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env={
            "STEWARD_DATA_DIR": str(tmp_path / "data"),
            "XDG_CONFIG_HOME": str(tmp_path / "config"),
            "PATH": "/usr/bin:/bin",
        },
        cwd=tmp_path,
    )
    assert done.returncode == 2, done.stderr
    assert said in done.stderr and "--watchdog-interval" in done.stderr
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "config").exists()


def _fake_systemctl(tmp_path, script: str) -> dict[str, str]:
    """A `systemctl` first on PATH: the user's service manager as it answers (or not) here."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "systemctl"
    fake.write_text("#!/bin/sh\n" + script)
    fake.chmod(0o755)
    return {
        "STEWARD_DATA_DIR": str(tmp_path / "data"),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "PATH": f"{bin_dir}:/usr/bin:/bin",
    }


BUS_DOWN = 'echo "Failed to connect to bus: No medium found" >&2\nexit 1\n'


def _service(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "steward.cli", "service", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=env["STEWARD_DATA_DIR"].rsplit("/", 1)[0],
    )


@pytest.mark.skipif(sys.platform == "darwin", reason="systemd units")
def test_install_says_nothing_was_enabled_and_fails_when_the_manager_does_not_answer(tmp_path):
    env = _fake_systemctl(tmp_path, BUS_DOWN)
    done = _service(env, "install")
    assert done.returncode == 1, done.stderr
    assert (
        "Nothing was enabled: systemctl --user daemon-reload: exit 1 "
        "(Failed to connect to bus: No medium found)." in done.stderr
    )
    assert "run:   systemctl --user daemon-reload" in done.stdout
    assert "run:   systemctl --user enable --now steward-temporal.service" in done.stdout
    assert "Traceback" not in done.stderr

    as_json = json.loads(_service(env, "install", "--json").stdout)
    assert as_json["ok"] is False and as_json["applied"] is False
    assert "Failed to connect to bus" in as_json["reason"]


@pytest.mark.skipif(sys.platform == "darwin", reason="systemd units")
def test_uninstall_disables_the_units_before_it_deletes_them(tmp_path):
    calls = tmp_path / "calls"
    units = tmp_path / "config/systemd/user"
    # Each call records its arguments and how many unit files were there when it ran.
    env = _fake_systemctl(tmp_path, f'echo "$* $(ls {units} | wc -l)" >> {calls}\n')
    assert _service(env, "install").returncode == 0
    calls.unlink()
    done = _service(env, "uninstall")
    assert done.returncode == 0, done.stderr
    assert calls.read_text().splitlines() == [
        "--user disable --now steward-watchdog.timer steward-temporal.service "
        "steward-worker.service steward-watchdog.service 4",
        "--user daemon-reload 0",
    ]
    assert not any(units.iterdir())


@pytest.mark.skipif(sys.platform == "darwin", reason="systemd units")
def test_uninstall_removes_nothing_while_the_manager_does_not_answer(tmp_path):
    env = _fake_systemctl(tmp_path, BUS_DOWN)
    _service(env, "install")
    done = _service(env, "uninstall")
    assert done.returncode == 1
    assert "Nothing was removed: systemctl --user disable --now" in done.stderr
    assert len(list((tmp_path / "config/systemd/user").iterdir())) == 4  # still disable-able
    todo = [line for line in done.stdout.splitlines() if line.startswith("run:")]
    assert todo[0].startswith("run:   systemctl --user disable --now steward-watchdog.timer")
    assert todo[1].startswith("run:   rm ") and todo[-1] == "run:   systemctl --user daemon-reload"
