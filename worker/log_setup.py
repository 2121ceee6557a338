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

CORE_LOGGER = "temporalio.core"
# Temporal's default: core warnings, other crates' errors only.
CORE_FILTER = TelemetryFilter(core_level="WARN", other_level="ERROR")


def configure_worker_logging(
    stream: TextIO | None = None, core_filter: TelemetryFilter = CORE_FILTER
) -> None:
    """Plain log lines on `stream` (stderr by default), Temporal's core forwarded to them.

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
    Runtime.set_default(
        Runtime(telemetry=TelemetryConfig(logging=core_logging)), error_if_already_set=False
    )
