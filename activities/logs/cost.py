"""Read a run's LLM usage out of its Inspect logs, per model (for `steward.workflows.policy.cost`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from steward.activities.logs.paths import local_path
from steward.workflows.policy.cost import ModelTokens

# log path -> ((mtime, size), usage): a tend of a big fleet re-reads only the logs that changed.
_usage_by_log: dict[str, tuple[tuple[float, int], dict[str, ModelTokens]]] = {}


def _tokens(usage: Any) -> ModelTokens:
    """An Inspect `ModelUsage` as `ModelTokens` (its optional counts None -> 0)."""
    return ModelTokens(
        input=usage.input_tokens or 0,
        output=usage.output_tokens or 0,
        cache_read=usage.input_tokens_cache_read or 0,
        cache_write=usage.input_tokens_cache_write or 0,
        reasoning=usage.reasoning_tokens or 0,
        total=usage.total_tokens or 0,
        usd=getattr(usage, "total_cost", None),
    )


def _copy(usage: dict[str, ModelTokens]) -> dict[str, ModelTokens]:
    return {model: tokens.model_copy() for model, tokens in usage.items()}


def _read(path: str) -> dict[str, ModelTokens]:
    from inspect_ai.log import read_eval_log, read_eval_log_sample_summaries

    header = read_eval_log(path, header_only=True)
    usage = header.stats.model_usage
    # Inspect writes `stats` only when the eval finishes: while it runs (or if it died before
    # finishing) the samples written so far carry their own usage.
    if header.status == "started" or not usage:
        found: dict[str, ModelTokens] = {}
        for summary in read_eval_log_sample_summaries(path):
            for model, sample_usage in summary.model_usage.items():
                tokens = _tokens(sample_usage)
                known = found.get(model)
                found[model] = tokens if known is None else known.plus(tokens)
        if found or not usage:
            return found
    return {model: _tokens(model_usage) for model, model_usage in usage.items()}


def log_usage(path: str) -> dict[str, ModelTokens]:
    """One Inspect log's LLM usage per model, with Inspect's own cost when it knew it.

    A finished log answers from its header (`stats.model_usage`); a log still being written
    from its samples written so far (their summaries' `model_usage`), so samples in flight are
    not counted yet. A missing log is {}; a log that cannot be read (being replaced) answers
    what it last did, or {}. Never raises.
    """
    path = local_path(path)
    try:
        stat = Path(path).stat()
    except OSError:
        _usage_by_log.pop(path, None)
        return {}
    stamp = (stat.st_mtime, stat.st_size)
    cached = _usage_by_log.get(path)
    if cached is not None and cached[0] == stamp:
        return _copy(cached[1])
    try:
        usage = _read(path)
    except Exception:  # not a log, or caught mid-write: try again when it changes
        return _copy(cached[1]) if cached is not None else {}
    _usage_by_log[path] = (stamp, usage)
    return _copy(usage)
