"""`steward show SAMPLE`: how a sample is named (TASK/ID[@EPOCH], as collect names a decision's
instances), against the run's task names, which may hold a slash."""

from __future__ import annotations

import pytest

from steward.cli.cmd_show import SampleRef, parse_sample
from steward.cli.output import BAD_INPUT, CommandError

TASKS = ["chat", "inspect_evals/gsm8k", "inspect_evals/gsm8k_cot"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("chat/3", SampleRef("chat", "3", None)),
        ("chat/3@2", SampleRef("chat", "3", 2)),
        ("chat#3@1", SampleRef("chat", "3", 1)),
        ("chat/a@b", SampleRef("chat", "a@b", None)),  # an id with an @ that is no epoch
        ("inspect_evals/gsm8k/17@1", SampleRef("inspect_evals/gsm8k", "17", 1)),
        ("inspect_evals/gsm8k_cot/4", SampleRef("inspect_evals/gsm8k_cot", "4", None)),
    ],
)
def test_samples_are_named_task_slash_id_at_epoch(text, expected):
    assert parse_sample(text, TASKS) == expected


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("math/3", "No task 'math' in this run; its tasks: chat, inspect_evals/gsm8k"),
        ("3", "Give SAMPLE as TASK/ID or TASK/ID@EPOCH"),
        ("chat/", "names no sample id"),
    ],
)
def test_a_sample_that_names_no_task_of_the_run_is_refused_listing_them(text, said):
    with pytest.raises(CommandError) as refused:
        parse_sample(text, TASKS)
    assert refused.value.code == BAD_INPUT and said in str(refused.value)
