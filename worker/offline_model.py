"""An Inspect model provider that needs no network: `steward/offline`.

It answers the instruction ``Reply with: X`` with ``X`` (so `match()` scores it),
and carries usage so Inspect never reaches for tiktoken. Behaviour that must not
change task identity comes from the environment (never `model_args`, which are
hashed into the task identifier):

* ``STEWARD_OFFLINE_DELAY``      seconds each generate takes (float, default 0).
* ``STEWARD_OFFLINE_HOLD``       a file path; while that file exists, every generate waits
                                 (a test holds a run busy, then lets it finish).
* ``STEWARD_OFFLINE_FAIL``       regex; a sample whose input matches errors.
* ``STEWARD_OFFLINE_CRASH``      regex; a sample whose input matches kills its
                                 worker process (exit 70), as an OOM would.
* ``STEWARD_OFFLINE_RATE_LIMIT`` fraction (0..1) of calls pushed back, evenly spread, with a
                                 rate-limit error that Inspect retries (and its adaptive
                                 connection controller counts).
* ``STEWARD_OFFLINE_FLAG``       regex; answers an inspect_scout ``llm_scanner`` prompt (yes/no or
                                 numeric) with a positive verdict (``ANSWER: yes`` / ``ANSWER: 1``)
                                 when the transcript inside the prompt matches, and a negative one
                                 (``ANSWER: no`` / ``ANSWER: 0``) when it does not. Unset, or for
                                 any other prompt, answers as above.

The delay, fail, crash and rate-limit knobs act on eval samples only, never on a scanner's
prompt (which quotes the transcript of the very sample told to fail).
"""

from __future__ import annotations

import asyncio
import os
import re
from typing import Any

from inspect_ai.model import (
    ChatMessage,
    GenerateConfig,
    ModelAPI,
    ModelOutput,
    ModelUsage,
    modelapi,
)
from inspect_ai.model._model import RetryDecision
from inspect_ai.tool import ToolChoice, ToolInfo

_INSTRUCTION = re.compile(r"Reply with:\s*(.+)", re.IGNORECASE | re.DOTALL)


class OfflineRateLimit(Exception):
    """The simulated provider's 429."""


class OfflineSampleFailure(Exception):
    """A sample the environment asked to fail."""


def _text_of(messages: list[ChatMessage]) -> str:
    return "\n".join(message.text for message in messages)


def reply_for(prompt: str) -> str:
    match = _INSTRUCTION.search(prompt)
    return match.group(1).strip().splitlines()[0] if match else "ok"


# The transcript inside an inspect_scout llm_scanner prompt (its default template); greedy, so
# an "[END TRANSCRIPT" written by the model inside the transcript does not end it early.
_SCANNER_TRANSCRIPT = re.compile(r"\[BEGIN TRANSCRIPT[^\]]*\](.*)\[END TRANSCRIPT", re.DOTALL)
# A scanner built with a nonce writes it on every marker; it is random, so strip it before
# matching lest a short flag match it by chance.
_SCANNER_NONCE = re.compile(r"contains the code \((\w+)\)")
_SCANNER_MESSAGE_ID = re.compile(r"\[(M\d+)\]")


def scanner_transcript(prompt: str) -> str | None:
    """The transcript in an inspect_scout llm_scanner prompt, without the scan's random nonce
    (so the same transcript reads the same in every scan); None when it is not such a prompt."""
    transcript = _SCANNER_TRANSCRIPT.search(prompt)
    if transcript is None:
        return None
    text = transcript.group(1)
    nonce = _SCANNER_NONCE.search(prompt[: transcript.start()])
    return text.replace(f" ({nonce.group(1)})", "") if nonce else text


