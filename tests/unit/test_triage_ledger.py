"""The triage ledger, on real files and real `.eval` logs: the run's changes are written once
however often an activity is retried, a torn last line is read once it is whole, the anomaly
finder hands over only what the ledger does not hold (a re-run sample's new error as
`rerun_failed`, at most MAX_NEW a look), says which held instances are healthy again, and a
ruling on a class is carried out on every instance the ledger holds, once."""

from __future__ import annotations

import json
from pathlib import Path

from harness.scanning import WORDS
from steward.activities.logs import anomalies
from steward.activities.logs.log_listing import log_info
from steward.activities.logs.rulings import carry_out_orders
from steward.activities.logs.triage_ledger import Ledger, open_ledger
from steward.workflows.activity_io import AnomalyRequest, ApplyRequest, ApplyResult
from steward.workflows.policy import triage_ledger
from steward.workflows.policy.decisions import Anomaly, StandingRules, Triage, absorb
from steward.workflows.policy.triage_ledger import LedgerOrder
from tests.unit.test_decisions_policy import NOW, error
from tests.unit.test_ruling_effects import FAILED, SPEC, _copy, _uuids, _with_error


def _triage_with(*samples: int) -> Triage:
    triage = Triage()
    absorb(triage, [error(n) for n in samples], StandingRules(), now=NOW, tend=1)
    return triage


def test_the_runs_changes_are_written_once_however_often_an_activity_is_retried(tmp_path):
    path = str(tmp_path / "ledger.jsonl")
    triage = _triage_with(1, 2)
    open_ledger(path, triage.ledger_ops)
    open_ledger(path, triage.ledger_ops)  # a retried activity, same changes
    fresh = Ledger(Path(path))  # another process reading the file from the start
    fresh.read_on()
    assert sorted(fresh.held) == sorted(op.key for op in triage.ledger_ops)
    assert len(Path(path).read_text().splitlines()) == 2 and fresh.seq == 2


def test_a_torn_last_line_is_read_once_it_is_whole(tmp_path):
    path = tmp_path / "ledger.jsonl"
    line = json.dumps({"seq": 1, "op": "add", "class": "c", "key": "k",
                       "anomaly": error(1).model_dump(mode="json")})  # fmt: skip
    path.write_text(line[:40])  # a crash mid-write
    reader = Ledger(path)
    reader.read_on()
    assert reader.held == {}
    path.write_text(line + "\n")
    reader.read_on()
    assert list(reader.held) == ["k"]


def test_only_what_the_ledger_does_not_hold_is_new_and_at_most_max_new_a_look(tmp_path):
    path = str(tmp_path / "ledger.jsonl")
    triage = _triage_with(1)
    request = AnomalyRequest(
        workspace=str(tmp_path), log_dir=str(tmp_path), tasks=[], workers=[], stuck_after=600,
        ledger=path, ledger_ops=triage.ledger_ops,
    )  # fmt: skip
    found = [error(n) for n in range(triage_ledger.MAX_NEW + 10)]
    looked = anomalies.through_the_ledger(request, found)
    assert looked.ledger_through == 1 and looked.more_anomalies
    ids = [a.sample_id for a in looked.anomalies]
    assert "1" not in ids and len(ids) == triage_ledger.MAX_NEW  # held: not new
    stuck = Anomaly(kind="stuck_sample", task="t", task_name="t", sample_id="9", tool="bash")
    assert anomalies.through_the_ledger(request, [stuck]).anomalies == [stuck]  # not a ledger kind


def test_a_rerun_samples_new_error_is_rerun_failed_and_the_replaced_run_is_not_new(tmp_path):
    path = tmp_path / "ledger.jsonl"
    triage = _triage_with(1)
    ledger = open_ledger(str(path), triage.ledger_ops)
    ledger.append([{"op": "rerun", "class": "c", "key": error(1).sample_ref, "uuid": "u1"}])
    request = AnomalyRequest(
        workspace=str(tmp_path), log_dir=str(tmp_path), tasks=[], workers=[], stuck_after=600,
        ledger=str(path),
    )  # fmt: skip
    assert anomalies.through_the_ledger(request, [error(1, uuid="u1")]).anomalies == []
    (again,) = anomalies.through_the_ledger(request, [error(1, uuid="u1-rerun")]).anomalies
    assert again.kind == "rerun_failed" and again.uuid == "u1-rerun"


