"""An example eval set Steward can run offline.

It uses `steward/offline`, Steward's offline model (it answers "Reply with: X" with X),
so it runs with no network and no API key. Replace the tasks and model with your own,
e.g. model=["openai/gpt-5", "anthropic/claude-opus-4"], and keep the final eval_set() call.
"""

from inspect_ai import Task, eval_set, task
from inspect_ai.dataset import Sample
from inspect_ai.scorer import match
from inspect_ai.solver import generate


def reply_samples(prefix: str, count: int) -> list[Sample]:
    return [
        Sample(id=i, input=f"Reply with: {prefix}-{i}", target=f"{prefix}-{i}")
        for i in range(1, count + 1)
    ]


@task
def echo_words():
    return Task(dataset=reply_samples("word", 12), solver=generate(), scorer=match())


@task
def echo_numbers():
    return Task(dataset=reply_samples("number", 10), solver=generate(), scorer=match())


@task
def echo_codes():
    return Task(dataset=reply_samples("code", 8), solver=generate(), scorer=match())


eval_set(
    tasks=[echo_words(), echo_numbers(), echo_codes()],
    model="steward/offline",
)
