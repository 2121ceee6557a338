"""The watchdog's once-per-outage rule (workflows/policy/outage.py): a pure function of the
previous state, what a check found and the runs it knows."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from steward.workflows.policy.outage import (
    OutageState,
    SupervisionCheck,
    WatchedRun,
    delivered,
    observe,
    span_text,
)

T0 = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)
DOWN = SupervisionCheck(
    down=True, what="the Steward worker (pid 4242) has exited", fix="run `steward worker start`"
)
UP = SupervisionCheck(down=False)
RUNS = [
    WatchedRun(workflow_id="steward-a", workspace="/runs/a", state="running"),
    WatchedRun(workflow_id="steward-b", workspace="/runs/b", state="finished"),
]


def check(state, found, minutes, ok=True, runs=RUNS):
    """One watchdog check `minutes` after T0, its notice delivered (ok) or not."""
    state, notice = observe(state, found, runs, "host1", T0 + timedelta(minutes=minutes))
    if notice is not None:
        state = delivered(state, notice, ok)
    return state, notice


def test_one_down_one_back_and_silence_around_them():
    state, notice = check(OutageState(), UP, 0)
    assert notice is None and state.last_result == "up"

    state, notice = check(state, DOWN, 1)
    assert notice is not None and notice.kind == "down"
    assert notice.title == "Steward: supervision down on host1"
    # One line: what, since when, which runs, what to do. A finished run waits for its
    # signoff only: it is not named as unsupervised.
    assert "\n" not in notice.text
    assert "since 2026-03-01 12:01:00 UTC" in notice.text
    assert "the Steward worker (pid 4242) has exited" in notice.text
    assert "/runs/a (running)" in notice.text and "/runs/b" not in notice.text
    assert "run `steward worker start`" in notice.text
    assert notice.runs == ["/runs/a"]

    for minute in (2, 3, 30):  # still down: nothing new
        state, notice = check(state, DOWN, minute)
        assert notice is None
    assert "already told" in state.last_result

    state, notice = check(state, UP, 38)
    assert notice is not None and notice.kind == "back"
    assert "after 37m down" in notice.text and "12:38:00" in notice.text
    assert notice.runs == ["/runs/a"]

    state, notice = check(state, UP, 39)
    assert notice is None
    assert state == OutageState(last_check_at=T0 + timedelta(minutes=39), last_result="up")


def test_a_notice_that_was_not_delivered_is_tried_again_and_sent_once():
    state, first = check(OutageState(), DOWN, 0, ok=False)
    assert first is not None and not state.told
    state, again = check(state, DOWN, 1)
    assert again is not None and again.kind == "down"
    assert "since 2026-03-01 12:00:00 UTC" in again.text  # the outage's start, not this check's
    state, third = check(state, DOWN, 2)
    assert third is None

    state, back = check(state, UP, 10, ok=False)
    assert back is not None and back.kind == "back" and state.unsent_back is not None
    state, retried = check(state, UP, 11)
    assert retried is not None and retried.text == back.text  # the same times: 10m down
    assert "after 10m down" in retried.text
    state, nothing = check(state, UP, 12)
    assert nothing is None and state.unsent_back is None


def test_an_outage_nobody_heard_of_ends_without_a_back():
    state, notice = check(OutageState(), DOWN, 0, ok=False)
    state, notice = check(state, UP, 1)
    assert notice is None and state.down_since is None


def test_nothing_to_tell_when_no_run_needs_supervising():
    at_rest = [WatchedRun(workflow_id="steward-b", workspace="/runs/b", state="finished")]
    state, notice = check(OutageState(), DOWN, 0, runs=at_rest)
    assert notice is None and state.down_since is not None
    assert "no run is left unsupervised" in state.last_result
    # A run that needs it appears while still down (a record read later): told then.
    state, notice = check(state, DOWN, 1)
    assert notice is not None and notice.kind == "down"
    state, notice = check(state, UP, 2, runs=at_rest)
    assert notice is not None and notice.kind == "back"


def test_a_new_outage_after_a_back_is_told_again():
    state, _ = check(OutageState(), DOWN, 0)
    state, _ = check(state, UP, 5)
    state, notice = check(state, DOWN, 60)
    assert notice is not None and notice.kind == "down" and "13:00:00" in notice.text


def test_many_runs_are_named_briefly():
    many = [WatchedRun(workflow_id=f"w{i}", workspace=f"/runs/{i}") for i in range(12)]
    _, notice = check(OutageState(), DOWN, 0, runs=many)
    assert notice is not None and "/runs/4 (running) and 7 more" in notice.text
    assert len(notice.runs) == 12  # all of them hear it


def test_span_text():
    assert span_text(0) == "0s"
    assert span_text(59) == "59s"
    assert span_text(4321) == "1h 12m"
    assert span_text(2 * 86400 + 5) == "2d 5s"
