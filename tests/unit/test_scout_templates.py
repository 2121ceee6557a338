"""scout's prompt templates compiled once per scan process render what scout's own per-call
compilation renders, byte for byte, including an undefined variable's failure."""

from __future__ import annotations

import pytest
from inspect_scout._llm_scanner import _llm_scanner, answer
from inspect_scout._llm_scanner.prompt import (
    DEFAULT_SCANNER_TEMPLATE_PREFIX,
    DEFAULT_SCANNER_TEMPLATE_SUFFIX,
)

from steward.activities.scan.scout_templates import cache_compiled_templates


@pytest.fixture
def originals(monkeypatch):
    scanner, answer_render = _llm_scanner._render_template, answer._render_template
    # restored after the test, whatever it installs
    monkeypatch.setattr(_llm_scanner, "_render_template", scanner)
    monkeypatch.setattr(answer, "_render_template", answer_render)
    return scanner, answer_render


KWARGS = [
    {
        "messages": "[M1] USER: hi\n\n",
        "answer_prompt": "Yes or no?",
        "question": "Q?",
        "answer_format": "ANSWER: $VALUE",
        "scout_nonce": "ab12cd34",
    },
    {
        "messages": "[M1] USER: {{ not a template }}",
        "answer_prompt": "",
        "question": "",
        "answer_format": "",
    },
]


def test_cached_templates_render_what_scout_renders(originals):
    scanner, answer_render = originals
    expected = [
        (scanner(DEFAULT_SCANNER_TEMPLATE_PREFIX, k), scanner(DEFAULT_SCANNER_TEMPLATE_SUFFIX, k))
        for k in KWARGS
    ]
    expected_answer = answer_render("{{ a }} and {{ b }}\n", a=1, b="two")
    assert cache_compiled_templates()
    assert _llm_scanner._render_template is not scanner
    for _ in range(2):  # the second time from the cache
        got = [
            (
                _llm_scanner._render_template(DEFAULT_SCANNER_TEMPLATE_PREFIX, k),
                _llm_scanner._render_template(DEFAULT_SCANNER_TEMPLATE_SUFFIX, k),
            )
            for k in KWARGS
        ]
        assert got == expected
        assert answer._render_template("{{ a }} and {{ b }}\n", a=1, b="two") == expected_answer
    assert expected[0][0].endswith("\n\n")  # the trailing newline scout keeps is kept


def test_an_undefined_variable_fails_as_it_does_in_scout(originals):
    scanner, _ = originals
    with pytest.raises(Exception) as theirs:
        scanner("{{ missing.attribute }}", {})
    cache_compiled_templates()
    with pytest.raises(type(theirs.value)):
        _llm_scanner._render_template("{{ missing.attribute }}", {})
