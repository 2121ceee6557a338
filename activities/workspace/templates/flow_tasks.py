"""The tasks of the example Flow configuration (config.py names them as `tasks.py@<task>`)."""

from inspect_ai import Task, task
from inspect_ai.dataset import Sample
from inspect_ai.scorer import match
from inspect_ai.solver import generate


def reply_samples(prefix: str, count: int) -> list[Sample]:
    return [
        Sample(id=i, input=f"Reply with: {prefix}-{i}", target=f"{prefix}-{i}")
        for i in range(1, count + 1)
    ]


@task
def echo_words(count: int = 12):
    return Task(dataset=reply_samples("word", count), solver=generate(), scorer=match())


@task
def echo_codes(count: int = 8):
    return Task(dataset=reply_samples("code", count), solver=generate(), scorer=match())
