"""The approval files the `steward` approver writes and reads: requests in a directory, answered
by writing `<id>.answer.json` beside them (atomically, as `steward approve` does)."""

from __future__ import annotations

import json
import os
from pathlib import Path


def requests_in(directory: Path) -> list[Path]:
    """The pending and answered request files in `directory`, oldest name first."""
    if not directory.is_dir():
        return []
    return sorted(
        p
        for p in directory.glob("appr-*.json")
        if not p.name.endswith(".answer.json") and ".tmp" not in p.name
    )


def answer(directory: Path, request_id: str, decision: str, explanation: str | None = None):
    path = directory / f"{request_id}.answer.json"
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({"decision": decision, "explanation": explanation, "by": "tester"}))
    os.replace(tmp, path)
