"""`steward doctor`: what Steward runs on, checked in one pass, each problem with what to do.

Read-only: it starts nothing. Temporal is asked whether it answers (gRPC health) and who polls
Steward's task queues (DescribeTaskQueue: the workers Temporal itself sees, which is what
matters, not the pid files); the pid files, ports, data directory and versions come from this
machine. A worker whose pid file outlived it (killed, crashed) is a problem at once: Temporal
lists a dead poller for up to a minute more.

`steward doctor --notify` hands the report to the watchdog (worker/watchdog.py).
"""

from __future__ import annotations

import asyncio
import json
import platform
import socket
import time
from dataclasses import asdict, dataclass, field
from importlib.metadata import PackageNotFoundError, version

from steward.worker import embedded
from steward.worker.connect import Target, connect, data_dir, host_queue, runs_url, target_for
from steward.worker.version import DISTRIBUTION, steward_version
from steward.workflows.contracts import WORKFLOW_TASK_QUEUE
from steward.workflows.options import StewardOptions

POLLED_WITHIN_S = 90.0  # a poller Temporal saw this recently is live (it long-polls for 60 s)


@dataclass
class Check:
    name: str
    ok: bool
    detail: str
    fix: str | None = None


@dataclass
class Report:
    checks: list[Check] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self.checks)

    def as_dict(self) -> dict:
        return {"ok": self.ok, "checks": [asdict(c) for c in self.checks]}


def _version(package: str) -> str:
    try:
        return version(package)
    except PackageNotFoundError:
        return "not installed"


def _port_owner(port: int) -> str:
    """Whether something listens on 127.0.0.1:`port`."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.settimeout(0.5)
        return "listening" if probe.connect_ex(("127.0.0.1", port)) == 0 else "free"


async def _pollers(target: Target) -> dict[str, list[str]] | None:
    """Who polled each of Steward's task queues lately (None: Temporal did not answer)."""
    from temporalio.api.enums.v1 import TaskQueueType
    from temporalio.api.taskqueue.v1 import TaskQueue
    from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest

    try:
        client = await asyncio.wait_for(connect(target), 3.0)
    except Exception:
        return None
    queues = {
        WORKFLOW_TASK_QUEUE: TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
        host_queue(): TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY,
    }
    seen: dict[str, list[str]] = {}
    now = time.time()
    for name, kind in queues.items():
        try:
            described = await asyncio.wait_for(
                client.workflow_service.describe_task_queue(
                    DescribeTaskQueueRequest(
                        namespace=target.namespace,
                        task_queue=TaskQueue(name=name),
                        task_queue_type=kind,
                    )
                ),
                3.0,
            )
        except Exception:
            return None
        seen[name] = [
            p.identity
            for p in described.pollers
            if now - p.last_access_time.ToSeconds() <= POLLED_WITHIN_S
        ]
    return seen


def examine(options: StewardOptions) -> Report:
    target = target_for(options)
    report = Report()
    add = report.checks.append
    add(
        Check(
            "versions",
            True,
            f"{DISTRIBUTION} {steward_version()}, inspect_ai {_version('inspect_ai')}, "
            f"inspect_scout {_version('inspect_scout')}, temporalio {_version('temporalio')}, "
            f"Python {platform.python_version()}",
        )
    )
    add(Check("data directory", True, str(data_dir())))
    answers = asyncio.run(embedded.server_healthy(target))
    where = "embedded dev server" if target.embedded else "cluster"
    add(
        Check(
            "temporal",
            answers,
            f"{target.address} ({where}, namespace {target.namespace}): "
            + ("answers" if answers else "does not answer"),
            None
            if answers
            else "run `steward server start`"
            if target.embedded
            else "check STEWARD_TEMPORAL_ADDRESS and that the cluster is reachable",
        )
    )
    if target.embedded:
        ports = {
            "temporal port": options.temporal_port,
            "web UI port": options.temporal_ui_port,
        }
        add(
            Check(
                "ports",
                True,
                ", ".join(f"{name} {port} {_port_owner(port)}" for name, port in ports.items())
                + " (STEWARD_TEMPORAL_PORT, STEWARD_TEMPORAL_UI_PORT)",
            )
        )
        if target.ui_url:  # the runs only (its other workflows are Steward's bookkeeping)
            add(Check("web UI", answers, runs_url(target) or target.ui_url))
    worker = embedded.worker_status()
    pollers = asyncio.run(_pollers(target)) if answers else None
    if pollers is None:
        add(
            Check(
                "workers",
                False,
                f"cannot ask Temporal who polls (pid file: {worker.detail})",
                "start Temporal first",
            )
        )
    else:
        for queue, identities in pollers.items():
            add(
                Check(
                    f"queue {queue}",
                    bool(identities),
                    ", ".join(identities) if identities else "no worker polls it",
                    None if identities else "run `steward worker start` (or `steward worker`)",
                )
            )
    gone = None if worker.running else exited_worker_pid()
    add(
        Check(
            "detached worker",
            gone is None,
            f"{worker.detail} (pid {worker.pid or '—'}, log {worker.log})"
            if gone is None
            else f"the Steward worker (pid {gone}) has exited; see its log, {worker.log}",
            None if gone is None else "run `steward worker start`",
        )
    )
    return report


def exited_worker_pid() -> int | None:
    """The pid of the Steward worker this data directory's pid file names, when that process is
    gone: it was killed or crashed (a clean stop removes the file). None otherwise."""
    if embedded.worker_status().running:
        return None
    try:  # the file `steward worker start` and service_main write (embedded.write_pid)
        return int(json.loads((data_dir() / "worker.pid").read_text())["pid"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
