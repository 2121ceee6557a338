"""Steward's options (the seed's Options tables) as a pure pydantic model.

Loading them from `_steward.yaml`, `STEWARD_*` and `.env` is a side effect and lives
in `activities/workspace/options.py`; this module only says what a valid option is.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationInfo,
    field_validator,
)

from steward.workflows.activity_io import LiveOptions
from steward.workflows.contracts import RunSettings, WatchLimits
from steward.workflows.policy.cost import CostCap, Price
from steward.workflows.policy.decisions import StandingRules

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)\s*$")
_UNIT_SECONDS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400}
RulingVerb = Literal["rerun", "exclude", "zero", "score"]


def parse_duration(value: Any) -> float:
    """`10m` -> 600.0. A bare number is refused: a duration needs its unit."""
    if isinstance(value, str):
        match = _DURATION.match(value)
        if match:
            return float(match.group(1)) * _UNIT_SECONDS[match.group(2)]
    raise ValueError("a duration with a unit, such as 30s, 10m, 1h or 2d")


def format_duration(seconds: float) -> str:
    for unit in ("d", "h", "m", "s"):
        size = _UNIT_SECONDS[unit]
        if seconds >= size and seconds % size == 0:
            return f"{int(seconds // size)}{unit}"
    return f"{seconds:g}s"


def _duration(value: Any) -> float:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        raise ValueError("a duration with a unit, such as 30s, 10m, 1h or 2d")
    return parse_duration(value)


def _duration_or_false(value: Any) -> float | Literal[False]:
    if value is False or (isinstance(value, str) and value.strip().lower() == "false"):
        return False
    return _duration(value)


def _ramp(value: Any) -> tuple[int, int] | Literal[False]:
    if value is False or (isinstance(value, str) and value.strip().lower() == "false"):
        return False
    if isinstance(value, str):  # from the environment: "[40, 300]" or "40,300"
        value = [part for part in re.split(r"[\s,\[\]]+", value) if part]
    if isinstance(value, (list, tuple)) and len(value) == 2:
        try:
            low, high = (int(part) for part in value)
        except (TypeError, ValueError):
            pass
        else:
            if 1 <= low <= high:
                return (low, high)
    raise ValueError("false or a range [low, high] of whole numbers with 1 <= low <= high")


def _from_text(value: Any) -> Any:
    """Lists and mappings set in the environment arrive as text: JSON, or a comma list."""
    if isinstance(value, str):
        text = value.strip()
        if text[:1] in "[{":
            import json

            try:
                return json.loads(text)
            except ValueError:
                return value
        if text.lower() in ("true", "false"):
            return text.lower() == "true"
        if "," in text:
            return [part.strip() for part in text.split(",") if part.strip()]
    return value


def _false_or_value(value: Any) -> Any:
    return False if str(value).lower() == "false" else value


Duration = Annotated[float, BeforeValidator(_duration)]
DurationOrFalse = Annotated[float | Literal[False], BeforeValidator(_duration_or_false)]
SamplesRamp = Annotated[tuple[int, int] | Literal[False], BeforeValidator(_ramp)]


def _option(default: Any, section: str, description: str, **constraints: Any) -> Any:
    """A field with its section and description, which `steward init` writes out."""
    return Field(
        default, description=description, json_schema_extra={"section": section}, **constraints
    )


class StewardOptions(BaseModel):
    """Every option a workspace can set; defaults are the seed's."""

    model_config = ConfigDict(extra="forbid", frozen=True, validate_default=True)

    log_root: str | None = _option(
        None, "Logs", "Root for this machine's logs (a path or an fsspec URL such as s3://...)."
    )
    log_store: str | None = _option(
        None,
        "Logs",
        "Logs to reuse rather than run: a directory of .eval files, or a Flow store "
        "(flow:PATH, flow:auto, or a directory holding one).",
    )
    sync: str | None = _option(
        None, "Logs", "Where the workspace's files are mirrored on each tend (null: the log dir)."
    )
    smoke: bool = _option(
        True,
        "Execution",
        "Launch starts with a smoke run (2 samples per task, 5 minute cap); "
        "`--no-smoke` skips it once.",
    )
    capture_timeout: Duration = _option(
        "5m",
        "Execution",
        "How long resolving the definition (`tasks`, `launch`) may take before it is stopped "
        "and reported with where it was; it builds every task and dataset (a first download).",
    )
    tend_interval: Duration = _option(
        "10m", "Supervision", "How often a scheduled tend runs, with a unit."
    )
    route_after: Duration | None = _option(
        None,
        "Supervision",
        "An agent's open decision goes to the operator when no agent ran `steward collect` "
        "within this long of it being raised (or of the last collect); null: 2 x tend_interval.",
    )
    notification: str | list[str] | None = _option(
        None, "Supervision", "Apprise URL(s) or an Apprise config file."
    )
    heartbeat: DurationOrFalse = _option(
        "1h",
        "Supervision",
        "How often a liveness heartbeat posts while a run progresses; false for none.",
    )
    samples_ramp: SamplesRamp = _option(
        [50, 200],
        "Concurrency",
        "Range to discover sample concurrency in; false for no automatic ramp.",
    )
    max_workers: int | None = _option(
        None,
        "Concurrency",
        "Pack the run into this many worker processes (null: one per task).",
        ge=1,
    )
    max_concurrent_sandboxes: int | None = _option(
        None,
        "Capacity",
        "Sandbox containers this Docker host may run at once (null: SANDBOX_MAX_CONCURRENT, "
        "else Inspect's default, 2 x the host's CPUs; 0: unbounded). Read at every admission: "
        "a change applies to the next.",
        ge=0,
    )
    capacity_backend: Literal["auto", "docker", "kubernetes", "none"] = _option(
        "auto",
        "Capacity",
        "Where sandboxed tasks are counted: auto (docker sandboxes against this Docker host, "
        "k8s against the namespace's ResourceQuota, others unbounded), docker, kubernetes, none.",
    )
    kubernetes_namespace: str | None = _option(
        None,
        "Capacity",
        "The namespace whose ResourceQuota bounds k8s sandboxes (null: kubeconfig's).",
    )
    stall_after: int = _option(
        2, "Errors", "Fruitless respawns before a task is given up on and reported.", ge=0
    )
    stuck_after: Duration = _option(
        "5h", "Errors", "Report a sample with no activity for this long."
    )
    start_timeout: Duration = _option(
        "10m",
        "Errors",
        "Ask the operator about a worker with neither log nor control socket this long after "
        "its start.",
    )
    unresponsive_after: Duration = _option(
        "5m",
        "Errors",
        "Ask the operator about a live worker whose control socket (and log) stayed silent "
        "this long.",
    )
    linger_after: Duration = _option(
        "60s",
        "Errors",
        "Stop a worker still alive this long after its tasks' logs are complete.",
    )
    provider_stuck_after: DurationOrFalse = _option(
        "3m",
        "Errors",
        "Ask the operator when a task's provider answers none of its requests (Inspect only "
        "retries: 429, 5xx, refused connections) for this long; false: never.",
    )
    preauthorized: Annotated[dict[str, RulingVerb] | None, BeforeValidator(_from_text)] = _option(
        None, "Standing rules", "Anomaly-class patterns mapped to rerun, exclude, zero or score."
    )
    stuck_cancel: Annotated[bool | list[str] | None, BeforeValidator(_from_text)] = _option(
        None,
        "Standing rules",
        "Stuck tool calls the agent may cancel unasked: true, or a list of tool names.",
    )
    policies: str | list[str] | None = _option(
        None, "Standing rules", "Rules an agent applies, as prose or a list."
    )
    scan_model: Annotated[str | Literal[False] | None, BeforeValidator(_false_or_value)] = _option(
        None,
        "Scanning",
        "The model scanners use (null: the eval model; false ignores SCOUT_SCAN_MODEL).",
    )
    scanners: Annotated[list[str] | None, BeforeValidator(_from_text)] = _option(
        None, "Scanning", "Scanners run in addition to the definition's."
    )
    prices: Annotated[dict[str, Price] | None, BeforeValidator(_from_text)] = _option(
        None,
        "Cost",
        "USD per million tokens by model (or pattern, e.g. openai/*): "
        "{input, output, cache_read, cache_write}; Inspect's own cost data is used otherwise.",
    )
    cost_cap: Annotated[CostCap | None, BeforeValidator(_from_text)] = _option(
        None,
        "Cost",
        "Pause the run and ask the operator once its LLM cost crosses {usd: ..., tokens: ...}.",
    )
    shared_storage: bool = _option(
        False,
        "Hosts",
        "The workspace and its logs are at the same path on every host (an NFS mount, say): "
        "lets `hosts` place task workers on other hosts.",
    )
    hosts: Annotated[list[str] | Literal["any"] | None, BeforeValidator(_from_text)] = _option(
        None,
        "Hosts",
        "Hosts (STEWARD_HOST_ID of their `steward worker`) the run's task workers may run on: "
        "a list, or any (null: the workspace's host only). Needs shared storage.",
    )
    host_timeout: Duration = _option(
        "2m",
        "Hosts",
        "A host whose Steward worker is silent this long is lost: its tasks move to the others.",
    )
    temporal_address: str | None = _option(
        None, "Temporal", "host:port of a Temporal cluster; null runs the embedded dev server."
    )
    temporal_namespace: str = _option("default", "Temporal", "Temporal namespace of the runs.")
    temporal_tls_cert: str | None = _option(
        None, "Temporal", "TLS client certificate file for temporal_address."
    )
    temporal_tls_key: str | None = _option(
        None, "Temporal", "TLS client key file for temporal_address."
    )
    temporal_api_key: str | None = _option(
        None, "Temporal", "API key for temporal_address (better kept in .env than here)."
    )
    temporal_port: int = _option(
        7233, "Temporal", "Port of the embedded dev server (127.0.0.1).", ge=1, le=65535
    )
    temporal_ui_port: int = _option(
        8233, "Temporal", "Port of the embedded dev server's web UI (127.0.0.1).", ge=1, le=65535
    )
    metrics_port: int | None = _option(
        None,
        "Temporal",
        "Port (127.0.0.1) where the Steward worker serves Prometheus metrics, Temporal's and "
        "Steward's; null: none (`steward service install` units use 9464 unless set).",
        ge=1,
        le=65535,
    )

    @field_validator("hosts")
    @classmethod
    def _hosts_need_shared_storage(cls, value: Any, info: ValidationInfo) -> Any:
        if value is None:
            return value
        if isinstance(value, list) and not all(isinstance(h, str) and h for h in value):
            raise ValueError("a list of host ids, or any")
        shared = info.data.get("shared_storage") or "://" in (info.data.get("log_root") or "")
        if not shared:
            raise ValueError(
                "storage every host reaches before task workers go to other hosts: set "
                "shared_storage: true (the workspace at the same path on every host) or a "
                "log_root URL such as s3://bucket/logs"
            )
        return value

    @field_validator("cost_cap")
    @classmethod
    def _cap_above_zero(cls, value: CostCap | None) -> CostCap | None:
        # A cap at or below zero is crossed before anything is spent: the run would start and
        # pause at once.
        if value is None:
            return value
        for field, example in (("usd", "{usd: 5}"), ("tokens", "{tokens: 1000000}")):
            amount = getattr(value, field)
            if amount is not None and amount <= 0:
                raise ValueError(
                    f"cost_cap.{field} above 0 (such as {example}), not {amount:g}; "
                    "leave cost_cap out for no cap"
                )
        return value

    @field_validator("tend_interval")
    @classmethod
    def _tend_floor(cls, value: float) -> float:
        # Temporal's timers do not fire faster than about a second.
        if value < 1:
            raise ValueError("a duration of at least 1s, such as 10m")
        return value

    @field_validator("route_after")
    @classmethod
    def _route_floor(cls, value: float | None) -> float | None:
        # The run's timer does not fire sooner than about a second.
        if value is not None and value < 1:
            raise ValueError("a duration of at least 1s, such as 20m (or null: 2 x tend_interval)")
        return value

    @field_validator("capture_timeout")
    @classmethod
    def _capture_floor(cls, value: float) -> float:
        # Starting Python and importing Inspect alone takes seconds.
        if value < 1:
            raise ValueError("a duration of at least 1s, such as 5m")
        return value


