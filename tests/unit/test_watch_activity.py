"""The watch activity against real processes and real Inspect logs, through Temporal's
`ActivityEnvironment` (no server): how a worker ended, its heartbeats, start hangs, lingering
after success, a socket answer and a log write as signs of life, a reported hang that
recovers, and a resumed watch."""

from __future__ import annotations

import asyncio
import dataclasses
import os
import shutil
import subprocess
import sys
import textwrap
from datetime import UTC, datetime, timedelta
from pathlib import Path

import psutil
import pytest
from temporalio.testing import ActivityEnvironment

from steward.activities.processes import control_socket, processes
from steward.activities.processes.watch import watch_worker
from steward.workflows.activity_io import WatchRequest, WorkerEnd
from steward.workflows.contracts import Progress, WatchLimits, WorkerProcess, WorkerPulse

SLEEPS = "import time; time.sleep({seconds})"
EXITS = "import sys, time; time.sleep({seconds}); sys.exit({code})"
# Answers Inspect's control socket (GET /tasks) with one running task until it is stopped.
ANSWERS = textwrap.dedent(
    """
    import http.server, json, socketserver, sys, threading, time

    path, log = sys.argv[1], sys.argv[2]
    rows = [{"log_location": log, "status": "running",
             "samples": {"total": 3, "completed": 2, "errored": 0, "in_flight": 1}}]

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            body = json.dumps(rows if self.path == "/tasks" else {}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = socketserver.UnixStreamServer(path, Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    time.sleep(60)
    """
)
QUIET = WatchLimits()  # the defaults: nothing is hung or lingering within a test


pytestmark = pytest.mark.usefixtures("fast_watch")  # tests/conftest.py


