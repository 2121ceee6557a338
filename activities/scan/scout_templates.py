"""Compile each of scout's prompt templates once per scan process, not once per transcript.

inspect_scout's LLM scanner renders its prompt with a fresh Jinja environment and compiles the
template source on every call (`_llm_scanner._render_template`, and `answer._render_template`
for the answer's format): measured here, a third of a scan's CPU, and a scan is CPU-bound on
this kind of host (one process served ~13 transcripts/s against a provider serving 40). The
same functions with the compiled template cached by its source render the same bytes: same
environment options, and a compiled Jinja template renders any number of times.

Applied in the scan's own process only; a scout whose private functions moved is left as is.
"""

from __future__ import annotations

import functools
from typing import Any

import structlog

log = structlog.get_logger("steward.scan")


def cache_compiled_templates() -> bool:
    """Install the cached renderers; whether they could be."""
    try:
        from inspect_scout._llm_scanner import _llm_scanner, answer
        from inspect_scout._util.jinja import StrictOnUseUndefined
        from jinja2 import Environment, Template
    except ImportError:
        return False
    if not (
        callable(getattr(_llm_scanner, "_render_template", None))
        and callable(getattr(answer, "_render_template", None))
    ):
        log.info("scout's template rendering moved; templates are compiled per transcript")
        return False

    @functools.lru_cache(maxsize=256)
    def scanner_template(source: str) -> Any:
        env = Environment(undefined=StrictOnUseUndefined, keep_trailing_newline=True)
        return env.from_string(source)

    @functools.lru_cache(maxsize=256)
    def answer_template(source: str) -> Any:
        return Template(source)

    def render_scanner(template: str, kwargs: dict[str, Any]) -> str:
        return scanner_template(template).render(**kwargs)

    def render_answer(source: str, **variables: Any) -> str:
        return answer_template(source).render(**variables)

    _llm_scanner._render_template = render_scanner  # noqa: SLF001
    answer._render_template = render_answer  # noqa: SLF001
    return True
