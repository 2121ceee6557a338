"""The worker's Prometheus endpoint: `metrics_port` (STEWARD_METRICS_PORT) set, the worker's
Temporal runtime serves http://127.0.0.1:PORT/metrics, with Temporal's own SDK metrics
(`temporal_*`: schedule-to-start, slots, polls, workflow and activity outcomes) and Steward's
(`steward_*`, defined in workflows/metrics.py). Off unless set.

The runtime is made once per process, before the first client connects (clients stay on the
runtime they were made with): worker/log_setup.py makes it with the config made here.
"""

from __future__ import annotations

import os

from temporalio.runtime import PrometheusConfig

from steward.workflows.metrics import METRICS

ENV = "STEWARD_METRICS_PORT"
HOST = "127.0.0.1"  # loopback only: a scraper on another machine goes through its own agent


class MetricsError(Exception):
    """The metrics endpoint cannot be served as configured; the message says why and the fix."""


def port_from_env(environ: os._Environ | dict[str, str] | None = None) -> int | None:
    """STEWARD_METRICS_PORT as a port number (None: unset or empty, so no endpoint)."""
    text = (environ if environ is not None else os.environ).get(ENV, "").strip()
    if not text:
        return None
    return checked_port(text, ENV)


def checked_port(value: object, where: str) -> int:
    try:
        port = int(str(value))
    except ValueError:
        port = 0
    if not 1 <= port <= 65535:
        raise MetricsError(
            f"{where} is {value!r}, which is not a port; set it to a number from 1 to 65535 "
            "(or leave it unset for no metrics endpoint)."
        )
    return port


def prometheus_config(port: int) -> PrometheusConfig:
    """Temporal's Prometheus exporter on loopback, with Steward's histogram buckets."""
    return PrometheusConfig(
        bind_address=f"{HOST}:{port}",
        histogram_bucket_overrides={m.name: list(m.buckets) for m in METRICS if m.buckets},
    )


def endpoint(port: int) -> str:
    return f"http://{HOST}:{port}/metrics"


def bind_failure(port: int, err: Exception) -> MetricsError:
    """The exporter could not listen (a port in use, most often), in one sentence."""
    said = str(err).removeprefix("Failed starting Prometheus exporter: ")
    return MetricsError(
        f"The worker cannot serve metrics on {HOST}:{port} ({said}); free the port or set "
        f"metrics_port ({ENV}) to another."
    )