def scanner_verdict(prompt: str, flag: str) -> str | None:
    """The answer to an llm_scanner prompt: positive when its transcript matches `flag`.

    None when the prompt is not a scanner prompt asking a yes/no or numeric question.
    """
    transcript = _SCANNER_TRANSCRIPT.search(prompt)
    if transcript is None:
        return None
    question = prompt[transcript.end() :]
    if "$VALUE is yes or no" in question:
        positive, negative = "yes", "no"
    elif "$NUMBER" in question:
        positive, negative = "1", "0"
    else:
        return None
    text = scanner_transcript(prompt) or ""
    found = re.search(flag, text)
    if found is None:
        return f"The transcript does not match {flag!r}.\n\nANSWER: {negative}"
    message_ids = _SCANNER_MESSAGE_ID.findall(text[: found.end()])
    where = f" in [{message_ids[-1]}]" if message_ids else ""
    return f"The transcript matches {flag!r}{where}.\n\nANSWER: {positive}"


@modelapi(name="steward")
class OfflineModel(ModelAPI):
    def __init__(
        self,
        model_name: str,
        base_url: str | None = None,
        api_key: str | None = None,
        config: GenerateConfig = GenerateConfig(),  # noqa: B008 (Inspect's provider signature)
        **model_args: Any,
    ) -> None:
        super().__init__(model_name, base_url, api_key, [], config)
        self._calls = 0

    async def generate(
        self,
        input: list[ChatMessage],
        tools: list[ToolInfo],
        tool_choice: ToolChoice,
        config: GenerateConfig,
    ) -> ModelOutput:
        prompt = _text_of(input)
        # The fault knobs simulate an eval's own faults: a scanner reading the transcript of a
        # sample told to fail must not fail with it.
        if not _SCANNER_TRANSCRIPT.search(prompt):
            await self._misbehave(prompt)
        flag = os.environ.get("STEWARD_OFFLINE_FLAG")
        verdict = scanner_verdict(prompt, flag) if flag else None
        completion = verdict if verdict is not None else reply_for(prompt)
        output = ModelOutput.from_content(model=self.model_name, content=completion)
        output.usage = ModelUsage(
            input_tokens=len(prompt.split()),
            output_tokens=len(completion.split()),
            total_tokens=len(prompt.split()) + len(completion.split()),
        )
        return output

    async def _misbehave(self, prompt: str) -> None:
        delay = float(os.environ.get("STEWARD_OFFLINE_DELAY", "0") or 0)
        if delay > 0:
            await asyncio.sleep(delay)
        hold = os.environ.get("STEWARD_OFFLINE_HOLD")
        while hold and os.path.exists(hold):
            await asyncio.sleep(0.2)
        crash = os.environ.get("STEWARD_OFFLINE_CRASH")
        if crash and re.search(crash, prompt):
            os._exit(70)
        fail = os.environ.get("STEWARD_OFFLINE_FAIL")
        if fail and re.search(fail, prompt):
            raise OfflineSampleFailure(f"offline model told to fail on {fail!r}")
        if self._pushed_back(float(os.environ.get("STEWARD_OFFLINE_RATE_LIMIT", "0") or 0)):
            raise OfflineRateLimit("429 Too Many Requests (simulated)")

    def _pushed_back(self, fraction: float) -> bool:
        """Deterministically push back on `fraction` of calls, evenly spread (reproducible)."""
        self._calls += 1
        return fraction > 0 and int(self._calls * fraction) != int((self._calls - 1) * fraction)

    def should_retry(self, ex: Exception) -> bool | RetryDecision:
        if isinstance(ex, OfflineRateLimit):
            return RetryDecision.rate_limit()
        return RetryDecision.no()

    def retry_wait(self) -> Any:
        # Inspect's default backoff starts at 3 s; a simulator should recover fast.
        from tenacity import wait_exponential_jitter

        return wait_exponential_jitter(multiplier=0.05, max=0.5, jitter=0.05)

    async def count_text_tokens(self, text: str) -> int:
        return len(text.split())

    def max_connections(self) -> int:
        return 50
