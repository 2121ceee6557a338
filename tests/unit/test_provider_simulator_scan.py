"""The provider simulator as a scan model: scout's own llm_scanner prompts (rendered by scout,
with a nonce) get a verdict scout parses, positive at the configured flag rate (deterministic
per transcript) or by the flag regex; ordinary prompts are still echoed. A real scan against
the simulator is in tests/integration/test_scan_simulator.py."""

from __future__ import annotations

import asyncio
import secrets

import pytest
from inspect_ai.model import ChatMessageAssistant, ChatMessageUser, ModelOutput
from inspect_scout import Transcript, answer_type, messages_as_str, parse_answer
from inspect_scout._llm_scanner._llm_scanner import render_scanner_prompt
from inspect_scout._llm_scanner.prompt import DEFAULT_SCANNER_TEMPLATE
from starlette.testclient import TestClient

from steward.worker.provider_simulator import Limits, Simulator, scan_verdict, transcript_share

QUESTION = "Is this sample's score unsupported by the transcript?"


def _scanner_prompt(word: str, answer: str = "boolean", nonce: str | None = None):
    """A scanner prompt as scout renders it for a sample that said `word`, and the reference
    extractor scout parses its answer with."""
    nonce = nonce or secrets.token_hex(4)
    messages = [ChatMessageUser(content=f"Reply with: {word}"), ChatMessageAssistant(content=word)]
    transcript = Transcript(
        transcript_id=word,
        source_type="eval_log",
        source_id="sim",
        source_uri="sim.eval",
        messages=messages,
    )

    async def render() -> tuple[str, object]:
        text, extract = await messages_as_str(messages, include_ids=True, nonce=nonce)
        prompt = await render_scanner_prompt(
            template=DEFAULT_SCANNER_TEMPLATE,
            transcript=transcript,
            messages=text,
            question=QUESTION,
            answer=answer_type(answer),
            nonce=nonce,
        )
        return prompt, extract

    return asyncio.run(render())


def _judged(limits: Limits, word: str, answer: str = "boolean", nonce: str | None = None):
    """The value scout reads from the simulator's answer to the scanner prompt for `word`."""
    prompt, extract = _scanner_prompt(word, answer, nonce)
    verdict = scan_verdict(prompt, limits)
    assert verdict is not None
    result = parse_answer(ModelOutput.from_content("sim", verdict), answer, extract)
    assert result.parsed is not None, verdict  # scout understood it
    return result.value


WORDS = [f"word{i}" for i in range(40)]


@pytest.mark.parametrize(
    "answer, positive, negative", [("boolean", True, False), ("numeric", 1, 0)]
)
def test_rate_zero_flags_none_and_rate_one_flags_all(answer, positive, negative):
    assert {_judged(Limits(scan_flag_rate=0.0), w, answer) for w in WORDS[:5]} == {negative}
    assert {_judged(Limits(scan_flag_rate=1.0), w, answer) for w in WORDS[:5]} == {positive}


def test_a_verdict_depends_on_the_transcript_not_the_nonce_and_grows_with_the_rate():
    flagged = {
        rate: {w for w in WORDS if _judged(Limits(scan_flag_rate=rate), w)}
        for rate in (0.25, 0.5, 0.75)
    }
    assert flagged[0.25] <= flagged[0.5] <= flagged[0.75]
    assert 5 <= len(flagged[0.5]) <= 35  # about half of 40
    # Asked again, with another nonce (as the next scan would): the same verdicts.
    assert {w for w in WORDS if _judged(Limits(scan_flag_rate=0.5), w)} == flagged[0.5]
    a, b = _scanner_prompt("alpha", nonce="00000000"), _scanner_prompt("alpha", nonce="ffffffff")
    assert a[0] != b[0] and transcript_share(a[0]) == transcript_share(b[0])


def test_the_flag_regex_wins_over_the_rate():
    limits = Limits(scan_flag_rate=1.0, scan_flag=r"\bbeta\b")
    assert [_judged(limits, w) for w in ("alpha", "beta", "gamma")] == [False, True, False]


def test_ordinary_prompts_are_still_echoed():
    assert scan_verdict("Reply with: alpha", Limits(scan_flag_rate=1.0)) is None
    assert scan_verdict("Reply with: alpha", Limits(scan_flag="alpha")) is None


def _chat(client: TestClient, prompt: str) -> str:
    response = client.post(
        "/v1/chat/completions",
        json={"model": "echo", "messages": [{"role": "user", "content": prompt}]},
    )
    assert response.status_code == 200
    return response.json()["choices"][0]["message"]["content"]


def test_the_server_answers_counts_and_retunes_the_scan():
    client = TestClient(Simulator(Limits(latency=0.0, jitter=0.0)).app())
    prompt, _ = _scanner_prompt("alpha")

    assert _chat(client, "Reply with: alpha") == "alpha"
    assert _chat(client, prompt).endswith("ANSWER: no")  # the default rate: 0
    assert client.post("/admin/config", json={"scan_flag_rate": 1}).json()["scan_flag_rate"] == 1
    assert _chat(client, prompt).endswith("ANSWER: yes")
    assert client.post("/admin/config", json={"scan_flag": "gamma"}).status_code == 200
    assert _chat(client, prompt).endswith("ANSWER: no")
    assert client.post("/admin/config", json={"scan_flag": None}).json()["scan_flag"] is None
    assert _chat(client, prompt).endswith("ANSWER: yes")

    stats = client.get("/admin/stats").json()
    assert (stats["served"], stats["scanned"]) == (5, 4)
    assert stats["limits"]["scan_flag_rate"] == 1.0

    for bad in ({"scan_flag_rate": 1.5}, {"scan_flag": "("}, {"scan_flag_rate": "lots"}):
        assert client.post("/admin/config", json=bad).status_code == 400, bad
    assert client.get("/admin/stats").json()["limits"]["scan_flag_rate"] == 1.0
