"""Issue 28 item 4, without Temporal: an ended run reads as ended. A cancelled run's tasks the
cancel stopped are `cancelled`, not `pending`; nothing is in flight, scanned or timed; the
reason is said (status, status.md, `status --json`); the run's own state is not changed."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from steward.workflows.contracts import RunState, RunStatus, TaskSpec, TaskState
from steward.workflows.views.agent_status import agent_status
from steward.workflows.views.ended import as_ended
from steward.workflows.views.status_view import render_status_markdown

NOW = datetime(2026, 12, 5, 12, 0, tzinfo=UTC)


def task(name: str, phase: str, done: int, in_flight: int = 0) -> TaskState:
    spec = TaskSpec(name=name, model="steward/offline", identifier=f"e.py@{name}#1", samples=6)
    state = TaskState(spec=spec, phase=phase, log=f"/logs/{name}.eval")
    state.progress.completed, state.progress.in_flight = done, in_flight
    return state


def cancelled_run(phase: str = "cancelled", reason: str = "wrong model") -> RunStatus:
    state = RunState(
        phase=phase,
        cancel_reason=reason,
        tasks=[task("alpha", "complete", 6), task("beta", "pending", 2, in_flight=3)],
        tend_count=4,
        last_tend_at=NOW,
        next_tend_at=NOW + timedelta(minutes=10),  # as a run's last tend left it
        scanning_logs=["/logs/alpha.eval"],
    )
    return RunStatus(workflow_id="steward-ws-1", workspace="/ws", state=state, tend_interval=600)


def test_a_cancelled_run_shows_no_pending_task_nothing_in_flight_and_no_timer():
    status = cancelled_run()
    shown = as_ended(status).state
    assert [t.phase for t in shown.tasks] == ["complete", "cancelled"]
    assert [t.progress.in_flight for t in shown.tasks] == [0, 0]
    assert shown.next_tend_at is None and not shown.timer.armed and shown.scanning_logs == []
    # The run's own state is as it kept it (`status --json --full` shows that).
    assert status.state.tasks[1].phase == "pending" and status.state.tasks[1].progress.in_flight
    assert status.state.next_tend_at is not None


def test_the_reason_and_the_end_are_said_in_json_and_status_md():
    view = agent_status(cancelled_run(), NOW)
    assert view["cancel_reason"] == "wrong model"
    assert [t["state"] for t in view["tasks"]] == ["complete", "cancelled"]
    assert all(t["in_flight"] == 0 for t in view["tasks"])
    assert view["next_tend_at"] is None
    page = render_status_markdown(cancelled_run())
    assert "- Cancelled: wrong model" in page
    assert "- Next tend: none: the run has ended" in page
    assert "| pending |" not in page and "| cancelled |" in page


def test_other_ends_stop_their_tasks_and_a_running_run_is_untouched():
    failed = cancelled_run(phase="failed", reason="")
    failed.state.cancel_reason = None
    assert [t.phase for t in as_ended(failed).state.tasks] == ["complete", "stopped"]
    assert agent_status(failed, NOW)["cancel_reason"] is None
    # While it is cancelling, its workers may still finish samples: in flight is kept.
    cancelling = as_ended(cancelled_run(phase="cancelling")).state
    assert cancelling.tasks[1].phase == "cancelled" and cancelling.tasks[1].progress.in_flight == 3
    running = cancelled_run(phase="running")
    assert as_ended(running) is running


def test_timer_status_of_an_ended_run_says_there_is_none():
    from steward.cli.cmd_control import _timer_view

    view = _timer_view(cancelled_run())
    assert view["ended"] and not view["armed"] and view["next_tend_at"] is None
    running = _timer_view(cancelled_run(phase="running"))
    assert not running["ended"] and running["armed"] and running["next_tend_at"] is not None
