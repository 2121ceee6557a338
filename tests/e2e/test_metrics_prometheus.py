"""A real Prometheus scrapes a real Steward worker's metrics port (every second) while a run
goes, and its own query API shows the series moving as the run does: samples completed rise,
tends are counted, cost accrues; Temporal's SDK metrics (schedule-to-start) come beside them.

Needs Debian's `prometheus` package (.ci/run installs it where it is root and apt answers);
without it the module skips and says so. The module has its own server and worker: the
session's worker serves no metrics.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import tempfile
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

from harness.helpers import (
    Steward,
    free_port,
    make_workspace,
    own_services,
    wait_for,
)

PROMETHEUS = shutil.which("prometheus")
pytestmark = pytest.mark.skipif(
    PROMETHEUS is None,
    reason="Prometheus is not installed: `apt-get install --no-install-recommends prometheus` "
    "(Debian's package; .ci/run installs it as root) to run the metrics e2e",
)
DASHBOARD = (
    Path(__file__).resolve().parents[2] / "temporal-dev" / "grafana" / "steward-dashboard.json"
)


@pytest.fixture(scope="module")
def metrics_port() -> int:
    return free_port()


@pytest.fixture(scope="module")
def steward(metrics_port: int) -> Steward:
    """This module's own Temporal server and a Steward worker serving metrics."""
    port = {"STEWARD_METRICS_PORT": str(metrics_port)}
    with own_services("steward-test-metrics-", lambda _: port) as runner:
        yield runner


