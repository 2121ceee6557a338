"""How a dead worker ended, read from the world: its own log (Rich-wrapped records joined, the
cause and the last lines), a full disk, the kernel's log for a SIGKILL, and the watch's end for
real processes (through Temporal's ActivityEnvironment): a worker Inspect let exit 0 on a full
disk says so, one Steward stopped says nothing, a SIGKILL asks about memory. Also: a log dir on
a mount of its own still archives its superseded logs (a rename across devices fails)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from harness.tmpfs import fill, tmpfs
from steward.activities.logs.log_store import move
from steward.activities.processes import processes, worker_exit
from steward.activities.processes.processes import stop_workers_sync
from steward.activities.processes.worker_exit import exit_report, logical_lines, said_cause
from steward.workflows.activity_io import StopRequest
from tests.unit.test_watch_activity import Workers, copy_log, run

# A worker's own log as Inspect (through Rich, 80 columns) wrote it when its log dir filled up:
# recovery of the crashed log failed, the task was recorded as errored, and the worker exited 0.
FULL_DISK_LOG = (
    "[12/05/26 13:21:16] WARNING  Recovery failed for                 evalset.py:1595\n"
    "                             file:///tmp/fx26/ws/logs/2026-12-05                \n"
    "                             T13-20-46-00-00_filling_dNDWnN27HQV                \n"
    "                             qub9PPCdKof.eval: [Errno 28] No                    \n"
    "                             space left on device                               \n"
    "                    ERROR    Task 'filling' encountered an error      run.py:675\n"
    "                             while starting or writing its log:                 \n"
    "                             [Errno 28] No space left on device                 \n"
)
RECOVERY = (
    "WARNING Recovery failed for file:///tmp/fx26/ws/logs/2026-12-05T13-20-46-00-00_filling_"
    "dNDWnN27HQVqub9PPCdKof.eval: [Errno 28] No space left on device"
)
TASK_ERROR = (
    "ERROR Task 'filling' encountered an error while starting or writing its log: "
    "[Errno 28] No space left on device"
)
ENOSPC_CAUSE = (
    "no space left on device under {}: free space there (or move log_dir) and retry the task"
)
# Write the log above and exit 0, as the worker did.
EXITS_0_SAYING = "import sys; open(sys.argv[1], 'w').write(sys.argv[2]); sys.exit(0)"
SLEEPS = "import time; time.sleep(60)"


pytestmark = pytest.mark.usefixtures("fast_watch")  # tests/conftest.py


@pytest.fixture
def workers(tmp_path, monkeypatch):
    started = Workers(tmp_path, monkeypatch)
    yield started
    started.close()


# ---------------------------------------------------------------- the worker's own log
def test_rich_records_are_joined_into_one_line_each():
    lines = logical_lines(FULL_DISK_LOG)
    assert [line.text for line in lines] == [RECOVERY, TASK_ERROR]
    assert [line.level for line in lines] == ["WARNING", "ERROR"]
    assert said_cause(lines) == TASK_ERROR.removeprefix("ERROR ")


def test_a_line_wrapped_at_a_space_that_fills_the_column_keeps_its_space():
    width = 80 - 29 - len(" run.py:675")  # the message column, as Rich laid it out
    full = "words that fill the column exactly: done"
    assert len(full) == width
    text = (
        f"{'[12/05/26 13:21:16] ERROR    Task failed:'.ljust(80 - 10)}run.py:675\n"
        f"{' ' * 29}{full}\n"
        f"{' ' * 29}next line\n"
    )
    [line] = logical_lines(text)
    assert line.text == f"ERROR Task failed: {full} next line"


def test_a_traceback_after_a_logged_error_is_the_cause():
    text = FULL_DISK_LOG + (
        "Traceback (most recent call last):\n"
        '  File "/ws/evalset.py", line 3, in <module>\n'
        "│ PermissionError: [Errno 13] Permission denied: '/ws/logs/x.eval' │\n"
    )
    lines = logical_lines(text)
    assert said_cause(lines) == "PermissionError: [Errno 13] Permission denied: '/ws/logs/x.eval'"


def test_the_report_of_a_worker_that_filled_its_log_dir(tmp_path):
    output = tmp_path / "w0004.log"
    output.write_text(FULL_DISK_LOG)
    cause, tail = exit_report(str(output), "/tmp/fx26/ws/logs")
    assert cause == ENOSPC_CAUSE.format("/tmp/fx26/ws/logs")
    assert tail == [RECOVERY, TASK_ERROR]


def test_a_log_of_many_lines_is_quoted_by_its_last_five_each_cut_short(tmp_path):
    output = tmp_path / "w.log"
    output.write_text("".join(f"line {i}\n" for i in range(40)) + "x" * 500 + "\n")
    cause, tail = exit_report(str(output), str(tmp_path))
    assert cause is None
    assert tail[:4] == ["line 36", "line 37", "line 38", "line 39"]
    assert len(tail[4]) == worker_exit.LINE_LIMIT and tail[4].endswith("…")


def test_a_full_log_dir_is_the_cause_when_the_log_says_nothing(tmp_path):
    with tmpfs(tmp_path / "logs", "1m") as logs:
        output = tmp_path / "w.log"
        output.write_text("")  # a worker that could not even say why
        assert exit_report(str(output), str(logs)) == (None, [])
        fill(logs)
        cause, tail = exit_report(str(output), str(logs))
        assert cause == ENOSPC_CAUSE.format(logs) and tail == []


def test_the_kernel_log_names_no_oom_kill_of_a_process_we_killed(workers):
    process, worker = workers.start(["-c", SLEEPS], ["alpha-id"])
    process.kill()
    process.wait(5)
    said = worker_exit.kernel_oom_killed(worker.pid, worker.create_time)
    assert said is (False if os.access("/dev/kmsg", os.R_OK) else None)


def test_oom_kills_are_counted_from_the_cgroup_file(tmp_path):
    v1 = tmp_path / "memory.oom_control"
    v1.write_text("oom_kill_disable 0\nunder_oom 0\noom_kill 2\n")
    v2 = tmp_path / "memory.events"
    v2.write_text("low 0\nhigh 0\nmax 4\noom 1\noom_kill 1\noom_group_kill 0\n")
    assert worker_exit.oom_kills(str(v1)) == 2 and worker_exit.oom_kills(str(v2)) == 1
    assert worker_exit.oom_kills(None) is None
    assert worker_exit.oom_kills(str(tmp_path / "gone")) is None


# ---------------------------------------------------------------- the watch's end
async def test_a_worker_that_exits_0_on_a_full_disk_says_no_space_left(workers):
    output = Path(workers.tmp_path / "worker.log")
    process, worker = workers.start(
        ["-c", EXITS_0_SAYING, str(output), FULL_DISK_LOG], ["alpha-id"]
    )
    end, _, _ = await run(workers.request(worker))
    assert end.exit_code == 0 and "exited with code 0" in end.detail
    assert end.cause == ENOSPC_CAUSE.format(workers.log_dir)
    assert end.log_tail == [RECOVERY, TASK_ERROR]


async def test_a_worker_whose_tasks_succeeded_died_of_nothing(workers, eval_log, identifier):
    copy_log(eval_log, workers.log_dir)
    output = Path(workers.tmp_path / "worker.log")
    process, worker = workers.start(
        ["-c", EXITS_0_SAYING, str(output), FULL_DISK_LOG], [identifier]
    )
    end, _, _ = await run(workers.request(worker))
    assert end.exit_code == 0 and end.log_status == {identifier: "success"}
    assert end.cause is None


async def test_a_sigkill_asks_whether_memory_ran_out(workers):
    process, worker = workers.start(["-c", SLEEPS], ["alpha-id"])
    end, _, _ = await run(workers.request(worker), on_beat=lambda _: process.kill())
    assert end.signal == 9 and "was killed by SIGKILL" in end.detail
    assert end.cause.startswith("killed by signal 9 (SIGKILL; out of memory?)")


async def test_a_worker_steward_stopped_died_of_nothing(workers):
    process, worker = workers.start(["-c", SLEEPS], ["alpha-id"])

    def stop(_) -> None:
        stop_workers_sync(StopRequest(workers=[worker], grace_seconds=0))

    end, _, _ = await run(workers.request(worker), on_beat=stop)
    assert processes.stopped_by_steward(worker.pid, worker.create_time)
    assert end.cause is None and end.log_tail == []


# ---------------------------------------------------------------- archiving across devices
def test_a_log_dir_on_its_own_mount_archives_beside_it(tmp_path, eval_log):
    with tmpfs(tmp_path / "logs", "4m") as logs:
        log = Path(shutil.copy(eval_log, logs))
        archive = tmp_path / "logs-archive"
        moved = move(str(log), str(archive))
        assert moved == str(archive / log.name) and not log.exists()
        assert Path(moved).read_bytes() == Path(eval_log).read_bytes()
        assert sorted(p.name for p in archive.iterdir()) == [log.name]  # no temporary left
        assert move(moved, str(logs)) == str(log) and log.exists()  # and back
