"""`steward service install|uninstall|status`: the embedded server and the Steward worker as
services of the user's own service manager, so they restart on failure and start at login
(and, with lingering, at boot) instead of waiting for someone's next `steward` command.

Linux: two systemd user units (`steward-temporal.service`, `steward-worker.service`, the
worker after the server) in `$XDG_CONFIG_HOME/systemd/user`; macOS: two launchd agents in
`~/Library/LaunchAgents`. The units run `python -m steward.worker.service_main temporal|worker` with the
environment that decides where Steward lives (data directory, ports, namespace) as it is when
they are installed. Where `systemctl --user` / `launchctl` are present they are enabled and
started; either way the caller prints what was written and what was run.

Beside them, the watchdog: `steward doctor --notify` every `watchdog_interval` (60 s unless
`service install --watchdog-interval` says otherwise), a systemd timer with its oneshot service
(`steward-watchdog.timer`, `.service`) or a launchd agent with a StartInterval. It depends on
neither service on purpose: it is what notices them down (worker/watchdog.py).
"""

from __future__ import annotations

import os
import plistlib
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

SERVICES = ("temporal", "worker")
WATCHDOG = "watchdog"
WATCHDOG_INTERVAL_S = 60.0  # the default: an outage is told within about a minute
# `doctor --notify` exits 1 when something is down: that is the check doing its job, not a
# failure of the watchdog's unit.
WATCHDOG_COMMAND = ("-m", "steward.cli", "doctor", "--notify")
KEPT_ENV = (  # what decides where Steward lives and how it reaches Temporal
    "STEWARD_DATA_DIR",
    "STEWARD_TEMPORAL_PORT",
    "STEWARD_TEMPORAL_UI_PORT",
    "STEWARD_TEMPORAL_NAMESPACE",
    "STEWARD_TEMPORAL_BIN",
    "STEWARD_HOST_ID",
    "STEWARD_METRICS_PORT",
    "PATH",
)
# A service worker serves Prometheus metrics (worker/metrics.py) here unless
# STEWARD_METRICS_PORT says otherwise at install: 9464 is OpenTelemetry's Prometheus port.
SERVICE_METRICS_PORT = 9464


@dataclass
class Outcome:
    manager: str  # systemd | launchd
    written: list[str] = field(default_factory=list)
    ran: list[str] = field(default_factory=list)  # commands run, with how they ended
    todo: list[str] = field(default_factory=list)  # what the user still has to run
    # Why the manager did not take the change (not on PATH, or a command's error); None when
    # it did. Install then enabled nothing; uninstall removed nothing.
    reason: str | None = None

    @property
    def applied(self) -> bool:
        return self.reason is None

    def as_dict(self) -> dict:
        return {
            "manager": self.manager,
            "applied": self.applied,
            "reason": self.reason,
            "written": self.written,
            "ran": self.ran,
            "todo": self.todo,
        }


def manager() -> str:
    return "launchd" if sys.platform == "darwin" else "systemd"


def unit_dir() -> Path:
    if manager() == "launchd":
        return Path.home() / "Library" / "LaunchAgents"
    config = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(config) / "systemd" / "user"


def unit_name(service: str) -> str:
    return (
        f"dev.steward.{service}.plist" if manager() == "launchd" else f"steward-{service}.service"
    )


def watchdog_files() -> list[Path]:
    """The watchdog's unit files: its timer and the service the timer starts (systemd), or its
    agent (launchd)."""
    if manager() == "launchd":
        return [unit_dir() / unit_name(WATCHDOG)]
    return [unit_dir() / "steward-watchdog.timer", unit_dir() / unit_name(WATCHDOG)]


def start_command(services: tuple[str, ...] | list[str]) -> str | None:
    """How the service manager starts these services again, where their units are installed."""
    if not all((unit_dir() / unit_name(s)).exists() for s in services):
        return None
    if manager() == "launchd":
        return "; ".join(f"launchctl kickstart gui/{os.getuid()}/dev.steward.{s}" for s in services)
    return "systemctl --user start " + " ".join(f"steward-{s}" for s in services)


def _environment(data: Path) -> dict[str, str]:
    kept = {k: os.environ[k] for k in KEPT_ENV if os.environ.get(k)}
    kept["STEWARD_DATA_DIR"] = str(data)
    kept.setdefault("STEWARD_METRICS_PORT", str(SERVICE_METRICS_PORT))
    kept["PYTHONUNBUFFERED"] = "1"
    return kept


