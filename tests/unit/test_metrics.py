"""Steward's metric definitions, the worker's metrics endpoint options, and the Grafana
dashboard: valid Grafana JSON whose every query names a metric Steward exports (Steward's held
against workflows/metrics.py here; Temporal's against a real scrape in
tests/e2e/test_metrics_prometheus.py), and every Steward metric on a panel."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from steward.worker import service_units
from steward.worker.metrics import MetricsError, checked_port, port_from_env, prometheus_config
from steward.workflows import metrics as m

REPO = Path(__file__).resolve().parents[2]
DASHBOARD = REPO / "temporal-dev" / "grafana" / "steward-dashboard.json"
# Temporal's SDK series the dashboard reads, as a real worker exports them (the e2e scrapes one).
TEMPORAL_SERIES = {
    "temporal_activity_schedule_to_start_latency_bucket",
    "temporal_workflow_task_schedule_to_start_latency_bucket",
    "temporal_worker_task_slots_available",
    "temporal_worker_task_slots_used",
    "temporal_workflow_task_queue_poll_succeed",
    "temporal_activity_task_received",
    "temporal_num_pollers",
    "temporal_activity_execution_latency_bucket",
    "temporal_workflow_task_execution_latency_bucket",
    "temporal_request_failure",
    "temporal_sticky_cache_hit",
}
PROMQL_WORDS = {"sum", "by", "rate", "deriv", "histogram_quantile", "max", "le", "without"}


@pytest.fixture(scope="module")
def dashboard() -> dict:
    return json.loads(DASHBOARD.read_text())


def _queries(dashboard: dict) -> list[str]:
    return [t["expr"] for p in dashboard["panels"] for t in p.get("targets", [])]


def _series(expr: str) -> set[str]:
    """The metric names a PromQL expression reads (identifiers before `{`, `[` or `)`...)."""
    text = re.sub(r'"[^"]*"', '""', expr)  # label values
    text = re.sub(r"\{[^}]*\}", "{}", text)  # label matchers
    text = re.sub(r"\bby \([^)]*\)", "", text)  # grouping labels
    names = set(re.findall(r"\b[a-z_][a-z0-9_]*\b", text)) - PROMQL_WORDS
    return {n for n in names if not re.fullmatch(r"\d+[smhd]", n)}


def test_the_dashboard_is_grafana_json_with_its_schema_fields(dashboard):
    for field in ("title", "uid", "schemaVersion", "panels", "templating", "time", "version"):
        assert field in dashboard, field
    assert isinstance(dashboard["schemaVersion"], int) and dashboard["schemaVersion"] >= 36
    assert re.fullmatch(r"[a-zA-Z0-9_-]{1,40}", dashboard["uid"])
    ids = [p["id"] for p in dashboard["panels"]]
    assert len(ids) == len(set(ids)), "panel ids repeat"
    variables = {v["name"] for v in dashboard["templating"]["list"]}
    assert {"datasource", "run"} <= variables
    for panel in dashboard["panels"]:
        grid = panel["gridPos"]
        assert {"h", "w", "x", "y"} <= set(grid) and grid["x"] + grid["w"] <= 24, panel["title"]
        assert panel["type"] in {"row", "timeseries", "stat", "bargauge", "table", "gauge"}
        if panel["type"] == "row":
            continue
        assert panel["title"] and panel["datasource"]["type"] == "prometheus"
        assert panel["datasource"]["uid"] == "${datasource}"  # the dashboard's variable
        refs = [t["refId"] for t in panel["targets"]]
        assert refs and len(refs) == len(set(refs)), panel["title"]
        for target in panel["targets"]:
            assert target["expr"].count("(") == target["expr"].count(")"), target["expr"]


def test_every_query_names_a_metric_steward_exports(dashboard):
    steward = {name for metric in m.METRICS for name in m.exported_names(metric)}
    read = set().union(*(_series(expr) for expr in _queries(dashboard)))
    unknown = read - steward - TEMPORAL_SERIES
    assert not unknown, f"the dashboard reads series nothing exports: {sorted(unknown)}"
    assert TEMPORAL_SERIES <= read  # the list above is the dashboard's own, no more
    assert "temporal_activity_schedule_to_start_latency_bucket" in read
    (run,) = [v for v in dashboard["templating"]["list"] if v["name"] == "run"]
    assert _series(run["definition"]) - {"label_values", "run"} <= steward


def test_every_steward_metric_is_on_a_panel(dashboard):
    read = set().union(*(_series(expr) for expr in _queries(dashboard)))
    missing = [x.name for x in m.METRICS if not set(m.exported_names(x)) & read]
    assert not missing, f"no panel shows {missing}"


def test_the_series_reader_sees_names_not_labels_or_functions():
    expr = (
        "histogram_quantile(0.95, sum by (le, run) (rate(steward_tend_duration_seconds_bucket"
        '{run=~"$run"}[15m])))'
    )
    assert _series(expr) == {"steward_tend_duration_seconds_bucket"}
    assert _series('sum by (kind) (steward_decisions_open{run=~"a|b"}) > 0') == {
        "steward_decisions_open"
    }


def test_metric_definitions_are_valid_prometheus_and_distinct():
    names = [x.name for x in m.METRICS]
    assert len(names) == len(set(names))
    for metric in m.METRICS:
        assert re.fullmatch(r"steward_[a-z0-9_]+", metric.name), metric.name
        assert metric.help.endswith(".") and metric.help[0].isupper(), metric.name
        assert metric.name.endswith("_total") == (metric.kind == "counter"), metric.name
        assert metric.kind == "histogram" or not metric.buckets, metric.name
        if metric.kind == "histogram":
            assert metric.unit == "s" and metric.name.endswith("_seconds"), metric.name
            assert list(metric.buckets) == sorted(metric.buckets) and metric.buckets
        assert all(re.fullmatch(r"[a-z_]+", label) for label in metric.labels)


def test_recording_with_labels_other_than_the_metrics_own_is_refused():
    with pytest.raises(ValueError, match="steward_setpoint takes the labels"):
        m.record(m.SETPOINT, 5, run="r")  # no task: refused before any meter is asked


def test_the_exporter_listens_on_loopback_with_stewards_buckets():
    config = prometheus_config(9464)
    assert config.bind_address == "127.0.0.1:9464"
    assert config.histogram_bucket_overrides["steward_pump_latency_seconds"] == list(
        m.PUMP_LATENCY.buckets
    )


def test_the_port_comes_from_the_environment_and_a_bad_one_is_named():
    assert port_from_env({}) is None and port_from_env({"STEWARD_METRICS_PORT": " "}) is None
    assert port_from_env({"STEWARD_METRICS_PORT": "9100"}) == 9100
    with pytest.raises(MetricsError, match=r"STEWARD_METRICS_PORT is 'nine'.*1 to 65535"):
        port_from_env({"STEWARD_METRICS_PORT": "nine"})
    with pytest.raises(MetricsError, match="--metrics-port is '70000'"):
        checked_port("70000", "--metrics-port")


def _worker(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "steward.worker.temporal_worker", "--address", "127.0.0.1:1", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )


def test_a_worker_whose_metrics_port_is_taken_says_so_and_exits(tmp_path):
    import socket

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        done = _worker("--metrics-port", str(port))
    assert done.returncode != 0
    assert "Traceback" not in done.stderr
    assert f"cannot serve metrics on 127.0.0.1:{port}" in done.stderr
    assert "Address already in use" in done.stderr and "STEWARD_METRICS_PORT" in done.stderr


def test_a_worker_given_a_bad_port_in_the_environment_names_the_variable(tmp_path):
    import os

    done = _worker(env={**os.environ, "STEWARD_METRICS_PORT": "abc"})
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert "STEWARD_METRICS_PORT is 'abc', which is not a port" in done.stderr


def test_service_units_serve_metrics_on_the_default_port_or_the_one_set(tmp_path, monkeypatch):
    monkeypatch.delenv("STEWARD_METRICS_PORT", raising=False)
    unit = service_units.systemd_unit("worker", "/usr/bin/python3", tmp_path)
    assert f'Environment="STEWARD_METRICS_PORT={service_units.SERVICE_METRICS_PORT}"' in unit
    monkeypatch.setenv("STEWARD_METRICS_PORT", "9200")
    unit = service_units.systemd_unit("worker", "/usr/bin/python3", tmp_path)
    assert 'Environment="STEWARD_METRICS_PORT=9200"' in unit


def test_every_budget_a_run_holds_is_read_in_its_unit():
    from steward.workflows.contracts import RunState
    from steward.workflows.policy.provider_budget import ProviderBudget
    from steward.workflows.policy.rate_limits import RateLimitBudget
    from steward.workflows.run.eval_run_metrics import budget_readings

    state = RunState(
        providers={"openai": ProviderBudget(endpoint="openai", limit=40)},
        rate_limits=[
            RateLimitBudget(
                endpoint="http://sim:1/echo",
                unit="requests/min",
                value=2400,
                limits={"requests": 2400, "tokens": 90000},
            )
        ],
    )
    assert budget_readings(state) == [
        ("openai", "connections", 40.0),
        ("http://sim:1/echo", "requests/min", 2400.0),
        ("http://sim:1/echo", "tokens/min", 90000.0),
    ]


def test_two_tasks_of_one_name_get_labels_of_their_own():
    from steward.workflows.contracts import RunState, TaskState
    from steward.workflows.contracts.tasks import TaskSpec
    from steward.workflows.run.eval_run_metrics import task_labels

    def task(name: str, identifier: str) -> TaskState:
        spec = TaskSpec.model_construct(name=name, identifier=identifier)
        return TaskState.model_construct(spec=spec)

    state = RunState.model_construct(tasks=[task("a", "1"), task("b", "2"), task("a", "3")])
    assert task_labels(state) == {"1": "a#1", "2": "b", "3": "a#2"}