@pytest.fixture(scope="module")
def prometheus(metrics_port: int, steward: Steward):
    """Prometheus scraping the worker every second, its storage in a temp dir; its URL."""
    home = Path(tempfile.mkdtemp(prefix="steward-test-prometheus-"))
    config = home / "prometheus.yml"
    config.write_text(
        "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
        "scrape_configs:\n  - job_name: steward\n    static_configs:\n"
        f"      - targets: ['127.0.0.1:{metrics_port}']\n"
    )
    port = free_port()
    log = open(home / "prometheus.log", "w")
    process = subprocess.Popen(
        [
            PROMETHEUS,
            f"--config.file={config}",
            f"--storage.tsdb.path={home / 'data'}",
            f"--web.listen-address=127.0.0.1:{port}",
            "--log.level=warn",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for(
            lambda: process.poll() is not None or _ready(url),
            timeout=60,
            what="Prometheus to be ready",
        )
        if process.poll() is not None:
            raise AssertionError(f"prometheus exited {process.returncode}: {_tail(home)}")
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()
        shutil.rmtree(home, ignore_errors=True)


def _ready(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/-/ready", timeout=2) as answer:
            return answer.status == 200
    except OSError:
        return False


def _tail(home: Path) -> str:
    return (home / "prometheus.log").read_text()[-2000:]


def query(url: str, expr: str) -> float | None:
    """One instant query through Prometheus's HTTP API: its single value (None: no series)."""
    address = f"{url}/api/v1/query?" + urllib.parse.urlencode({"query": expr})
    with urllib.request.urlopen(address, timeout=10) as answer:
        body = json.load(answer)
    assert body["status"] == "success", body
    result = body["data"]["result"]
    assert len(result) <= 1, f"{expr} gave {len(result)} series; the test asks for one"
    return float(result[0]["value"][1]) if result else None


def test_prometheus_sees_the_series_move_as_the_run_does(
    steward, prometheus, metrics_port, workspace_root
):
    hold = workspace_root / "hold"  # while it exists, every generate waits
    hold.touch()
    workspace = make_workspace(
        steward,
        workspace_root,
        {"alpha": 6, "beta": 4},
        options="prices:\n  steward/*:\n    input: 2.0\n    output: 8.0\n",
        dotenv=f"STEWARD_OFFLINE_DELAY=0.2\nSTEWARD_OFFLINE_HOLD={hold}\n",
        tend_interval="2s",
    )
    run = steward.ok("launch", cwd=workspace)["workflow_id"]
    where = f'run="{run}"'
    wait_for(  # the worker's endpoint answers Prometheus's scrapes
        lambda: query(prometheus, 'up{job="steward"}') == 1,
        timeout=60,
        what="Prometheus to scrape the worker",
        describe=lambda: query(prometheus, 'up{job="steward"}'),
    )

    # Held: the run tends and Prometheus counts it, but nothing completes.
    tends_held = wait_for(
        lambda: query(prometheus, f"sum(steward_tends_total{{{where}}})"),
        timeout=120,
        what="Prometheus to see the run's tends",
    )
    wait_for(
        lambda: (query(prometheus, f"sum(steward_samples_in_flight{{{where}}})") or 0) > 0,
        timeout=120,
        what="samples in flight while held",
    )
    assert query(prometheus, f"sum(steward_samples_completed{{{where}}})") == 0
    assert query(prometheus, f"sum(steward_samples_planned{{{where}}})") == 10
    assert query(prometheus, f'steward_run_phase{{{where},phase="running"}}') == 1

    hold.unlink()
    steward.wait_phase(workspace, {"finished"})
    wait_for(
        lambda: query(prometheus, f"sum(steward_samples_completed{{{where}}})") == 10,
        timeout=60,
        what="Prometheus to see all ten samples completed",
        describe=lambda: query(prometheus, f"sum(steward_samples_completed{{{where}}})"),
    )
    assert query(prometheus, f"sum(steward_tends_total{{{where}}})") > tends_held
    assert query(prometheus, f"sum(steward_samples_in_flight{{{where}}})") == 0
    assert query(prometheus, f'steward_run_phase{{{where},phase="finished"}}') == 1
    assert query(prometheus, f"steward_cost_usd{{{where}}}") > 0  # priced: the cost accrued
    assert query(prometheus, f"sum(steward_tend_duration_seconds_count{{{where}}})") > 0
    # Temporal's own SDK metrics come through the same endpoint.
    assert query(prometheus, "sum(temporal_activity_schedule_to_start_latency_count)") > 0
    # The host registry sets it as the host's presence comes in (every few seconds).
    wait_for(
        lambda: query(prometheus, "max(steward_hosts_live)") == 1,
        timeout=60,
        what="Prometheus to see the one live host",
        describe=lambda: query(prometheus, "max(steward_hosts_live)"),
    )

    # The dashboard reads only series a real worker exports (Steward's are held against
    # workflows/metrics.py in tests/unit/test_metrics.py; Temporal's are checked here).
    with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=10) as page:
        scraped = {line.split("{")[0].split(" ")[0] for line in page.read().decode().splitlines()}
    exprs = [
        t["expr"] for p in json.loads(DASHBOARD.read_text())["panels"] for t in p.get("targets", [])
    ]
    temporal = {name for expr in exprs for name in re.findall(r"\btemporal_[a-z_]+", expr)}
    assert temporal and temporal <= scraped, sorted(temporal - scraped)
    steward("cancel", "--reason", "the test is done", cwd=workspace)


def test_prometheus_counts_the_rate_limit_retries_a_run_meets(steward, prometheus, workspace_root):
    workspace = make_workspace(
        steward,
        workspace_root,
        {"limited": 60},
        eval_set_args=", max_samples=4",
        dotenv="STEWARD_OFFLINE_DELAY=0.5\nSTEWARD_OFFLINE_RATE_LIMIT=0.3\n",
        tend_interval="2s",
    )
    run = steward.ok("launch", cwd=workspace)["workflow_id"]
    where = f'run="{run}",task="limited"'
    steward.wait_phase(workspace, {"finished"})
    retries = wait_for(
        lambda: query(prometheus, f"steward_rate_limit_retries_total{{{where}}}"),
        timeout=60,
        what="Prometheus to count the run's rate-limit retries",
    )
    assert retries > 0
    assert query(prometheus, f'steward_provider_budget{{run="{run}",unit="connections"}}') > 0
    steward("cancel", "--reason", "the test is done", cwd=workspace)


def test_prometheus_reads_an_endpoints_rate_limit_in_its_unit(
    steward, prometheus, workspace_root, tmp_path
):
    from steward.worker.provider_simulator import spawn

    simulator, url = spawn(
        tmp_path / "sim.port", rpm=300, headers="openai", latency=0.2, jitter=0.05, concurrency=0
    )
    try:
        workspace = make_workspace(
            steward,
            workspace_root,
            {"paced": 60},
            model="openai-api/sim/echo",
            dotenv=f"SIM_API_KEY=test\nSIM_BASE_URL={url}/v1\n",
            tend_interval="2s",
        )
        run = steward.ok("launch", cwd=workspace)["workflow_id"]
        steward.wait_phase(workspace, {"finished"})
    finally:
        simulator.kill()
        simulator.wait()
    stated = f'steward_provider_budget{{run="{run}",unit="requests/min"}}'
    assert wait_for(lambda: query(prometheus, stated), timeout=60, what=stated) == 300
    assert query(prometheus, f'steward_provider_budget{{run="{run}",unit="connections"}}') > 0
    assert query(prometheus, f'sum(steward_provider_429s{{run="{run}"}})') is not None
    steward("cancel", "--reason", "the test is done", cwd=workspace)


def _boxed(steward: Steward, root: Path, name: str, hold: Path) -> Path:
    """A run whose pinned footprint is the whole Docker bound (local sandboxes counted
    against it: no Docker engine needed), its samples held while `hold` exists."""
    return make_workspace(
        steward,
        root / name,
        {f"boxed_{name}": 8},
        options="capacity_backend: docker\nmax_concurrent_sandboxes: 4\n",
        sandbox={f"boxed_{name}": "local"},
        eval_set_args=", max_samples=4",
        dotenv=f"STEWARD_OFFLINE_HOLD={hold}\n",
    )


def test_prometheus_sees_the_capacity_queue_fill_and_the_pump_empty_it(
    steward, prometheus, workspace_root
):
    holds = {name: workspace_root / f"hold-{name}" for name in "ab"}
    for hold in holds.values():
        hold.touch()
    first = _boxed(steward, workspace_root, "a", holds["a"])
    second = _boxed(steward, workspace_root, "b", holds["b"])
    assert steward.ok("launch", cwd=first)["state"]["phase"] == "running"
    assert steward.ok("launch", cwd=second)["state"]["phase"] == "queued"
    queued = "sum(steward_queue_length)"
    wait_for(lambda: query(prometheus, queued) == 1, timeout=60, what="one run queued")
    pumped_before = query(prometheus, "sum(steward_pump_latency_seconds_count)") or 0

    holds["a"].unlink()  # the first finishes and gives its capacity back: the pump admits b
    steward.wait_phase(first, {"finished"})
    wait_for(lambda: steward.state(second)["phase"] == "running", timeout=120, what="b pumped")
    wait_for(lambda: query(prometheus, queued) == 0, timeout=60, what="the queue empty")
    wait_for(
        lambda: (query(prometheus, "sum(steward_pump_latency_seconds_count)") or 0) > pumped_before,
        timeout=60,
        what="the pump's latency observed",
    )
    assert query(prometheus, "sum(steward_queue_wait_seconds_count)") >= 1
    assert query(prometheus, "sum(steward_capacity_reservations)") == 1  # b holds it now
    holds["b"].unlink()
    for workspace in (first, second):
        steward("cancel", "--reason", "the test is done", cwd=workspace)
