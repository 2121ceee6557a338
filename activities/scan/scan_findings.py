"""A scout scan's results as Steward's findings: every positive result (scout's own rule: not
False, None, 0, "", "none", [] or {}) as a plain finding dict,

    {"scanner", "log", "task", "sample_id", "epoch", "explanation", "value"}

with its value as plain JSON (scout keeps pandas cells, and text where a scanner's values mix
types).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any


def read_findings(scan_location: str, given_path: dict[str, str]) -> list[dict]:
    """The positive results of the scan at `scan_location`, each log named as it was given
    (`given_path`: resolved path -> the path the caller named)."""
    from inspect_scout import scan_results_df

    results = scan_results_df(scan_location)
    findings = []
    for scanner_name in results.scanners:
        for row in results.scanners[scanner_name].to_dict("records"):
            value = _json_value(row.get("value"), row.get("value_type"))
            if not _is_positive(value):
                continue
            source = str(row["transcript_source_uri"])
            findings.append(
                {
                    "scanner": scanner_name,
                    "log": given_path.get(str(Path(source).resolve()), source),
                    "task": str(row["transcript_task_set"]),
                    "sample_id": str(row["transcript_task_id"]),
                    "epoch": int(row["transcript_task_repeat"]),
                    "explanation": _plain(row.get("explanation")) or "",
                    "value": value,
                }
            )
    return findings


def _plain(value: Any) -> Any:
    """A pandas/numpy cell as a plain Python value (NaN as None)."""
    if hasattr(value, "item"):
        value = value.item()
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


def _json_value(value: Any, value_type: Any) -> Any:
    """A result's value as JSON: scout stores it as text when a scanner's values mix types."""
    value = _plain(value)
    if not isinstance(value, str):
        return value
    match value_type:
        case "boolean":
            return value.lower() == "true"
        case "number":
            number = float(value)
            return int(number) if number.is_integer() else number
        case "array" | "object" | "null":
            return json.loads(value)
        case _:
            return value


def _is_positive(value: Any) -> bool:
    """Whether a scanner flagged the sample: scout's own rule for counting a result."""
    if value is None or value is False or value == 0 or value == "":
        return False
    if isinstance(value, str) and value.lower() == "none":
        return False
    return not (isinstance(value, list | dict) and len(value) == 0)
