"""The watch: one long-running activity per task worker, for as long as the process lives.

It looks at the worker every second (is the process alive?) and every few seconds at its
progress (the control socket; the log while no socket answers), heartbeats that as a
`WorkerPulse` (status reads it from the workflow's pending activities: no history grows), and
completes with a `WorkerEnd` when the process exits — or when it is hung or lingering
(workflows/policy/worker_watch.py judges) — so the run tends at once.

A watch restarted by Temporal (heartbeat timeout on a Steward worker that died, or a retry)
re-adopts the same pid from its request and resumes its clocks from the last heartbeat: it
never starts a process, so there is never a second worker.
"""

from __future__ import annotations

import asyncio
import signal
from datetime import UTC, datetime
from pathlib import Path

import httpx
from temporalio import activity

from steward.activities.logs.log_listing import log_info, logs_by_identifier
from steward.activities.processes.control_socket import control_get
from steward.activities.processes.observe import (
    connections_of,
    progress_from_log,
    progress_from_row,
)
from steward.activities.processes.processes import exit_code_of, is_alive, stopped_by_steward
from steward.activities.processes.provider_watch import look_at_provider
from steward.activities.processes.worker_exit import (
    exit_report,
    kernel_oom_killed,
    oom_kill_counter,
    oom_killed,
    oom_kills,
)
from steward.workflows.activity_io import WatchRequest, WorkerEnd
from steward.workflows.contracts import Progress, WorkerPulse
from steward.workflows.names import Activity
from steward.workflows.policy.exit_causes import signal_cause
from steward.workflows.policy.provider_stuck import judge_provider
from steward.workflows.policy.worker_watch import judge, judge_connections, saturated

ALIVE_EVERY_S = 1.0  # how soon an exit is seen
LOOK_EVERY_S = 2.5  # progress read and heartbeat (the worker throttles heartbeats to ~2 s)
LOG_PROGRESS_EVERY_S = 10.0  # reading a log's samples costs more than asking the socket
_RUNNING = {"running", "started"}