def _systemd_quote(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def systemd_unit(service: str, python: str, data: Path) -> str:
    env = "\n".join(
        f"Environment={_systemd_quote(f'{k}={v}')}" for k, v in _environment(data).items()
    )
    after = (
        "\nAfter=steward-temporal.service\nWants=steward-temporal.service"
        if service == "worker"
        else ""
    )
    what = "Temporal dev server" if service == "temporal" else "worker"
    return f"""[Unit]
Description=Steward {what} (embedded; see `steward doctor`){after}

[Service]
Type=simple
ExecStart={python} -m steward.worker.service_main {service}
WorkingDirectory={data}
{env}
Restart=on-failure
RestartSec=5
TimeoutStopSec=45
StandardOutput=append:{data / f"{service}.log"}
StandardError=append:{data / f"{service}.log"}

[Install]
WantedBy=default.target
"""


def _systemd_span(seconds: float) -> str:
    """systemd's time span: 60 -> "60s" (whole seconds: the timer's accuracy is a second)."""
    return f"{max(1, round(seconds))}s"


def systemd_watchdog_service(python: str, data: Path) -> str:
    env = "\n".join(
        f"Environment={_systemd_quote(f'{k}={v}')}" for k, v in _environment(data).items()
    )
    return f"""[Unit]
Description=Steward watchdog: tell the runs' destinations when supervision is down (`steward doctor --notify`)

[Service]
Type=oneshot
ExecStart={python} {" ".join(WATCHDOG_COMMAND)}
WorkingDirectory={data}
{env}
SuccessExitStatus=1
TimeoutStartSec=120
StandardOutput=append:{data / "watchdog.log"}
StandardError=append:{data / "watchdog.log"}
"""


def systemd_watchdog_timer(interval: float) -> str:
    span = _systemd_span(interval)
    return f"""[Unit]
Description=Steward watchdog every {span} (`steward doctor --notify`)

[Timer]
OnActiveSec={span}
OnUnitActiveSec={span}
AccuracySec=1s
Unit={unit_name(WATCHDOG)}

[Install]
WantedBy=timers.target
"""


def launchd_watchdog_plist(python: str, data: Path, interval: float) -> bytes:
    return plistlib.dumps(
        {
            "Label": f"dev.steward.{WATCHDOG}",
            "ProgramArguments": [python, *WATCHDOG_COMMAND],
            "WorkingDirectory": str(data),
            "EnvironmentVariables": _environment(data),
            "StartInterval": max(1, round(interval)),
            "RunAtLoad": True,
            "StandardOutPath": str(data / "watchdog.log"),
            "StandardErrorPath": str(data / "watchdog.log"),
        }
    )


def launchd_plist(service: str, python: str, data: Path) -> bytes:
    return plistlib.dumps(
        {
            "Label": f"dev.steward.{service}",
            "ProgramArguments": [python, "-m", "steward.worker.service_main", service],
            "WorkingDirectory": str(data),
            "EnvironmentVariables": _environment(data),
            "RunAtLoad": True,
            "KeepAlive": {"SuccessfulExit": False},  # restart on failure only
            "StandardOutPath": str(data / f"{service}.log"),
            "StandardErrorPath": str(data / f"{service}.log"),
        }
    )


def _run(command: list[str], outcome: Outcome) -> str | None:
    """Run one manager command; what went wrong, as `ran` records it, or None when it worked."""
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as err:
        outcome.ran.append(f"{' '.join(command)}: {err}")
        return outcome.ran[-1]
    said = (done.stderr or done.stdout).strip().splitlines()
    outcome.ran.append(
        f"{' '.join(command)}: "
        + ("ok" if done.returncode == 0 else f"exit {done.returncode}")
        + (f" ({said[-1]})" if said and done.returncode else "")
    )
    return None if done.returncode == 0 else outcome.ran[-1]


class UnitsError(Exception):
    """The units cannot be written; the message names the place and the fix."""


def install(
    data: Path, python: str = sys.executable, watchdog_interval: float = WATCHDOG_INTERVAL_S
) -> Outcome:
    outcome = Outcome(manager())
    directory = unit_dir()
    contents = {
        directory / unit_name(service): launchd_plist(service, python, data)
        if outcome.manager == "launchd"
        else systemd_unit(service, python, data).encode()
        for service in SERVICES
    }
    if outcome.manager == "launchd":
        contents[watchdog_files()[0]] = launchd_watchdog_plist(python, data, watchdog_interval)
    else:
        timer, oneshot = watchdog_files()
        contents[timer] = systemd_watchdog_timer(watchdog_interval).encode()
        contents[oneshot] = systemd_watchdog_service(python, data).encode()
    try:
        directory.mkdir(parents=True, exist_ok=True)
        for path, content in contents.items():
            path.write_bytes(content)
            outcome.written.append(str(path))
    except OSError as err:
        for written in outcome.written:  # every unit or none
            Path(written).unlink(missing_ok=True)
        where = "XDG_CONFIG_HOME" if outcome.manager == "systemd" else "your home directory"
        raise UnitsError(
            f"Cannot write the service units in {directory} ({err.strerror or err}); "
            f"make it writable or point {where} elsewhere."
        ) from err
    if outcome.manager == "launchd":
        commands = [["launchctl", "load", "-w", p] for p in outcome.written]
        tool = "launchctl"
    else:
        units = [unit_name(s) for s in SERVICES] + [watchdog_files()[0].name]
        commands = [
            ["systemctl", "--user", "daemon-reload"],
            ["systemctl", "--user", "enable", "--now", *units],
        ]
        tool = "systemctl"
        outcome.todo.append(
            f"loginctl enable-linger {os.environ.get('USER', '$USER')}   "
            "(once, on a server: start them at boot, not only at login)"
        )
    _apply(commands, tool, outcome)
    return outcome


def uninstall() -> Outcome:
    """Stop and disable the units, then delete them. Where the manager is there but does not
    answer, nothing is deleted: a unit file gone while still enabled is one the manager can
    no longer stop or disable; the commands to run by hand are in `todo`."""
    outcome = Outcome(manager())
    paths = [unit_dir() / unit_name(s) for s in SERVICES] + watchdog_files()
    present = [p for p in paths if p.exists()]
    if outcome.manager == "launchd":
        tool = "launchctl"
        commands = [["launchctl", "unload", "-w", str(p)] for p in present]
    else:
        tool = "systemctl"
        # The timer first: it would start the watchdog's service again.
        units = [watchdog_files()[0].name] + [unit_name(s) for s in (*SERVICES, WATCHDOG)]
        commands = [["systemctl", "--user", "disable", "--now", *units]] if present else []
    # Without the manager on PATH nothing can have enabled the units: deleting them is enough.
    if shutil.which(tool) is not None and commands:
        _apply(commands, tool, outcome)
        if not outcome.applied:
            outcome.todo.extend(f"rm {p}" for p in present)
            if outcome.manager == "systemd":
                outcome.todo.append("systemctl --user daemon-reload")
            return outcome
    for path in present:
        path.unlink()
        outcome.written.append(f"removed {path}")
    if outcome.manager == "systemd" and shutil.which(tool) is not None and present:
        _apply([["systemctl", "--user", "daemon-reload"]], "systemctl", outcome)
    return outcome


def _apply(commands: list[list[str]], tool: str, outcome: Outcome) -> None:
    """Run the manager's commands where it is present and answers; else say what to run, and
    why, in `outcome.reason`."""
    if shutil.which(tool) is None:
        outcome.todo[:0] = [" ".join(c) for c in commands]
        outcome.reason = f"{tool} is not on PATH"
        return
    for index, command in enumerate(commands):
        failed = _run(command, outcome)
        if failed:
            outcome.todo[:0] = [" ".join(c) for c in commands[index:]]
            outcome.reason = failed
            return


def status() -> dict[str, dict]:
    found = {}
    units = {service: unit_dir() / unit_name(service) for service in SERVICES}
    units[WATCHDOG] = watchdog_files()[0]  # systemd: the timer is what is active
    for service, path in units.items():
        entry: dict = {"unit": str(path), "installed": path.exists(), "active": None}
        if path.exists() and manager() == "systemd" and shutil.which("systemctl"):
            done = subprocess.run(
                ["systemctl", "--user", "is-active", path.name],
                capture_output=True,
                text=True,
                timeout=30,
            )
            said = done.stdout.strip()  # is-active prints a state; a manager that is not
            # there (no user session bus) prints only an error
            entry["active"] = said or "unknown: the user's service manager does not answer"
        found[service] = entry
    return found
