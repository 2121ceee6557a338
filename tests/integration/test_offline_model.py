"""The offline model provider: answers, fails chosen samples, pushes back with rate limits
that Inspect retries, and is slow on request, all without changing task identity."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from inspect_ai.log import read_eval_log

SCRIPT = textwrap.dedent(
    """
    from inspect_ai import Task, eval
    from inspect_ai.dataset import Sample
    from inspect_ai.scorer import match
    from inspect_ai.solver import generate

    task = Task(
        dataset=[Sample(id=i, input=f"Reply with: w{i}", target=f"w{i}") for i in range(1, 9)],
        solver=generate(),
        scorer=match(),
    )
    eval(task, model="steward/offline", log_dir="logs", display="none")
    """
)


def _eval(tmp_path: Path, **knobs: str):
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / "run.py").write_text(SCRIPT)
    env = {k: v for k, v in os.environ.items() if not k.startswith("STEWARD_OFFLINE")}
    env.update(knobs)
    done = subprocess.run(
        [sys.executable, "run.py"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    (log_path,) = (tmp_path / "logs").glob("*.eval")
    return read_eval_log(str(log_path))


def _model_events(log):
    return [e for s in log.samples for e in s.events if e.event == "model"]


def test_answers_the_instruction_with_usage_and_no_network(tmp_path):
    log = _eval(tmp_path)
    assert log.status == "success"
    assert [s.output.completion for s in log.samples] == [f"w{i}" for i in range(1, 9)]
    assert log.results.scores[0].metrics["accuracy"].value == 1.0
    assert all(e.output.usage and e.output.usage.total_tokens > 0 for e in _model_events(log))


def test_fails_chosen_samples(tmp_path):
    log = _eval(tmp_path, STEWARD_OFFLINE_FAIL=r"w(3|5)$")
    errored = sorted(s.id for s in log.samples if s.error)
    assert errored == [3, 5]
    assert "offline model told to fail" in log.samples[2].error.message


def test_rate_limit_pushback_is_retried(tmp_path):
    log = _eval(tmp_path, STEWARD_OFFLINE_RATE_LIMIT="0.6")
    assert all(not s.error for s in log.samples)
    # Inspect's adaptive connection controller saw the pushback and backed off.
    changes = log.stats.connection_limit_history
    assert (
        changes
        and changes[0].reason == "rate_limit"
        and changes[0].new_limit < changes[0].old_limit
    )


@pytest.mark.parametrize("knob", ["STEWARD_OFFLINE_DELAY", "STEWARD_OFFLINE_RATE_LIMIT"])
def test_knobs_do_not_change_task_identity(tmp_path, knob):
    from inspect_ai._eval.evalset import task_identifier

    plain = task_identifier(_eval(tmp_path / "a"), None)
    tuned = task_identifier(_eval(tmp_path / "b", **{knob: "0.01"}), None)
    assert plain == tuned  # same relative file, same identity: the knob is invisible to it
