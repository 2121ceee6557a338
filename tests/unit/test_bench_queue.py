"""The queue bench stands in for every activity the Steward worker registers: a run that calls
one the bench lacks fails it and retries it beside the pump, and the bench then measures itself
(its watch_worker and exchange_provider_budgets once went missing that way)."""

from __future__ import annotations

from temporalio import activity

from bench import queue_stand_ins
from steward.worker.temporal_worker import ACTIVITIES
from steward.workflows.names import Activity


def _names(functions) -> list[str]:
    return [activity._Definition.must_from_callable(fn).name for fn in functions]


def test_the_bench_registers_every_activity_the_worker_does():
    bench = _names(queue_stand_ins.ACTIVITIES)
    assert sorted(bench) == sorted(set(bench)), "an activity is registered twice"
    assert set(bench) == set(_names(ACTIVITIES)) == Activity.all()


def test_only_the_capacity_path_is_real():
    """The admission and the probe are Steward's own (measured); the rest answers at once."""
    assert set(_names(queue_stand_ins.REAL)) == {
        Activity.REQUEST_ADMISSION,
        Activity.PROBE_CAPACITY,
    }
    assert not set(_names(queue_stand_ins.STAND_INS)) & set(_names(queue_stand_ins.REAL))
