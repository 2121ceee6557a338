"""What makes anomalies one class, pure: a stable signature (exception type and deepest
meaningful frame, never line numbers or message text), the class's id and title, and which
errors are a worker's own end rather than the sample failing."""

from __future__ import annotations

import hashlib
import re

from steward.workflows.policy.triage_model import Anomaly

# ---------------------------------------------------------------- signatures
_FRAME = re.compile(r'File "(?P<path>[^"]+)", line \d+, in (?P<func>\S+)')
# Plumbing between the code that failed and the code that reported it: never "meaningful".
_PLUMBING = ("/asyncio/", "/anyio/", "/tenacity/", "/concurrent/", "/sniffio/", "/exceptiongroup/")


def _is_stdlib(path: str) -> bool:
    return "/lib/python3" in path and "-packages/" not in path


def frame_label(path: str) -> str:
    """A frame's file without the machine: after site-packages, else its last two parts."""
    if "-packages/" in path:
        return path.split("-packages/", 1)[1]
    return "/".join(path.replace("\\", "/").split("/")[-2:])


def deepest_frame(traceback: str) -> str | None:
    frames = [
        (m["path"], m["func"])
        for m in _FRAME.finditer(traceback)
        if not _is_stdlib(m["path"]) and not any(p in m["path"] for p in _PLUMBING)
    ]
    if not frames:
        return None
    path, func = frames[-1]
    return f"{frame_label(path)}:{func}"


def error_type_of(traceback: str, message: str) -> str:
    """The exception's class name (without its module) from the traceback's last line."""
    for text in (traceback, message):
        lines = [ln.strip(" |+-") for ln in text.strip().splitlines() if ln.strip(" |+-")]
        if lines:
            head = lines[-1].split(":", 1)[0].strip()
            if re.fullmatch(r"[\w.]+", head):
                return head.rsplit(".", 1)[-1]
    return "Error"


# What a sample's error says when the sample did not fail but its worker stopped under it: the
# process was killed, interrupted or cancelled, and Inspect's recovery of the crashed log wrote
# the sample in flight as cancelled. A resumed task runs it again.
INTERRUPTIONS = ("CancelledError", "KeyboardInterrupt", "SystemExit")
_RECOVERY_NOTES = ("recovered from crashed eval", "terminated by operator during recovery")


def is_interruption(error_type: str, message: str, traceback: str = "") -> bool:
    """Whether a sample's error is its worker's own end rather than the sample failing."""
    text = f"{message}\n{traceback}"
    return error_type in INTERRUPTIONS or any(note in text for note in _RECOVERY_NOTES)


def signature_of(anomaly: Anomaly) -> str:
    """The stable grouping key: what went wrong and where, never line numbers or free text."""
    match anomaly.kind:
        case "sample_error" | "rerun_failed":
            return f"{anomaly.kind}:{anomaly.error_type or 'Error'}@{anomaly.frame or '?'}"
        case "scan_finding":
            return f"scan_finding:{anomaly.scanner}"
        case "stuck_sample":
            return f"stuck_sample:{anomaly.tool or 'model'}"
        case "all_zero" | "stalled_task":
            return f"{anomaly.kind}:{anomaly.task}"
        case "approval":
            return f"approval:{anomaly.uuid}"
        case "cost_cap":
            return "cost_cap"
        case "hung_worker":
            return f"hung_worker:{anomaly.task}"
        case "provider_stuck":  # one outage, one question, whichever tasks it stops
            return f"provider_stuck:{anomaly.model or anomaly.task}"
    raise ValueError(anomaly.kind)


def class_id_of(signature: str) -> str:
    return "c-" + hashlib.sha1(signature.encode()).hexdigest()[:8]


def title_of(anomaly: Anomaly) -> str:
    match anomaly.kind:
        case "sample_error":
            return f"{anomaly.error_type} in {anomaly.frame or 'unknown frame'}"
        case "rerun_failed":
            return f"re-run failed again: {anomaly.error_type} in {anomaly.frame or '?'}"
        case "scan_finding":
            return f"scan `{anomaly.scanner}` flagged transcripts"
        case "stuck_sample":
            return f"samples stuck in {anomaly.tool or 'a model call'}"
        case "all_zero":
            return f"{anomaly.task_name}: every sample scored zero"
        case "stalled_task" if anomaly.cause:
            return f"{anomaly.task_name}: its workers die with {anomaly.cause}"
        case "stalled_task":
            return f"{anomaly.task_name}: given up after repeated worker deaths"
        case "approval":
            return f"{anomaly.task_name} sample {anomaly.sample_id} asks to run `{anomaly.tool}`"
        case "cost_cap":
            return f"the run is paused: {anomaly.detail}"
        case "hung_worker":
            return f"{anomaly.task_name}: {anomaly.detail}"
        case "provider_stuck":
            return f"the provider of {anomaly.model or anomaly.task_name} stopped answering"
    raise ValueError(anomaly.kind)
