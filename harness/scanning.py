"""A real Inspect log for the scoring-integrity scan, and scanners written as files.

The offline model judges a scanner prompt by `STEWARD_OFFLINE_FLAG` (a regex over the transcript
in the prompt), so which sample is flagged is chosen by each test, not baked into the model.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

WORDS = ["alpha", "beta", "gamma"]
TASK = "integrity_probe"

# A plain (non-LLM) scanner: flags a sample whose last message says "beta".
SAYS_BETA = textwrap.dedent(
    """
    from inspect_scout import Result, Scanner, Transcript, scanner


    @scanner(messages="all")
    def {name}() -> Scanner[Transcript]:
        async def scan(transcript: Transcript) -> Result:
            last = transcript.messages[-1].text if transcript.messages else ""
            return Result(value="beta" in last, explanation=f"The last message is {{last!r}}.")

        return scan
    """
)

EXPLODES = textwrap.dedent(
    """
    from inspect_scout import Result, Scanner, Transcript, scanner


    @scanner(messages="all")
    def explodes() -> Scanner[Transcript]:
        async def scan(transcript: Transcript) -> Result:
            raise RuntimeError("scanner exploded on purpose")

        return scan
    """
)


def offline_eval_log(log_dir: Path) -> str:
    """One real `.eval` log in `log_dir`: the offline model answers three samples (WORDS), all
    scored correct."""
    from inspect_ai import Task, eval
    from inspect_ai.dataset import Sample
    from inspect_ai.scorer import match
    from inspect_ai.solver import generate

    task = Task(
        name=TASK,
        dataset=[Sample(id=word, input=f"Reply with: {word}", target=word) for word in WORDS],
        solver=generate(),
        scorer=match(),
    )
    (log,) = eval(task, model="steward/offline", log_dir=str(log_dir), display="none")
    assert log.status == "success" and log.results.scores[0].metrics["accuracy"].value == 1.0
    (path,) = log_dir.glob("*.eval")
    return str(path)
