"""Steward's own Prometheus metrics: every name, kind, help line and label set, in one place.

The worker serves them beside Temporal's SDK metrics when `metrics_port` is set
(worker/metrics.py). They are recorded from workflow code through `workflow.metric_meter()`,
which records nothing while a workflow replays, so emitting them adds no history event and
changes no command: a run tends exactly as it would without them.

Where they come from: a run sets its gauges and counts its tend once per tend, at the tend's
publish step (workflows/run/eval_run_metrics.py); the capacity ledger sets its queue's length and
times its pump; the host registry counts the hosts it hears from. Labels stay bounded: `run` is
the run's workflow id, `task` a task's name within its run, `kind`/`phase`/`unit` come from
closed lists; Temporal's meter adds `namespace`, `task_queue` and `workflow_type`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from temporalio import workflow
from temporalio.common import MetricMeter

Kind = Literal["counter", "gauge", "histogram"]


@dataclass(frozen=True)
class Metric:
    name: str
    kind: Kind
    help: str
    labels: tuple[str, ...] = ()
    unit: str | None = None
    real: bool = False  # a float value (gauges, histograms); else whole numbers
    buckets: tuple[float, ...] = ()  # a histogram's bucket bounds (the worker applies them)


RUN, TASK = ("run",), ("run", "task")

SAMPLES_COMPLETED = Metric(
    "steward_samples_completed", "gauge", "Samples finished without error.", TASK
)
SAMPLES_ERRORED = Metric(
    "steward_samples_errored", "gauge", "Samples finished with an error.", TASK
)
SAMPLES_IN_FLIGHT = Metric(
    "steward_samples_in_flight", "gauge", "Samples running now (as the last tend saw).", TASK
)
SAMPLES_PLANNED = Metric(
    "steward_samples_planned", "gauge", "Samples planned (samples x epochs).", TASK
)
SETPOINT = Metric(
    "steward_setpoint", "gauge", "The task's samples-at-once setpoint (max_samples).", TASK
)
RATE_LIMIT_RETRIES = Metric(
    "steward_rate_limit_retries_total",
    "counter",
    "Rate-limit retries (429s) the task's workers reported, counted per tend window.",
    TASK,
)
PROVIDER_BUDGET = Metric(
    "steward_provider_budget",
    "gauge",
    "What the run's workers against a provider endpoint may use, in its unit: connections "
    "held together, or the requests or tokens per minute the endpoint states.",
    ("run", "endpoint", "unit"),
    real=True,
)
PROVIDER_PUSHBACK = Metric(
    "steward_provider_pushback_windows",
    "gauge",
    "Tend windows in which the endpoint pushed back (rate limits), over the run.",
    ("run", "endpoint"),
)
PROVIDER_429S = Metric(
    "steward_provider_429s",
    "gauge",
    "Rate-limit answers (429s) from an endpoint that states its limits, so far.",
    ("run", "endpoint"),
)
TENDS = Metric("steward_tends_total", "counter", "Tends that ran to their end.", RUN)
TEND_DURATION = Metric(
    "steward_tend_duration_seconds",
    "histogram",
    "How long a tend took, from its start to its publish step (workflow time).",
    RUN,
    unit="s",
    real=True,
    buckets=(0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 120, 300, 600),
)
DECISIONS_OPEN = Metric(
    "steward_decisions_open", "gauge", "Decisions waiting for an answer, by kind.", ("run", "kind")
)
COST_USD = Metric(
    "steward_cost_usd",
    "gauge",
    "The run's LLM cost so far in US dollars (priced models).",
    RUN,
    real=True,
)
CAPACITY_GI_MINUTES = Metric(
    "steward_capacity_gi_minutes",
    "gauge",
    "Reserved sandbox capacity-time so far, in GiB-minutes.",
    RUN,
    real=True,
)
WORKERS = Metric("steward_workers", "gauge", "Task worker processes the run holds now.", RUN)
RUN_PHASE = Metric(
    "steward_run_phase",
    "gauge",
    "The run's phase: 1 for the current one, 0 for the others.",
    ("run", "phase"),
)
QUEUE_LENGTH = Metric(
    "steward_queue_length", "gauge", "Runs waiting for capacity in a domain's queue.", ("domain",)
)
RESERVATIONS = Metric(
    "steward_capacity_reservations", "gauge", "Runs holding capacity in a domain.", ("domain",)
)
QUEUE_WAIT = Metric(
    "steward_queue_wait_seconds",
    "histogram",
    "How long a run the pump admitted waited in its queue.",
    ("domain",),
    unit="s",
    real=True,
    buckets=(1, 5, 15, 60, 300, 900, 3600, 4 * 3600, 12 * 3600),
)
PUMP_LATENCY = Metric(
    "steward_pump_latency_seconds",
    "histogram",
    "From the ledger taking a release to the admitted run being signalled.",
    ("domain",),
    unit="s",
    real=True,
    buckets=(0.01, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10),
)
HOSTS_LIVE = Metric(
    "steward_hosts_live", "gauge", "Hosts whose Steward worker was heard from lately."
)
HOSTS_KNOWN = Metric("steward_hosts_known", "gauge", "Hosts the registry knows (live or silent).")

METRICS: tuple[Metric, ...] = (
    SAMPLES_COMPLETED,
    SAMPLES_ERRORED,
    SAMPLES_IN_FLIGHT,
    SAMPLES_PLANNED,
    SETPOINT,
    RATE_LIMIT_RETRIES,
    PROVIDER_BUDGET,
    PROVIDER_PUSHBACK,
    PROVIDER_429S,
    TENDS,
    TEND_DURATION,
    DECISIONS_OPEN,
    COST_USD,
    CAPACITY_GI_MINUTES,
    WORKERS,
    RUN_PHASE,
    QUEUE_LENGTH,
    RESERVATIONS,
    QUEUE_WAIT,
    PUMP_LATENCY,
    HOSTS_LIVE,
    HOSTS_KNOWN,
)


def exported_names(metric: Metric) -> list[str]:
    """The series names Prometheus sees for it (a histogram's _bucket, _sum and _count)."""
    if metric.kind == "histogram":
        return [f"{metric.name}_{part}" for part in ("bucket", "sum", "count")]
    return [metric.name]


def record(metric: Metric, value: float, **labels: str) -> None:
    """Set a gauge, add to a counter or observe a histogram, from workflow code (not recorded
    during replay). The labels must be the metric's own, all of them."""
    if set(labels) != set(metric.labels):
        raise ValueError(f"{metric.name} takes the labels {metric.labels}, not {tuple(labels)}")
    instrument = _instrument(workflow.metric_meter(), metric)
    attributes = {k: str(v) for k, v in labels.items()}
    if metric.kind == "counter":
        instrument.add(int(value), attributes)
    elif metric.kind == "gauge":
        instrument.set(float(value) if metric.real else int(value), attributes)
    else:
        instrument.record(float(value) if metric.real else int(value), attributes)


def _instrument(meter: MetricMeter, metric: Metric) -> Any:
    make = {
        ("counter", False): meter.create_counter,
        ("counter", True): meter.create_counter,
        ("gauge", False): meter.create_gauge,
        ("gauge", True): meter.create_gauge_float,
        ("histogram", False): meter.create_histogram,
        ("histogram", True): meter.create_histogram_float,
    }[(metric.kind, metric.real)]
    return make(metric.name, metric.help, metric.unit)
