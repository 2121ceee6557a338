"""One embedded Temporal dev server and one Steward worker per test session, on free
ports and a private data directory, driven through the real `steward` CLI."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from harness.helpers import Steward, reap_leftovers, session_env


def _session_env(data_dir: Path) -> dict[str, str]:
    # Suggest continue-as-new early so every longer test run exercises it.
    return session_env(
        data_dir,
        STEWARD_TEMPORAL_DEV_ARGS="--dynamic-config-value limit.historyCount.suggestContinueAsNew=150",
    )


@pytest.fixture(scope="session")
def steward() -> Steward:
    data_dir = Path(tempfile.mkdtemp(prefix="steward-test-data-"))
    runner = Steward(_session_env(data_dir))
    runner.ok("server", "start")
    runner.ok("worker", "start")
    yield runner
    runner("worker", "stop")
    runner("server", "stop")
    reap_leftovers(data_dir)
    if not os.environ.get("STEWARD_KEEP_TEST_DATA"):  # keep the worker's log to debug a failure
        shutil.rmtree(data_dir, ignore_errors=True)


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