def option_sections() -> list[tuple[str, str, Any, str]]:
    """(section, option, default as written, description) for every option, in order."""
    rows = []
    for name, field in StewardOptions.model_fields.items():
        extra = field.json_schema_extra if isinstance(field.json_schema_extra, dict) else {}
        rows.append(
            (str(extra.get("section", "Other")), name, field.default, field.description or "")
        )
    return rows


def standing_rules(options: StewardOptions) -> StandingRules:
    """The standing decision rules an options set names (policies always as a list)."""
    policies = options.policies
    return StandingRules(
        preauthorized=dict(options.preauthorized or {}),
        stuck_cancel=options.stuck_cancel or False,
        policies=[policies] if isinstance(policies, str) else list(policies or []),
    )


def run_settings(options: StewardOptions) -> RunSettings:
    """What a run carries of the workspace's options (fixed at launch; see `live_options`)."""
    return RunSettings(
        tend_interval=options.tend_interval,
        stall_after=options.stall_after,
        max_workers=options.max_workers,
        samples_ramp=options.samples_ramp,
        stuck_after=options.stuck_after,
        heartbeat=options.heartbeat,
        watch=watch_limits(options),
        rules=standing_rules(options),
        scan_model=options.scan_model,
        scanners=options.scanners or [],
        capacity_backend=options.capacity_backend,
        kubernetes_namespace=options.kubernetes_namespace,
        prices=options.prices or {},
        cost_cap=options.cost_cap,
        hosts=options.hosts,
        host_timeout=options.host_timeout,
        route_after=options.route_after,
    )


def live_options(options: StewardOptions, definition_hash: str | None) -> LiveOptions:
    """The options a live run re-reads each tend, so edits to _steward.yaml apply mid-run."""
    return LiveOptions(
        samples_ramp=options.samples_ramp,
        rules=standing_rules(options),
        heartbeat=options.heartbeat,
        stuck_after=options.stuck_after,
        prices=options.prices or {},
        cost_cap=options.cost_cap,
        definition_hash=definition_hash,
        tend_interval=options.tend_interval,
        watch=watch_limits(options),
        route_after=options.route_after,
    )


def watch_limits(options: StewardOptions) -> WatchLimits:
    return WatchLimits(
        start_timeout=options.start_timeout,
        unresponsive_after=options.unresponsive_after,
        linger_after=options.linger_after,
        provider_stuck_after=options.provider_stuck_after,
    )
