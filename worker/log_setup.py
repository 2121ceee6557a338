"""How the Steward worker's process logs: plain text lines, Temporal's own (Rust core) lines
among them.

Left alone, Temporal's core writes its warnings straight to stderr with ANSI colour codes,
whether or not stderr is a terminal, so the worker's log file (worker.log, or the service's)
fills with escape sequences. Forwarded to a Python logger instead, they take the same plain
format as every other line.
"""

from __future__ import annotations

import logging
from typing import TextIO

from temporalio.runtime import (
    LogForwardingConfig,
    LoggingConfig,
    Runtime,
    TelemetryConfig,
    TelemetryFilter,
)

from steward.worker.metrics import bind_failure, prometheus_config

CORE_LOGGER = "temporalio.core"
# Temporal's default: core warnings, other crates' errors only.
CORE_FILTER = TelemetryFilter(core_level="WARN", other_level="ERROR")


def configure_worker_logging(
    stream: TextIO | None = None,
    core_filter: TelemetryFilter = CORE_FILTER,
    metrics_port: int | None = None,
) -> None:
    """Plain log lines on `stream` (stderr by default), Temporal's core forwarded to them;
    with `metrics_port`, Prometheus metrics served on it (worker/metrics.py; MetricsError
    when the port cannot be listened on).

    Call it before the first Temporal client connects: clients stay on the runtime they were
    made with."""
    logging.basicConfig(
        level=logging.INFO,
        stream=stream,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    core_logging = LoggingConfig(
        filter=core_filter,
        forwarding=LogForwardingConfig(logger=logging.getLogger(CORE_LOGGER)),
    )
    metrics = None if metrics_port is None else prometheus_config(metrics_port)
    try:
        runtime = Runtime(telemetry=TelemetryConfig(logging=core_logging, metrics=metrics))
    except ValueError as err:  # the exporter could not listen
        if metrics_port is None:
            raise
        raise bind_failure(metrics_port, err) from err
    Runtime.set_default(runtime, error_if_already_set=False)
