"""What a ruling does in the run itself is said once (decisions.RUN_STEPS) and done once
(eval_run_triage): every described step is done, every verdict it names can be ruled."""

from __future__ import annotations

from typing import get_args

from steward.workflows.policy import decisions
from steward.workflows.run import eval_run_triage


def test_every_step_a_ruling_names_is_a_verdict_of_its_kind():
    for (kind, verdict), _step in decisions.RUN_STEPS.items():
        assert verdict in decisions.VERDICTS[kind], (kind, verdict)


def test_every_described_step_is_carried_out_and_nothing_else_is():
    steps = set(get_args(decisions.RunStep))
    assert set(decisions.RUN_STEPS.values()) == steps
    assert set(eval_run_triage._RUN_STEPS) == steps


def test_a_verdict_the_run_carries_out_is_not_also_an_activitys():
    for kind, verdict in decisions.RUN_STEPS:
        if kind != "cost_cap":  # a cap's cancel is also a live verdict name: the run cancels
            assert not decisions.needs_effect(kind, verdict), (kind, verdict)
    assert decisions.run_step("sample_error", "rerun") is None
    assert decisions.run_step("stalled_task", "retry") == "respawn_task"
