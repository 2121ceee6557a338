"""Steward's options (the seed's Options tables) as a pure pydantic model.

Loading them from `_steward.yaml`, `STEWARD_*` and `.env` is a side effect and lives
in `activities/options.py`; this module only says what a valid option is.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, field_validator

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


Duration = Annotated[float, BeforeValidator(_duration)]
DurationOrFalse = Annotated[float | Literal[False], BeforeValidator(_duration_or_false)]
SamplesRamp = Annotated[tuple[int, int] | Literal[False], BeforeValidator(_ramp)]


class StewardOptions(BaseModel):
    """Every option a workspace can set; defaults are the seed's."""

    model_config = ConfigDict(extra="forbid", frozen=True, validate_default=True)

    # Logs
    log_root: str | None = None
    log_store: str | None = None
    sync: str | None = None  # None means: the run's log dir
    # Supervision
    tend_interval: Duration = "10m"  # type: ignore[assignment]
    notification: str | list[str] | None = None
    heartbeat: DurationOrFalse = "1h"  # type: ignore[assignment]
    # Concurrency
    samples_ramp: SamplesRamp = [50, 200]  # type: ignore[assignment]
    max_workers: int | None = Field(default=None, ge=1)
    # Errors
    stall_after: int = Field(default=2, ge=0)
    stuck_after: Duration = "5h"  # type: ignore[assignment]
    # Standing rules
    preauthorized: Annotated[dict[str, RulingVerb] | None, BeforeValidator(_from_text)] = None
    stuck_cancel: Annotated[bool | list[str] | None, BeforeValidator(_from_text)] = None
    policies: str | list[str] | None = None
    # Scanning
    scan_model: Annotated[
        str | Literal[False] | None,
        BeforeValidator(lambda v: False if str(v).lower() == "false" else v),
    ] = None
    scanners: Annotated[list[str] | None, BeforeValidator(_from_text)] = None
    # Temporal (where the runs live): unset address = the embedded dev server
    temporal_address: str | None = None
    temporal_namespace: str = "default"
    temporal_tls_cert: str | None = None
    temporal_tls_key: str | None = None
    temporal_api_key: str | None = None
    temporal_port: int = Field(default=7233, ge=1, le=65535)
    temporal_ui_port: int = Field(default=8233, ge=1, le=65535)

    @field_validator("tend_interval")
    @classmethod
    def _tend_floor(cls, value: float) -> float:
        # Temporal's timers do not fire faster than about a second.
        if value < 1:
            raise ValueError("a duration of at least 1s, such as 10m")
        return value


# What `steward init` writes into _steward.yaml: (section, option, yaml default, description).
OPTION_DOCS: list[tuple[str, str, str, str]] = [
    (
        "Logs",
        "log_root",
        "null",
        "Root for this machine's logs (a path or an fsspec URL such as s3://...).",
    ),
    (
        "Logs",
        "log_store",
        "null",
        "Logs to reuse rather than run: a directory of .eval files or a Flow store.",
    ),
    (
        "Logs",
        "sync",
        "null",
        "Where the workspace's files are mirrored on each tend (null: the log dir).",
    ),
    ("Supervision", "tend_interval", "10m", "How often a scheduled tend runs, with a unit."),
    ("Supervision", "notification", "null", "Apprise URL(s) or an Apprise config file."),
    (
        "Supervision",
        "heartbeat",
        "1h",
        "How often a liveness heartbeat posts while a run progresses; false for none.",
    ),
    (
        "Concurrency",
        "samples_ramp",
        "[50, 200]",
        "Range to discover sample concurrency in; false for no automatic ramp.",
    ),
    (
        "Concurrency",
        "max_workers",
        "null",
        "Pack the run into this many worker processes (null: one per task).",
    ),
    ("Errors", "stall_after", "2", "Fruitless respawns before a task is given up on and reported."),
    ("Errors", "stuck_after", "5h", "Report a sample with no activity for this long."),
    (
        "Standing rules",
        "preauthorized",
        "null",
        "Anomaly-class patterns mapped to rerun, exclude, zero or score.",
    ),
    (
        "Standing rules",
        "stuck_cancel",
        "null",
        "Stuck tool calls the agent may cancel unasked: true, or a list of tool names.",
    ),
    ("Standing rules", "policies", "null", "Rules an agent applies, as prose or a list."),
    (
        "Scanning",
        "scan_model",
        "null",
        "The model scanners use (null: the eval model; false ignores SCOUT_SCAN_MODEL).",
    ),
    ("Scanning", "scanners", "null", "Scanners run in addition to the definition's."),
    (
        "Temporal",
        "temporal_address",
        "null",
        "host:port of a Temporal cluster; null runs the embedded dev server.",
    ),
    ("Temporal", "temporal_namespace", "default", "Temporal namespace of the runs."),
    ("Temporal", "temporal_tls_cert", "null", "TLS client certificate file for temporal_address."),
    ("Temporal", "temporal_tls_key", "null", "TLS client key file for temporal_address."),
    (
        "Temporal",
        "temporal_api_key",
        "null",
        "API key for temporal_address (better kept in .env than here).",
    ),
    ("Temporal", "temporal_port", "7233", "Port of the embedded dev server (127.0.0.1)."),
    (
        "Temporal",
        "temporal_ui_port",
        "8233",
        "Port of the embedded dev server's web UI (127.0.0.1).",
    ),
]
