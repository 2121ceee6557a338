"""How much Steward lets one Temporal payload carry, and the sentences that refuse more. Pure.

Temporal refuses a payload over 2 MB (the server's `limit.blobSize.error`; it warns from
512 KB) and a gRPC message over 4 MB. A refused payload is not a clear error where it
happens: an activity result over the limit is retried forever, an update times out, a start
fails with a raw gRPC message. So Steward refuses earlier, in words:

* an option value over 256 KB, or options over 1 MB together: each option travels in the
  run's input (beside the definition's capture) and in every tend's re-read of the options,
  so one long value must leave room for everything else;
* anything the CLI sends (a run's input, an update, a signal) or an activity returns over
  1.5 MB: the rest of the 2 MB is the headroom for the payload's envelope and the other
  arguments of the same call.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

KB = 1024
MB = 1024 * KB
TEMPORAL_PAYLOAD_LIMIT = 2 * MB
"""Temporal's own limit on one payload (`limit.blobSize.error`, its default)."""
OPTION_VALUE_LIMIT = 256 * KB
"""The most one option's value may take, encoded."""
OPTIONS_TOTAL_LIMIT = 1 * MB
"""The most all options may take together, encoded."""
PAYLOAD_BUDGET = 3 * MB // 2
"""The most Steward sends (CLI) or returns (activities) in one payload."""
PAYLOAD_TOO_LARGE = "PayloadTooLarge"
"""The type of the ApplicationError an activity fails with when its result is over the budget
(worker/payload_guard.py); the run recognises it (eval_run_tend.py)."""

# How to make each long option short, where there is more to say than "shorten it".
_OPTION_HINTS = {
    "policies": "put long policies in a file the agent reads and name the file",
    "preauthorized": "fewer, broader patterns",
    "prices": "patterns such as openai/* rather than one entry per model",
    "scanners": "fewer scanners",
    "hosts": "`any`, or fewer hosts",
}
# The same for the fields of what the CLI sends.
_FIELD_HINTS = {
    "capture": "fewer tasks per workspace: split the eval set across workspaces",
    "tasks": "fewer tasks per workspace: split the eval set across workspaces",
    "reason": "a short reason that names a file holding the rest",
    "note": "a short note that names a file holding the rest",
}


def format_size(size: int) -> str:
    """2411724 -> "2.3 MB" (to a tenth, as people write sizes)."""
    for unit, scale in (("MB", MB), ("KB", KB)):
        if size >= scale:
            return f"{round(size / scale, 1):g} {unit}"
    return f"{size} bytes"


def format_over(size: int, limit: int) -> str:
    """A size over `limit`, never reading as the limit or under it (then in bytes)."""
    shown = format_size(size)
    number, unit = shown.split()
    scale = {"MB": MB, "KB": KB}.get(unit, 1)
    return shown if float(number) * scale > limit else f"{size:,} bytes"


def encoded_size(value: Any) -> int:
    """Bytes of `value` as Temporal's JSON payload converter writes it (UTF-8, no spaces)."""
    return len(json.dumps(value, separators=(",", ":"), ensure_ascii=False, default=str).encode())


@dataclass(frozen=True)
class Oversize:
    """What does not fit: one option (`name`), or all of them together (`name` None)."""

    name: str | None
    size: int
    limit: int
    largest: str = ""


def oversize_option(values: Mapping[str, Any]) -> Oversize | None:
    """The first option value (as JSON: `model_dump(mode="json")`) over its limit, else all of
    them together over theirs, else None."""
    sizes = {name: encoded_size(value) for name, value in values.items() if value is not None}
    for name, size in sizes.items():
        if size > OPTION_VALUE_LIMIT:
            return Oversize(name, size, OPTION_VALUE_LIMIT)
    total = sum(sizes.values())
    if total > OPTIONS_TOTAL_LIMIT:
        largest = max(sizes, key=lambda name: sizes[name])
        return Oversize(None, total, OPTIONS_TOTAL_LIMIT, largest)
    return None


_THROUGH_TEMPORAL = (
    "Steward passes options through Temporal, whose payloads stop at "
    f"{format_size(TEMPORAL_PAYLOAD_LIMIT)}"
)


def oversize_option_sentence(oversize: Oversize, where: str) -> str:
    """The refusal: `where` says where the option was set ("in /w/_steward.yaml"; for all
    options together, where they were read)."""
    if oversize.name is None:
        return (
            f"The options {where} come to {format_over(oversize.size, oversize.limit)} together; "
            f"{_THROUGH_TEMPORAL}: keep them under {format_size(oversize.limit)} together "
            f"(the largest is '{oversize.largest}')."
        )
    hint = _OPTION_HINTS.get(oversize.name, "shorten it")
    return (
        f"Option '{oversize.name}' {where} is {format_over(oversize.size, oversize.limit)}; "
        f"{_THROUGH_TEMPORAL}: keep it under {format_size(oversize.limit)} ({hint})."
    )


def largest_field(value: Any) -> tuple[str, int] | None:
    """The largest top-level field of a mapping (a model as JSON) and its size."""
    if not isinstance(value, Mapping) or not value:
        return None
    sizes = {str(name): encoded_size(field) for name, field in value.items()}
    name = max(sizes, key=lambda key: sizes[key])
    return name, sizes[name]


def oversize_send_sentence(what: str, size: int, field: tuple[str, int] | None) -> str:
    """The refusal of something the CLI would send (`what`: "The `rule` request")."""
    named = f" (its '{field[0]}' is {format_size(field[1])})" if field else ""
    hint = _FIELD_HINTS.get(field[0], "make it smaller") if field else "make it smaller"
    return (
        f"{what} is {format_over(size, PAYLOAD_BUDGET)}{named}; Steward sends it through Temporal, whose "
        f"payloads stop at {format_size(TEMPORAL_PAYLOAD_LIMIT)}: keep it under "
        f"{format_size(PAYLOAD_BUDGET)} ({hint})."
    )


def oversize_result_sentence(activity: str, size: int, limit: int = PAYLOAD_BUDGET) -> str:
    """Why an activity's result was refused (by the worker's payload guard)."""
    return (
        f"the activity {activity} returned {format_over(size, limit)}, more than the "
        f"{format_size(limit)} Steward lets one Temporal payload carry (Temporal stops at "
        f"{format_size(TEMPORAL_PAYLOAD_LIMIT)}); shrink what made it grow (a long option, a "
        "large definition) and it is tried again at the next tend"
    )
