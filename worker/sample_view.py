"""One sample of a run as `steward show` prints it: its error (message and the traceback's tail),
its scores and the tail of its transcript, read from its task's newest log that holds it.

    python -m steward.worker.sample_view REQUEST_JSON

REQUEST_JSON: {"log_dir", "identifier", "task", "sample_id", "epoch" (null: the lowest),
"messages" (how many of the last messages)}. It prints one JSON document and exits 0, or 2 with
{"problem": one sentence} when the task has no log or no log of it holds the sample (the
sentence lists what exists).

The CLI never imports Inspect (the layer rule, and ~1.4 s of import for every command); it runs
this module in a process of its own, where Inspect reads the `.eval` zip, instead of asking the
Steward worker through a workflow: a look at one sample needs nothing the worker holds, and
leaves nothing in the run's history.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from steward.activities.logs.log_listing import LogInfo, logs_by_identifier

TEXT_LIMIT = 600  # characters of each message's text
ARGUMENTS_LIMIT = 200  # characters of a tool call's arguments
MESSAGE_LIMIT = 2_000  # characters of the error's message
TRACEBACK_LINES = 15  # the traceback's last lines
IDS_LISTED = 20  # sample ids named when the one asked for is not there


class Refused(Exception):
    """The sample cannot be shown: one sentence saying what exists."""


def _cut(text: str | None, limit: int) -> str:
    text = text or ""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _ids_text(summaries: list[Any]) -> str:
    ids = sorted({str(s.id) for s in summaries}, key=lambda i: (not i.isdigit(), len(i), i))
    shown = ", ".join(ids[:IDS_LISTED])
    more = f" and {len(ids) - IDS_LISTED} more" if len(ids) > IDS_LISTED else ""
    return f"{shown}{more}" if ids else "none yet"


def _find(logs: list[LogInfo], sample_id: str, epoch: int | None, task: str) -> tuple:
    """(log, its summaries, the summary asked for), searching the newest log first."""
    from inspect_ai.log import read_eval_log_sample_summaries

    newest_summaries: list[Any] | None = None
    for info in reversed(logs):
        try:
            summaries = list(read_eval_log_sample_summaries(info.path))
        except Exception:  # being written or replaced: an older log may hold it
            continue
        if newest_summaries is None:
            newest_summaries = summaries
        matches = [s for s in summaries if str(s.id) == sample_id]
        if epoch is not None:
            matches = [s for s in matches if s.epoch == epoch]
        if matches:
            return info, summaries, min(matches, key=lambda s: s.epoch)
    which = f"sample {sample_id}" + (f" (epoch {epoch})" if epoch is not None else "")
    raise Refused(
        f"No {which} in {task}'s logs; its newest log holds sample ids "
        f"{_ids_text(newest_summaries or [])}."
    )


def _message(message: Any, limit: int) -> dict[str, Any]:
    view: dict[str, Any] = {"role": message.role, "text": _cut(message.text, limit)}
    calls = getattr(message, "tool_calls", None) or []
    if calls:
        view["tool_calls"] = [
            {"function": c.function, "arguments": _cut(json.dumps(c.arguments), ARGUMENTS_LIMIT)}
            for c in calls
        ]
    if message.role == "tool":
        view["function"] = getattr(message, "function", None)
        error = getattr(message, "error", None)
        if error is not None:
            view["error"] = _cut(getattr(error, "message", str(error)), limit)
    return view


def _score(score: Any) -> dict[str, Any]:
    value = score.value
    return {
        "value": value if isinstance(value, str | int | float | bool | type(None)) else str(value),
        "answer": _cut(score.answer, TEXT_LIMIT) if score.answer else None,
        "explanation": _cut(score.explanation, TEXT_LIMIT) if score.explanation else None,
    }


def sample_view(request: dict[str, Any]) -> dict[str, Any]:
    """The document `steward show --json` prints (its keys are stable), or Refused."""
    from inspect_ai.log import read_eval_log_sample

    task = request["task"]
    logs = logs_by_identifier(request["log_dir"], fresh_status=True).get(request["identifier"], [])
    if not logs:
        raise Refused(f"{task} has no log yet (it has not started); try again once it runs.")
    epoch = request.get("epoch")
    info, summaries, summary = _find(logs, str(request["sample_id"]), epoch, task)
    sample = read_eval_log_sample(info.path, uuid=summary.uuid, exclude_fields={"events"})
    error = sample.error
    messages = list(sample.messages or [])
    wanted = max(0, int(request.get("messages", 6)))
    return {
        "ok": True,
        "task": task,
        "identifier": request["identifier"],
        "sample_id": str(sample.id),
        "epoch": sample.epoch,
        "epochs": sorted({s.epoch for s in summaries if str(s.id) == str(sample.id)}),
        "uuid": sample.uuid,
        "log": info.path,
        "log_status": info.status,
        "newest_log": info.path == logs[-1].path,
        "status": "error" if error is not None else "ok",
        "error": (
            {
                "message": _cut(error.message, MESSAGE_LIMIT),
                "traceback_tail": (error.traceback or "").rstrip().splitlines()[-TRACEBACK_LINES:],
            }
            if error is not None
            else None
        ),
        "retries": len(sample.error_retries or []),
        "scores": {name: _score(score) for name, score in (sample.scores or {}).items()},
        "messages_total": len(messages),
        "transcript_tail": [_message(m, TEXT_LIMIT) for m in messages[-wanted:]] if wanted else [],
    }


def main(argv: list[str]) -> int:
    request = json.loads(argv[0])
    try:
        document = sample_view(request)
    except Refused as refusal:
        sys.stdout.write(json.dumps({"ok": False, "problem": str(refusal)}) + "\n")
        return 2
    sys.stdout.write(json.dumps(document, default=str) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
