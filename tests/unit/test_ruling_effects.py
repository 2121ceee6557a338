"""Rulings act only on what is still wrong, on real `.eval` logs: a sample ruled for an error it
no longer has in its task's newest log is skipped (never invalidated, re-run or re-scored; the
log is not even rewritten), a still-errored one is re-run and the healthy ones keep their uuids;
and the anomaly finder neither reports a worker's own end as a sample error nor misses which
suspects are healthy again."""

from __future__ import annotations

import shutil
from pathlib import Path

from harness.scanning import TASK, WORDS
from steward.activities.logs import anomalies
from steward.activities.logs.rulings import apply_actions_sync
from steward.workflows.activity_io import AnomalyRequest, ApplyRequest
from steward.workflows.contracts import TaskSpec
from steward.workflows.policy.decisions import Anomaly
from steward.workflows.policy.rulings import Action

SPEC = TaskSpec(name=TASK, model="steward/offline", identifier="probe-id", samples=len(WORDS))
RECOVERED = ("CancelledError()", "CancelledError: recovered from crashed eval\n")
FAILED = ("ValueError('picky')", "Traceback ...\nValueError: picky\n")


def _copy(eval_log: str, tmp_path: Path) -> str:
    log_dir = tmp_path / "logs"
    log_dir.mkdir()
    return str(shutil.copy(eval_log, log_dir / Path(eval_log).name))


def _with_error(path: str, sample_id: str, error: tuple[str, str], status: str) -> None:
    """Rewrite a real log (through Inspect) so one sample holds `error` and the log `status`."""
    from inspect_ai._util.error import EvalError
    from inspect_ai.log import read_eval_log, write_eval_log

    log = read_eval_log(path)
    for sample in log.samples or []:
        if str(sample.id) == sample_id:
            message, traceback = error
            sample.error = EvalError(message=message, traceback=traceback, traceback_ansi="")
    log.status = status
    write_eval_log(log, path)
    anomalies.forget_errors(path)


def _uuids(path: str) -> dict[str, str]:
    from inspect_ai.log import read_eval_log_sample_summaries

    return {str(s.id): s.uuid for s in read_eval_log_sample_summaries(path)}


def _action(path: str, sample_id: str, verdict: str) -> Action:
    anomaly = Anomaly(
        kind="sample_error",
        task=SPEC.identifier,
        task_name=SPEC.name,
        sample_id=sample_id,
        epoch=1,
        uuid="from-an-older-log",
        log=path,
        error_type="CancelledError",
    )
    return Action(
        class_id="c-1", instance=anomaly.sample_key, verdict=verdict, anomaly=anomaly,
        by="norah", reason="test",
    )  # fmt: skip


def test_a_ruling_on_a_sample_healthy_in_the_newest_log_is_skipped(eval_log, tmp_path):
    path = _copy(eval_log, tmp_path)
    before, bytes_before = _uuids(path), Path(path).read_bytes()
    for verdict in ("rerun", "exclude", "zero"):
        result = apply_actions_sync(
            ApplyRequest(workspace=str(tmp_path), actions=[_action(path, WORDS[0], verdict)]), []
        )
        assert result.done == [] and result.rerun_tasks == [] and result.problems == []
        assert [a.anomaly.sample_id for a in result.skipped] == [WORDS[0]]
    assert Path(path).read_bytes() == bytes_before  # not rewritten at all
    assert _uuids(path) == before


def test_a_rerun_invalidates_only_the_still_errored_sample(eval_log, tmp_path):
    from inspect_ai.log import read_eval_log

    path = _copy(eval_log, tmp_path)
    _with_error(path, WORDS[1], FAILED, "success")
    before = _uuids(path)
    actions = [_action(path, WORDS[0], "rerun"), _action(path, WORDS[1], "rerun")]
    result = apply_actions_sync(ApplyRequest(workspace=str(tmp_path), actions=actions), [])
    assert [a.anomaly.sample_id for a in result.done] == [WORDS[1]]
    assert [a.anomaly.sample_id for a in result.skipped] == [WORDS[0]]
    assert result.rerun_tasks == [SPEC.identifier]
    samples = {str(s.id): s for s in read_eval_log(path).samples or []}
    assert samples[WORDS[1]].invalidation is not None
    assert samples[WORDS[0]].invalidation is None and samples[WORDS[2]].invalidation is None
    assert {k: v for k, v in _uuids(path).items() if k != WORDS[1]} == {
        k: v for k, v in before.items() if k != WORDS[1]
    }


def test_a_sample_in_flight_when_its_worker_died_is_not_a_sample_error(eval_log, tmp_path):
    path = _copy(eval_log, tmp_path)
    _with_error(path, WORDS[2], RECOVERED, "started")  # a recovered crashed log, resumed next
    assert anomalies.sample_errors(path, SPEC, final=False) == []
    _with_error(path, WORDS[0], FAILED, "started")  # a real failure still counts
    assert [a.sample_id for a in anomalies.sample_errors(path, SPEC, final=False)] == [WORDS[0]]
    # In a final log nothing resumes it any more: then it is the task's error to rule on.
    found = anomalies.sample_errors(path, SPEC, final=True)
    assert sorted(a.sample_id for a in found) == sorted([WORDS[0], WORDS[2]])


def test_suspects_healthy_in_the_newest_log_are_reported(eval_log, tmp_path):
    from steward.activities.logs.log_listing import log_info

    path = _copy(eval_log, tmp_path)
    _with_error(path, WORDS[1], FAILED, "success")
    spec = SPEC.model_copy(update={"identifier": log_info(path).identifier})
    ref = f"{spec.identifier}#{{}}@1"
    request = AnomalyRequest(
        workspace=str(tmp_path), log_dir=str(Path(path).parent), tasks=[spec], workers=[],
        stuck_after=600, suspects=[ref.format(w) for w in WORDS] + ["another-task#1@1"],
    )  # fmt: skip
    assert anomalies.healthy_suspects(request) == [ref.format(WORDS[0]), ref.format(WORDS[2])]