class Workers:
    """Start processes as the worker a watch watches; every one is ended after the test."""

    def __init__(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        self.tmp_path, self.monkeypatch = tmp_path, monkeypatch
        self.started: list[subprocess.Popen] = []
        self.log_dir = tmp_path / "logs"
        self.log_dir.mkdir()

    def start(
        self,
        argv: list[str],
        tasks: list[str],
        *,
        child: bool = True,
        socket: str | None = None,
        started_at: datetime | None = None,
    ) -> tuple[subprocess.Popen, WorkerProcess]:
        process = subprocess.Popen(
            [sys.executable, *argv], start_new_session=True, stdin=subprocess.DEVNULL
        )
        self.started.append(process)
        if child:  # as spawn_worker_sync registers the processes it starts
            self.monkeypatch.setitem(processes._children, process.pid, process)
        self.monkeypatch.delitem(processes._exit_codes, process.pid, raising=False)
        worker = WorkerProcess(
            worker_id=f"w-{len(self.started)}",
            tasks=tasks,
            pid=process.pid,
            create_time=psutil.Process(process.pid).create_time(),
            socket=socket or str(self.tmp_path / "no-such.sock"),
            output=str(self.tmp_path / "worker.log"),
            started_at=started_at or datetime.now(UTC),
        )
        return process, worker

    def request(self, worker: WorkerProcess, limits: WatchLimits = QUIET) -> WatchRequest:
        return WatchRequest(worker=worker, log_dir=str(self.log_dir), limits=limits)

    def close(self) -> None:
        for process in self.started:
            if process.poll() is None:
                process.kill()
            process.wait(10)
            processes._exit_codes.pop(process.pid, None)


@pytest.fixture
def workers(tmp_path, monkeypatch):
    started = Workers(tmp_path, monkeypatch)
    yield started
    started.close()


def copy_log(eval_log: str, directory: Path) -> tuple[str, datetime]:
    """A fresh copy of the real log (written now), and when it was written."""
    directory.mkdir(exist_ok=True)
    path = directory / Path(eval_log).name
    shutil.copyfile(eval_log, path)
    return str(path), datetime.fromtimestamp(path.stat().st_mtime, UTC)


async def run(
    request: WatchRequest, env: ActivityEnvironment | None = None, on_beat=None
) -> tuple[WorkerEnd, list[WorkerPulse], float]:
    """The watch's end, a copy of each heartbeat as it was sent, and the seconds it took."""
    env = env or ActivityEnvironment()
    beats: list[WorkerPulse] = []

    def heartbeat(*details) -> None:
        (pulse,) = details
        beats.append(pulse.model_copy(deep=True))
        if on_beat is not None:
            on_beat(pulse)

    env.on_heartbeat = heartbeat
    loop = asyncio.get_running_loop()
    began = loop.time()
    end = await asyncio.wait_for(env.run(watch_worker, request), timeout=20)
    return end, beats, loop.time() - began


# ---------------------------------------------------------------- how a worker ended
async def test_a_child_that_exits_with_code_3(workers):
    process, worker = workers.start(["-c", EXITS.format(seconds=0.3, code=3)], ["alpha-id"])
    end, _, took = await run(workers.request(worker))
    assert process.poll() == 3
    assert end.kind == "exited" and end.worker_id == worker.worker_id
    assert end.exit_code == 3 and end.signal is None
    assert f"(pid {worker.pid}) exited with code 3" in end.detail
    assert end.log_status == {"alpha-id": None}  # no log for it
    assert took < 10


async def test_a_child_killed_with_sigkill(workers):
    process, worker = workers.start(["-c", SLEEPS.format(seconds=60)], ["alpha-id"])
    # killed while watched: once the watch has looked at it
    end, beats, _ = await run(workers.request(worker), on_beat=lambda _: process.kill())
    assert beats and process.poll() == -9
    assert end.kind == "exited" and end.signal == 9 and end.exit_code is None
    assert "was killed by SIGKILL" in end.detail


async def test_a_process_not_our_child_exits_with_its_code_unknown(workers):
    process, worker = workers.start(
        ["-c", EXITS.format(seconds=0.3, code=3)], ["alpha-id"], child=False
    )
    assert process.pid not in processes._children
    end, _, took = await run(workers.request(worker))
    assert end.kind == "exited" and end.exit_code is None and end.signal is None
    assert "exit code unknown: not a child" in end.detail
    assert process.wait(5) == 3 and took < 10  # it did exit with 3: the watch could not know


async def test_an_exit_reports_its_tasks_newest_log(workers, eval_log, identifier):
    copy_log(eval_log, workers.log_dir)
    process, worker = workers.start(
        ["-c", EXITS.format(seconds=0.3, code=0)], [identifier, "other-id"]
    )
    end, _, _ = await run(workers.request(worker))
    assert end.kind == "exited" and end.exit_code == 0
    assert end.log_status == {identifier: "success", "other-id": None}


# ---------------------------------------------------------------- heartbeats
async def test_heartbeats_carry_the_workers_pulse_while_it_lives(workers):
    process, worker = workers.start(["-c", SLEEPS.format(seconds=60)], ["alpha-id"])
    living = []

    def stop_after_four(pulse: WorkerPulse) -> None:
        living.append(process.poll() is None)
        if len(living) == 4:
            process.terminate()

    end, beats, _ = await run(workers.request(worker), on_beat=stop_after_four)
    assert living == [True] * 4 and len(beats) == 4  # no heartbeat once it is gone
    assert end.kind == "exited" and end.signal == 15
    assert all(isinstance(b, WorkerPulse) for b in beats)
    assert {(b.worker_id, b.pid) for b in beats} == {(worker.worker_id, worker.pid)}
    times = [b.at for b in beats]
    assert times == sorted(times) and len(set(times)) == len(times)
    assert worker.started_at <= times[0] and times[-1] <= end.at
    # no socket, no log: nothing to show yet
    assert all(b.answered_at is None and b.logged_at is None and not b.progress for b in beats)


# ---------------------------------------------------------------- hung
async def test_a_worker_with_no_socket_and_no_log_is_hung_after_start_timeout(workers):
    process, worker = workers.start(["-c", SLEEPS.format(seconds=60)], ["alpha-id"])
    limits = WatchLimits(start_timeout=0.5, unresponsive_after=300, linger_after=60)
    end, beats, took = await run(workers.request(worker, limits))
    assert end.kind == "hung" and end.since == worker.started_at
    assert end.at - worker.started_at >= timedelta(seconds=0.5)  # not before start_timeout
    assert "no log and no control socket 0.5s after spawn" in end.detail
    assert process.poll() is None  # the watch reports; it never stops the worker
    assert beats and took < 10


async def test_a_socket_answer_is_life(workers, eval_log, identifier, tmp_path):
    # the control socket names the task's log: the watch maps its row to the identifier
    log, _ = copy_log(eval_log, tmp_path / "elsewhere")
    socket = tmp_path / "control.sock"
    process, worker = workers.start(
        ["-c", ANSWERS, str(socket), log], [identifier], socket=str(socket)
    )
    for _ in range(200):  # until it listens
        if socket.exists() or process.poll() is not None:
            break
        await asyncio.sleep(0.05)
    assert socket.exists()
    await asyncio.sleep(0.3)  # spawned longer ago than start_timeout
    limits = WatchLimits(start_timeout=0.2, unresponsive_after=300, linger_after=0)

    looks = []

    def stop_after_four(pulse: WorkerPulse) -> None:
        looks.append(pulse.at)
        if len(looks) == 4:
            process.terminate()

    try:
        end, beats, _ = await run(workers.request(worker, limits), on_beat=stop_after_four)
    finally:
        client = control_socket._clients.pop(str(socket), None)
        if client is not None:
            client.close()
    assert end.kind == "exited" and end.signal == 15  # never hung: its socket answered
    assert all(b.answered_at is not None and b.source == "socket" for b in beats)
    assert len({b.answered_at for b in beats}) == 4  # each look asks again
    assert beats[-1].progress == {identifier: Progress(total=3, completed=2, in_flight=1)}
    assert beats[-1].moved_at == beats[0].answered_at  # it moved when first seen, not since
    assert all(b.success_at is None and b.logged_at is None for b in beats)


async def test_a_log_write_is_life(workers, eval_log, identifier):
    started = datetime.now(UTC) - timedelta(seconds=1)
    _, written = copy_log(eval_log, workers.log_dir)
    # a second task with no log yet: the worker is not done, so not lingering
    process, worker = workers.start(
        ["-c", SLEEPS.format(seconds=60)], [identifier, "other-id"], started_at=started
    )
    limits = WatchLimits(start_timeout=600, unresponsive_after=0.5, linger_after=0)
    end, beats, took = await run(workers.request(worker, limits))
    # a start hang would take start_timeout (600 s): the log write made it a started worker
    assert end.kind == "hung" and end.since == written
    assert "no control-socket answer and no log write" in end.detail
    assert beats[0].logged_at == written and beats[0].success_at is None
    assert beats[0].source == "log" and beats[0].progress[identifier].completed == 3
    assert process.poll() is None and took < 10


async def test_a_worker_reported_hung_that_writes_its_log_again_has_recovered(
    workers, eval_log, identifier
):
    started = datetime.now(UTC) - timedelta(seconds=5)
    # a second task with no log yet: the worker is not done, so not complete or lingering
    process, worker = workers.start(
        ["-c", SLEEPS.format(seconds=60)], [identifier, "other-id"], started_at=started
    )
    limits = WatchLimits(start_timeout=1, unresponsive_after=300, linger_after=0)
    # its start hang was reported (silent since spawn): the watch waits for a sign of life
    request = workers.request(worker, limits).model_copy(update={"hang_reported": started})
    written: list[datetime] = []

    def write_after_first_look(pulse: WorkerPulse) -> None:
        if not written:
            written.append(copy_log(eval_log, workers.log_dir)[1])

    end, beats, took = await run(request, on_beat=write_after_first_look)
    assert beats[0].logged_at is None  # silent at first: the hang it was asked about held
    assert end.kind == "recovered" and end.since == written[0]
    assert end.detail == f"worker {worker.worker_id} (pid {worker.pid}): its log is written again"
    assert process.poll() is None and took < 10


async def test_a_success_log_older_than_the_worker_is_neither_life_nor_a_finish(
    workers, eval_log, identifier
):
    path, _ = copy_log(eval_log, workers.log_dir)
    hour_ago = (datetime.now(UTC) - timedelta(hours=1)).timestamp()
    os.utime(path, (hour_ago, hour_ago))  # a previous worker's log
    process, worker = workers.start(["-c", SLEEPS.format(seconds=60)], [identifier])
    limits = WatchLimits(start_timeout=0.5, unresponsive_after=300, linger_after=0)
    end, beats, _ = await run(workers.request(worker, limits))
    assert end.kind == "hung" and end.since == worker.started_at
    assert all(b.logged_at is None and b.success_at is None for b in beats)


# ---------------------------------------------------------------- complete, lingering
async def test_alive_after_its_tasks_logs_are_success_is_complete(workers, eval_log, identifier):
    started = datetime.now(UTC) - timedelta(seconds=1)
    _, written = copy_log(eval_log, workers.log_dir)
    process, worker = workers.start(
        ["-c", SLEEPS.format(seconds=60)], [identifier], started_at=started
    )
    # the hang limits are shorter than the grace: a finished worker is never called hung
    limits = WatchLimits(start_timeout=0.2, unresponsive_after=0.2, linger_after=60)
    end, beats, took = await run(workers.request(worker, limits))
    assert end.kind == "complete" and end.since == written
    assert end.at - written >= timedelta(seconds=0.5)  # not before the grace (patched to 0.5 s)
    assert "its tasks' logs are success; it has not exited yet" in end.detail
    assert beats[0].success_at == written and beats[0].logged_at == written
    assert process.poll() is None and took < 10


async def test_alive_linger_after_its_tasks_logs_are_success_is_lingering(
    workers, eval_log, identifier
):
    started = datetime.now(UTC) - timedelta(seconds=1)
    _, written = copy_log(eval_log, workers.log_dir)
    process, worker = workers.start(
        ["-c", SLEEPS.format(seconds=60)], [identifier], started_at=started
    )
    limits = WatchLimits(start_timeout=0.2, unresponsive_after=0.2, linger_after=1.2)
    request = workers.request(worker, limits).model_copy(update={"complete_reported": True})
    end, beats, took = await run(request)
    assert end.kind == "lingering" and end.since == written  # its completion was reported
    assert end.at - written >= timedelta(seconds=1.2)  # not before linger_after
    assert "still alive 1.2s after its tasks' logs were success" in end.detail
    assert beats[0].success_at == written
    assert process.poll() is None and took < 10


# ---------------------------------------------------------------- resumed
@pytest.mark.parametrize("same_worker", [True, False])
async def test_a_resumed_watch_keeps_its_clocks(workers, same_worker):
    started = datetime.now(UTC) - timedelta(seconds=20)
    process, worker = workers.start(
        ["-c", EXITS.format(seconds=0.6, code=0)], ["alpha-id"], started_at=started
    )
    previous = WorkerPulse(
        worker_id=worker.worker_id,
        pid=worker.pid if same_worker else worker.pid + 100_000,  # a pid that is not it
        at=started + timedelta(seconds=15),
        progress={"alpha-id": Progress(total=3, completed=1)},
        source="socket",
        moved_at=started + timedelta(seconds=14),
        answered_at=started + timedelta(seconds=15),
    )
    env = ActivityEnvironment()
    env.info = dataclasses.replace(env.info, heartbeat_details=[previous.model_dump(mode="json")])
    end, beats, _ = await run(workers.request(worker), env)
    assert end.kind == "exited" and beats
    if same_worker:
        assert {(b.answered_at, b.moved_at) for b in beats} == {
            (previous.answered_at, previous.moved_at)
        }
        assert all(b.progress == previous.progress for b in beats)
    else:  # another process's pulse is not this worker's past
        assert all(b.answered_at is None and b.moved_at is None for b in beats)
        assert all(not b.progress for b in beats)
