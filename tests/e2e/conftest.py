"""One embedded Temporal dev server and one Steward worker per test session, on free
ports and a private data directory, driven through the real `steward` CLI."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
from pathlib import Path

import psutil
import pytest

from harness.helpers import Steward, free_port


def _session_env(data_dir: Path) -> dict[str, str]:
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("STEWARD_", "INSPECT_EVAL_SET"))
    }
    env.update(
        STEWARD_DATA_DIR=str(data_dir),
        STEWARD_TEMPORAL_PORT=str(free_port()),
        STEWARD_TEMPORAL_UI_PORT=str(free_port()),
        PYTHONUNBUFFERED="1",
        # Launch smokes by default; tests that are about the smoke turn it back on.
        STEWARD_SMOKE="false",
        # Suggest continue-as-new early so every longer test run exercises it.
        STEWARD_TEMPORAL_DEV_ARGS="--dynamic-config-value limit.historyCount.suggestContinueAsNew=150",
    )
    return env


@pytest.fixture(scope="session")
def steward() -> Steward:
    data_dir = Path(tempfile.mkdtemp(prefix="steward-test-data-"))
    runner = Steward(_session_env(data_dir))
    runner.ok("server", "start")
    runner.ok("worker", "start")
    yield runner
    runner("worker", "stop")
    runner("server", "stop")
    _reap_leftovers(data_dir)
    if not os.environ.get("STEWARD_KEEP_TEST_DATA"):  # keep the worker's log to debug a failure
        shutil.rmtree(data_dir, ignore_errors=True)


def _reap_leftovers(data_dir: Path) -> None:
    """Kill any process this session left behind that still uses its data dir or workspaces."""
    me = os.getpid()
    for process in psutil.process_iter(["pid", "environ"]):
        try:
            if process.pid != me and (process.info["environ"] or {}).get("STEWARD_DATA_DIR") == str(
                data_dir
            ):
                os.kill(process.pid, signal.SIGKILL)
        except (psutil.Error, OSError):
            pass


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item, call):
    report = yield
    if report.when == "call":
        item.call_failed = report.failed
    return report


@pytest.fixture
def workspace_root(tmp_path: Path, request: pytest.FixtureRequest) -> Path:
    yield tmp_path
    # A test that failed half-way leaves its runs going on the session's server; cancel them so
    # their workers do not load the tests that come after it (a passing test ends its own).
    if getattr(request.node, "call_failed", False) and "steward" in request.fixturenames:
        runner: Steward = request.getfixturevalue("steward")
        for options in tmp_path.rglob("_steward.yaml"):
            try:
                runner("cancel", "--reason", "the test failed", cwd=options.parent, timeout=60)
            except subprocess.TimeoutExpired:
                pass


@pytest.fixture
def simulator(tmp_path):
    """The OpenAI-compatible provider simulator on loopback (model `openai-api/sim/<name>`)."""
    from steward.worker.provider_simulator import spawn

    process, url = spawn(
        tmp_path / "sim.port", concurrency=200, latency=1.0, jitter=0.1, retry_after=0.5
    )
    yield url
    process.kill()
    process.wait()
