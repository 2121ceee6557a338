"""The provider probe (activities/processes/provider_probe.py) against the OpenAI-compatible
simulator through Inspect's real openai-api provider, under the workspace's .env: no answer
during an outage (with what the request met), an answer once it is over; in a fresh process
and forked from a warm fork server alike."""

from __future__ import annotations

import httpx
import pytest

from steward.activities.processes import forkserver, runner_process
from steward.activities.processes.provider_probe import probe_providers_sync
from steward.worker.provider_simulator import spawn
from steward.workflows.activity_io import ProbeRequest

MODEL = "openai-api/sim/echo"


@pytest.fixture
def outage(tmp_path):
    process, url = spawn(tmp_path / "sim.port", latency=0.05, jitter=0.0, fail_status=503)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / ".env").write_text(f"SIM_BASE_URL={url}/v1\nSIM_API_KEY=test-key\n")
    yield url, str(workspace)
    process.kill()
    process.wait()


def probe_and_recover(url: str, workspace: str) -> None:
    request = ProbeRequest(workspace=workspace, models=[MODEL, "steward/offline"], timeout=10)
    down = probe_providers_sync(request)
    assert not down.answered
    assert list(down.problems) == [MODEL]  # the offline model answered
    assert "503" in down.problems[MODEL] and "simulated outage" in down.problems[MODEL]
    assert down.endpoints[MODEL] == f"openai-api/sim {url}/v1"
    assert httpx.get(f"{url}/admin/stats").json()["served"] == 0

    httpx.post(f"{url}/admin/config", json={"fail_status": 0})
    up = probe_providers_sync(request)
    assert up.answered and up.problems == {}
    assert httpx.get(f"{url}/admin/stats").json()["served"] == 1  # one cheap request


def test_a_fresh_probe_process_sees_the_outage_and_its_end(outage, monkeypatch):
    monkeypatch.setenv(runner_process.FORK_ENV, "0")
    probe_and_recover(*outage)


def test_a_forked_probe_sees_the_outage_and_its_end(outage):
    forkserver.warm_up()
    assert runner_process.forking()
    probe_and_recover(*outage)