def _log_task(eval_log: str, tmp_path: Path) -> tuple[str, str]:
    path = _copy(eval_log, tmp_path)
    return path, log_info(path).identifier


def _held(task: str, sample_id: str) -> Anomaly:
    return Anomaly(kind="sample_error", task=task, task_name=SPEC.name, sample_id=sample_id,
                   epoch=1, uuid=f"old-{sample_id}", error_type="ValueError", frame="x.py:f")  # fmt: skip


def test_held_instances_healthy_in_their_newest_log_are_healed(eval_log, tmp_path):
    path, task = _log_task(eval_log, tmp_path)
    _with_error(path, WORDS[1], FAILED, "success")
    triage = Triage()
    absorb(triage, [_held(task, w) for w in WORDS], StandingRules(), now=NOW, tend=1)
    (cls,) = triage.classes
    request = AnomalyRequest(
        workspace=str(tmp_path), log_dir=str(Path(path).parent),
        tasks=[SPEC.model_copy(update={"identifier": task})], workers=[], stuck_after=600,
        ledger=str(tmp_path / "ledger.jsonl"), ledger_ops=triage.ledger_ops,
        suspect_classes=[cls.id],
    )  # fmt: skip
    healed = anomalies.through_the_ledger(request, []).healed
    assert sorted(healed[cls.id]) == sorted(
        f"sample_error/{task}#{w}@1" for w in (WORDS[0], WORDS[2])
    )
    assert set(healed[cls.id].values()) == {task}


def test_a_ruling_is_carried_out_on_every_held_instance_once(eval_log, tmp_path):
    from inspect_ai.log import read_eval_log

    path, task = _log_task(eval_log, tmp_path)
    _with_error(path, WORDS[1], FAILED, "success")
    triage = Triage()
    absorb(triage, [_held(task, w) for w in WORDS[:2]], StandingRules(), now=NOW, tend=1)
    (cls,) = triage.classes
    ledger = str(tmp_path / "ledger.jsonl")
    order = LedgerOrder(class_id=cls.id, verdict="rerun", by="norah", reason="flaky")
    request = ApplyRequest(
        workspace=str(tmp_path), actions=[], orders=[order], settled_logs={task: path},
        ledger=ledger, ledger_ops=triage.ledger_ops,
    )  # fmt: skip
    result = ApplyResult()
    carry_out_orders(request, result)
    (outcome,) = result.outcomes
    # The still-errored sample is re-run; the one healthy in the log is skipped, not re-run.
    assert (outcome.done, outcome.skipped, outcome.remaining) == (1, 1, 0)
    assert outcome.rerun_tasks == [task] and result.ledger_through == 2
    samples = {str(s.id): s for s in read_eval_log(path).samples or []}
    assert samples[WORDS[1]].invalidation is not None
    assert samples[WORDS[0]].invalidation is None
    uuids = _uuids(path)
    # Carried out again (a retried activity, a later tend): nothing is done twice.
    again = ApplyResult()
    carry_out_orders(request.model_copy(update={"ledger_ops": []}), again)
    assert (again.outcomes[0].done, again.outcomes[0].skipped) == (0, 0)
    assert _uuids(path) == uuids
    # The ledger knows the re-run: the sample's next error is `rerun_failed`.
    reader = Ledger(Path(ledger))
    reader.read_on()
    assert reader.reruns == {f"{task}#{WORDS[1]}@1": {f"old-{WORDS[1]}"}}
    triage_ledger.take_outcomes(triage, result.outcomes)
    assert cls.state == "open"  # not ruled in the state: outcomes change only a ruled class


def test_a_ruling_waits_for_a_task_whose_log_is_not_final(tmp_path):
    triage = _triage_with(1, 2)
    (cls,) = triage.classes
    order = LedgerOrder(class_id=cls.id, verdict="exclude", by="norah", reason="")
    request = ApplyRequest(
        workspace=str(tmp_path), actions=[], orders=[order], settled_logs={},
        ledger=str(tmp_path / "ledger.jsonl"), ledger_ops=triage.ledger_ops,
    )  # fmt: skip
    result = ApplyResult()
    carry_out_orders(request, result)
    (outcome,) = result.outcomes
    assert (outcome.done, outcome.remaining) == (0, 2)
    assert outcome.waiting_tasks == [error(1).task] and outcome.edited_logs == {}