class WorkerLook:
    """What the watch knows of one worker; `look()` refreshes it (blocking I/O: call it off
    the event loop)."""

    def __init__(self, request: WatchRequest, resumed: WorkerPulse | None) -> None:
        self.request = request
        worker = request.worker
        same = resumed is not None and (resumed.worker_id, resumed.pid) == (
            worker.worker_id,
            worker.pid,
        )
        self.pulse = (
            resumed
            if same and resumed is not None
            else WorkerPulse(worker_id=worker.worker_id, pid=worker.pid, at=datetime.now(UTC))
        )
        self._log_read_at = 0.0
        # Its memory cgroup's OOM kills as the watch began: one more at a SIGKILL is the kernel's.
        self._oom_counter = oom_kill_counter(worker.pid)
        self._oom_kills = oom_kills(self._oom_counter)

    def alive(self) -> bool:
        worker = self.request.worker
        return is_alive(worker.pid, worker.create_time)

    def look(self) -> WorkerPulse:
        now = datetime.now(UTC)
        worker, pulse = self.request.worker, self.pulse
        rows = self._socket_rows()
        progress: dict[str, Progress] = {}
        if rows is not None:
            pulse.answered_at = now
            for identifier, row in rows.items():
                progress[identifier] = progress_from_row(row, 0)
        newest = self._newest_logs()
        written = [mtime for _, mtime in newest.values() if mtime > worker.started_at]
        if written:
            pulse.logged_at = max(written)
        socket_says_running = rows is not None and all(
            r.get("status") in _RUNNING for r in rows.values()
        )
        statuses = {} if socket_says_running else self._statuses(newest)
        done = [
            newest[i][1]
            for i in worker.tasks
            if statuses.get(i) == "success" and i in newest and newest[i][1] > worker.started_at
        ]
        if worker.tasks and len(done) == len(worker.tasks) and pulse.success_at is None:
            pulse.success_at = max(done)
        elif len(done) < len(worker.tasks):
            pulse.success_at = None
        if rows is None and newest and now.timestamp() - self._log_read_at >= LOG_PROGRESS_EVERY_S:
            self._log_read_at = now.timestamp()
            for identifier, (path, _) in newest.items():
                progress[identifier] = progress_from_log(path, 0)
        if rows and self.request.report_pushback:
            self._look_at_connections(list(rows.values()), progress, now)
        if rows and self.request.limits.provider_stuck_after is not False:
            pulse.provider = look_at_provider(
                worker.socket,
                list(rows.values()),
                progress,
                pulse.provider,
                now,
                self.request.limits.provider_stuck_after,
            )
        if progress:
            moved = any(pulse.progress.get(i) != p for i, p in progress.items())
            pulse.progress.update(progress)
            pulse.source = "socket" if rows is not None else "log"
            if moved:
                pulse.moved_at = now
        pulse.at = now
        return pulse

    def _look_at_connections(
        self, rows: list[dict], progress: dict[str, Progress], now: datetime
    ) -> None:
        pulse = self.pulse
        retries, limit, ceiling = connections_of(self.request.worker.socket, rows)
        if retries is None:
            return
        new_retries = pulse.rate_limit_retries is not None and retries > pulse.rate_limit_retries
        pulse.rate_limit_retries, pulse.connection_limit = retries, limit
        pulse.connection_ceiling = ceiling
        in_flight = sum(p.in_flight for p in progress.values())
        if saturated(pulse, in_flight, new_retries):
            pulse.saturated_since = pulse.saturated_since or now
        else:
            pulse.saturated_since = None

    def ended(self) -> WorkerEnd:
        """How the exited process ended: its exit code or signal, and its tasks' newest logs."""
        worker = self.request.worker
        code = exit_code_of(worker.pid)
        statuses = self._statuses(self._newest_logs())
        log_status = {i: statuses.get(i) for i in worker.tasks}
        if code is None:
            how = "exited (exit code unknown: not a child of this Steward worker)"
        elif code < 0:
            how = f"was killed by {signal.Signals(-code).name}"
        else:
            how = f"exited with code {code}"
        cause, tail = self._cause(code, log_status)
        return WorkerEnd(
            worker_id=worker.worker_id,
            kind="exited",
            at=datetime.now(UTC),
            detail=f"worker {worker.worker_id} (pid {worker.pid}) {how}",
            cause=cause,
            exit_code=code if code is not None and code >= 0 else None,
            signal=-code if code is not None and code < 0 else None,
            log_status=log_status,
            log_tail=tail,
        )

    def _cause(
        self, code: int | None, log_status: dict[str, str | None]
    ) -> tuple[str | None, list[str]]:
        """What the worker died of and its log's last lines. Nothing for a worker Steward
        stopped; a signal's own cause (SIGKILL: the OOM killer?) for one killed by a signal;
        else what its log says, even after exit code 0 (Inspect records a task whose log it
        cannot write as errored and returns), unless its tasks all succeeded."""
        worker = self.request.worker
        if stopped_by_steward(worker.pid, worker.create_time):
            return None, []
        cause, tail = exit_report(worker.output, self.request.log_dir)
        if code is not None and code < 0:
            name = signal.Signals(-code).name
            oom = None
            if -code == signal.SIGKILL:
                oom = oom_killed(worker.pid, worker.create_time, self._oom_counter, self._oom_kills)
            return signal_cause(-code, name, oom_killed=oom), tail
        if code == 0 and log_status and all(s == "success" for s in log_status.values()):
            return None, tail
        if code is None and cause is None and kernel_oom_killed(worker.pid, worker.create_time):
            # Adopted, so its exit is unknown: the kernel's log may still say it killed it.
            return signal_cause(signal.SIGKILL, "SIGKILL", oom_killed=True), tail
        return cause, tail

    # -------------------------------------------------------------- reading
    def _socket_rows(self) -> dict[str, dict] | None:
        """identifier -> its task row, or None when the socket did not answer."""
        socket = self.request.worker.socket
        if not Path(socket).exists():
            return None
        try:
            rows = control_get(socket, "/tasks", timeout=2.0)
        except (httpx.HTTPError, ValueError):
            return None
        if not isinstance(rows, list):
            return None
        found = {}
        for row in rows:
            location = row.get("log_location")
            info = log_info(location, fresh_status=False) if location else None
            if info is not None:
                found[info.identifier] = row
        return found

    def _newest_logs(self) -> dict[str, tuple[str, datetime]]:
        """identifier -> (its newest log, when it was last written), for this worker's tasks."""
        found = {}
        logs = logs_by_identifier(self.request.log_dir)
        for identifier in self.request.worker.tasks:
            listed = logs.get(identifier)
            if not listed:
                continue
            path = listed[-1].path
            try:
                mtime = datetime.fromtimestamp(Path(path).stat().st_mtime, UTC)
            except OSError:
                continue
            found[identifier] = (path, mtime)
        return found

    @staticmethod
    def _statuses(newest: dict[str, tuple[str, datetime]]) -> dict[str, str]:
        statuses = {}
        for identifier, (path, _) in newest.items():
            info = log_info(path)
            if info is not None:
                statuses[identifier] = info.status
        return statuses


def _resumed_pulse() -> WorkerPulse | None:
    details = activity.info().heartbeat_details
    if not details:
        return None
    try:
        return WorkerPulse.model_validate(details[0])
    except ValueError:
        return None


@activity.defn(name=Activity.WATCH_WORKER)
async def watch_worker(request: WatchRequest) -> WorkerEnd:
    watcher = WorkerLook(request, _resumed_pulse())
    looked_at = 0.0
    loop = asyncio.get_running_loop()
    started, reported = datetime.now(UTC), request.rate_limit_reported
    while True:
        if not watcher.alive():
            return await asyncio.to_thread(watcher.ended)
        if loop.time() - looked_at >= LOOK_EVERY_S:
            looked_at = loop.time()
            pulse = await asyncio.to_thread(watcher.look)
            activity.heartbeat(pulse)
            end = judge(
                pulse,
                request.worker,
                request.limits,
                datetime.now(UTC),
                request.hang_reported,
                request.complete_reported,
            )
            if end is None:
                # Counted from the first reading when the run had none to give.
                reported = pulse.rate_limit_retries if reported is None else reported
                end = judge_connections(pulse, request, reported, started, datetime.now(UTC))
            if end is None:
                end = judge_provider(pulse, request, datetime.now(UTC))
            if end is not None and watcher.alive():
                return end
        await asyncio.sleep(ALIVE_EVERY_S)
