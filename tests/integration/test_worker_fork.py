"""Task workers forked from the Steward worker's fork server (activities/processes/worker_fork.py): each
runs its tasks to a success log like a fresh process, in a session of its own and not as this
process's child (it outlives the Steward worker), its connection share reaches Inspect, and its
exit code and refusals read as a fresh process's would."""

from __future__ import annotations

import os
import time
from pathlib import Path

import psutil
import pytest
from inspect_ai.log import read_eval_log

from harness.helpers import write_definition
from steward.activities.definition.capture import capture_definition_sync
from steward.activities.processes import forkserver, processes
from steward.workflows.activity_io import SelectedTask, SpawnRequest
from steward.workflows.policy.provider_budget import WORKER_COOLDOWN_S, ConnectionShare


@pytest.fixture(scope="module")
def warm():
    forkserver.warm_up()
    assert forkserver.ready()


def _spawn(workspace: Path, worker_id: str, connections=None):
    capture = capture_definition_sync(str(workspace), "evalset.py")
    return processes.spawn_worker_sync(
        SpawnRequest(
            workspace=str(workspace),
            definition="evalset.py",
            worker_id=worker_id,
            eval_set_id="fork-test",
            log_dir=str(workspace / "logs"),
            max_samples=4,
            tasks=[
                SelectedTask(
                    identifier=t.identifier, registry_name=t.registry_name, args_hash=t.args_hash
                )
                for t in capture.tasks
            ],
            connections=connections,
        )
    )


def _wait_exit(worker, timeout: float = 120) -> int | None:
    deadline = time.monotonic() + timeout
    while processes.is_alive(worker.pid, worker.create_time):
        assert time.monotonic() < deadline, "the forked worker did not finish"
        time.sleep(0.2)
    return processes.exit_code_of(worker.pid)


def test_a_forked_worker_runs_its_tasks_detached_and_ends_like_a_fresh_one(warm, tmp_path):
    write_definition(tmp_path, {"alpha": 6, "beta": 4})
    (tmp_path / ".env").write_text("STEWARD_OFFLINE_DELAY=0.3\n")
    worker = _spawn(tmp_path, "w0001", ConnectionShare(start=3, ceiling=7))
    assert worker.pid in processes._forked  # noqa: SLF001 - forked, not started fresh
    process = psutil.Process(worker.pid)
    assert process.ppid() != os.getpid()  # the fork server's, not ours
    time.sleep(1.0)
    assert os.getsid(worker.pid) == worker.pid  # its own session, as start_new_session gave
    assert _wait_exit(worker) == 0
    logs = sorted((tmp_path / "logs").glob("*.eval"))
    assert len(logs) == 2
    for path in logs:
        log = read_eval_log(str(path))
        assert log.status == "success"
        # The selection's overrides reached Inspect: its share of the connection budget.
        adaptive = log.plan.config.adaptive_connections
        assert (adaptive.min, adaptive.start, adaptive.max) == (3, 3, 7)
        assert adaptive.cooldown_seconds == WORKER_COOLDOWN_S  # not Inspect's 15 s
    output = (tmp_path / ".steward" / "workers" / "w0001.log").read_text()
    assert "Traceback" not in output


def test_a_forked_workers_refusal_is_its_output_and_exit_code(warm, tmp_path):
    write_definition(tmp_path, {"alpha": 2})
    (tmp_path / ".env").write_text("THIS LINE HAS NO EQUALS SIGN\n")
    worker = _spawn_unchecked(tmp_path)
    assert _wait_exit(worker) == 1
    output = (tmp_path / ".steward" / "workers" / "w0002.log").read_text()
    assert "steward refused:" in output and ".env line 1" in output


def _spawn_unchecked(workspace: Path):
    """Spawn with a hand-written selection: the .env that is refused would refuse capture too."""
    return processes.spawn_worker_sync(
        SpawnRequest(
            workspace=str(workspace),
            definition="evalset.py",
            worker_id="w0002",
            eval_set_id="fork-test",
            log_dir=str(workspace / "logs"),
            max_samples=4,
            tasks=[SelectedTask(identifier="alpha-x")],
        )
    )


def _processes_in(directory: Path) -> list[psutil.Process]:
    """Live processes working in `directory` (a forked runner's /proc environ is its fork
    server's, so its cwd is what identifies it)."""
    found = []
    for process in psutil.process_iter(["pid"]):
        try:
            if process.cwd() == str(directory) and process.status() != psutil.STATUS_ZOMBIE:
                found.append(process)
        except (psutil.Error, OSError):
            continue
    return found


@pytest.fixture
def forks(monkeypatch):
    """The runner processes forked (not started fresh) during the test."""
    from steward.activities.processes import runner_process

    forked: list[int] = []

    def counting(*args, **kwargs):
        process = original(*args, **kwargs)
        forked.append(process.pid)
        return process

    original = runner_process.fork_worker
    monkeypatch.setattr(runner_process, "fork_worker", counting)
    return forked


def test_capture_and_smoke_run_forked_and_read_as_fresh_ones(warm, forks, tmp_path):
    from steward.activities.definition.smoke import describe, run_smoke

    write_definition(tmp_path, {"alpha": 6, "beta": 4})
    capture = capture_definition_sync(str(tmp_path), "evalset.py")
    assert [(t.name, t.samples) for t in capture.tasks] == [("alpha", 6), ("beta", 4)]
    result = run_smoke(str(tmp_path), "evalset.py", capture.tasks, limit=2)
    assert result.ok, describe(result)
    assert result.samples == 4
    assert len(forks) == 2  # the capture and the smoke, each forked


def test_a_forked_smoke_over_its_time_is_killed_with_its_group(warm, forks, tmp_path):
    from steward.activities.definition.smoke import describe, run_smoke

    write_definition(tmp_path, {"slow": 4})
    tasks = capture_definition_sync(str(tmp_path), "evalset.py").tasks
    (tmp_path / ".env").write_text("STEWARD_OFFLINE_DELAY=30\n")
    result = run_smoke(str(tmp_path), "evalset.py", tasks, limit=2, time_cap=4)
    assert [(c.task, c.check) for c in result.checks] == [("slow", "timeout")], describe(result)
    assert result.seconds < 20 and len(forks) == 2
    assert not _processes_in(tmp_path)


def test_a_forked_capture_of_a_broken_definition_says_why(warm, forks, tmp_path):
    from steward.activities.definition.capture import DefinitionError

    (tmp_path / "evalset.py").write_text("import no_such_module_here\n")
    with pytest.raises(DefinitionError) as failed:
        capture_definition_sync(str(tmp_path), "evalset.py")
    assert "No module named 'no_such_module_here'" in str(failed.value) and forks
