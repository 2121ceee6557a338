"""The names histories record are written once (workflows/names.py) and are exactly what the
worker registers: a renamed activity or workflow would fail every recorded history's replay."""

from __future__ import annotations

from temporalio import activity, workflow

from steward.worker.temporal_worker import ACTIVITIES, WORKFLOWS
from steward.workflows.names import Activity, WorkflowType


def test_every_activity_the_worker_registers_is_named_once():
    registered = {activity._Definition.must_from_callable(fn).name for fn in ACTIVITIES}
    assert registered == Activity.all()


def test_workflow_types_are_the_named_ones():
    registered = {workflow._Definition.must_from_class(cls).name for cls in WORKFLOWS}
    assert registered == {v for k, v in vars(WorkflowType).items() if k.isupper()}
