"""Issue 27 items 3-5, without Temporal: agent items routed to the operator by the clock
(`route_after`), the signoff blockers with their owner and command (one list behind `signoff
--check`, `status --json` and the refusal sentence), and the `steward.status/1` shape."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from steward.workflows.contracts import RunState, RunStatus, Signoff, TaskSpec, TaskState
from steward.workflows.options import StewardOptions, live_options, run_settings
from steward.workflows.policy import blockers, decisions, rulings
from steward.workflows.policy.decisions import Anomaly, StandingRules, Triage
from steward.workflows.policy.rulings import RuleRequest
from steward.workflows.run.eval_run_state import signoff_check
from steward.workflows.views import agent_status
from steward.workflows.views.eval_run_views import decision_view

NOW = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)
WINDOW = 240.0  # route_after: 4m


def later(seconds: float) -> datetime:
    return NOW + timedelta(seconds=seconds)


def sample_error(sample: int, task: str = "flaky", error_type: str = "ValueError") -> Anomaly:
    return Anomaly(
        kind="sample_error",
        task=f"evalset.py@{task}#1/steward/offline/abc",
        task_name=task,
        sample_id=str(sample),
        epoch=1,
        uuid=f"{task}-{sample}",
        log=f"/logs/{task}.eval",
        error_type=error_type,
        frame="ws/evalset.py:solve",
        detail="boom",
    )


def stalled(task: str) -> Anomaly:
    return Anomaly(
        kind="stalled_task",
        task=f"evalset.py@{task}#1/steward/offline/abc",
        task_name=task,
        uuid="attempt-3",
        detail="3 worker deaths without a completed sample",
    )


def raise_at(triage: Triage, anomalies: list[Anomaly], at: datetime, rules=None) -> None:
    decisions.absorb(triage, anomalies, rules or StandingRules(), now=at, tend=1)


def rule(triage: Triage, decision_id: str, verdict: str, role="operator", at=NOW):
    request = RuleRequest(decision_id=decision_id, verdict=verdict, role=role, by="claude")
    assert rulings.rule_problem(triage, request, StandingRules()) is None
    return rulings.apply_rule(triage, request, StandingRules(), now=at, tend=1)


# ---------------------------------------------------------------- routing by time
def test_an_agent_item_goes_to_the_operator_once_the_window_passes_without_a_collect():
    triage = Triage()
    raise_at(triage, [sample_error(1)], NOW)
    assert rulings.next_route_due(triage, WINDOW) == later(WINDOW)
    # However many tends come meanwhile (tends are event-driven), time is what counts.
    for seconds in (1, 2, 3, 60, WINDOW - 1):
        assert rulings.route_overdue(triage, later(seconds), WINDOW) == []
    assert rulings.route_overdue(triage, later(WINDOW), WINDOW) == ["d-1"]
    decision = triage.decisions[0]
    assert decision.routed and decision.for_operator and decision.routed_at == later(WINDOW)
    assert decision.routed_because == "no agent collected within 4m"
    assert rulings.next_route_due(triage, WINDOW) is None  # nothing left to route
    assert rulings.route_overdue(triage, later(10 * WINDOW), WINDOW) == []  # routed once


def test_a_collect_keeps_the_items_a_window_from_the_collect():
    triage = Triage()
    raise_at(triage, [sample_error(1)], NOW)
    triage.last_collect_at = later(200)  # an agent looked before the window ran out
    assert rulings.route_overdue(triage, later(WINDOW + 10), WINDOW) == []
    assert rulings.next_route_due(triage, WINDOW) == later(200 + WINDOW)
    assert rulings.route_overdue(triage, later(200 + WINDOW), WINDOW) == ["d-1"]


def test_a_collect_before_the_decision_was_raised_does_not_shorten_its_window():
    triage = Triage()
    triage.last_collect_at = NOW - timedelta(hours=1)
    raise_at(triage, [sample_error(1)], NOW)
    assert rulings.route_overdue(triage, later(WINDOW - 1), WINDOW) == []
    assert rulings.route_overdue(triage, later(WINDOW), WINDOW) == ["d-1"]


def test_a_routed_item_stays_the_operators_after_a_collect_and_the_agent_may_still_propose():
    triage = Triage()
    raise_at(triage, [sample_error(1)], NOW)
    rulings.route_overdue(triage, later(WINDOW), WINDOW)
    triage.last_collect_at = later(WINDOW + 5)  # the agent comes back
    assert rulings.route_overdue(triage, later(WINDOW + 6), WINDOW) == []
    decision = triage.decisions[0]
    assert decision.routed and blockers.owner_now(decision) == "operator"
    shown = decision_view(RunState(triage=triage), decision)
    assert shown["owner"] == "operator" and shown["raised_for"] == "agent"
    assert shown["routed"] and shown["routed_because"] == "no agent collected within 4m"
    assert shown["command"].startswith("steward rule d-1 ") and "--agent" not in shown["command"]
    # The agent's verdict is still a proposal: it raises the operator's own decision.
    result = rule(triage, "d-1", "rerun", role="agent", at=later(WINDOW + 7))
    assert result.effect == "proposed" and result.raised == "d-2"


def test_operator_items_and_answered_items_are_never_routed():
    triage = Triage()
    raise_at(triage, [stalled("dying"), sample_error(1)], NOW)
    rule(triage, "d-2", "dismiss")  # the operator answered the agent's item directly
    assert rulings.next_route_due(triage, WINDOW) is None
    assert rulings.route_overdue(triage, later(10 * WINDOW), WINDOW) == []


def test_the_window_is_route_after_else_two_tend_intervals():
    assert rulings.route_window(None, 600) == 1200
    assert rulings.route_window(4, 600) == 4


def test_runs_from_before_route_by_time_still_route_after_two_tends_and_say_why():
    triage = Triage()
    decisions.absorb(triage, [sample_error(1)], StandingRules(), now=NOW, tend=1)
    assert rulings.route_unattended(triage, 2, now=later(1)) == []
    assert rulings.route_unattended(triage, 3, now=later(2)) == ["d-1"]
    decision = triage.decisions[0]
    assert decision.routed_at == later(2) and "two tends" in (decision.routed_because or "")


def test_route_after_is_an_option_with_a_floor_and_follows_the_workspace():
    assert StewardOptions().route_after is None  # 2 x tend_interval
    options = StewardOptions(route_after="4s")
    assert options.route_after == 4.0
    assert run_settings(options).route_after == 4.0
    assert live_options(options, None).route_after == 4.0
    with pytest.raises(ValueError, match="at least 1s"):
        StewardOptions(route_after="500ms")
    with pytest.raises(ValueError, match="unit"):
        StewardOptions(route_after=30)


# ---------------------------------------------------------------- signoff blockers
def spec(name: str, samples: int = 4) -> TaskSpec:
    return TaskSpec(
        name=name, model="steward/offline", identifier=f"evalset.py@{name}#1", samples=samples
    )


def task(name: str, phase: str = "complete", done: int = 4) -> TaskState:
    state = TaskState(spec=spec(name), phase=phase, log=f"/logs/{name}.eval")
    state.progress.completed = done
    return state


def kinds(found: list[blockers.Blocker]) -> list[str]:
    return [b.kind for b in found]


def test_each_blocker_says_who_owns_it_and_what_clears_it():
    state = RunState(phase="stalled", tasks=[task("alpha", "running", 1), task("beta", "stalled")])
    state.tasks[1].spec = spec("beta")
    raise_at(state.triage, [sample_error(1), stalled("beta")], NOW)
    found = signoff_check(state, scan_waits=False)
    assert kinds(found) == [
        "tasks_running", "task_stalled", "class_unruled", "class_unruled",
        "decision_open", "decision_open",
    ]  # fmt: skip
    running, stall, agent_class, stall_class, agent_item, stall_item = found
    assert (running.owner, running.command) == ("run", "wait: 1 task(s) still running")
    assert running.ids == ["alpha"]
    assert stall.owner == "operator" and stall.ids == ["beta"]
    assert stall.command == "steward rule d-2 retry|give_up --by NAME"
    assert agent_class.owner == "agent" and agent_class.ids == [state.triage.classes[0].id]
    assert agent_item.owner == "agent" and agent_item.ids == ["d-1"]
    assert agent_item.command == (
        'steward rule d-1 rerun|exclude|zero|score|accept|dismiss --agent --by NAME --reason "..."'
    )
    assert "proposal the operator rules on" in agent_item.what
    assert stall_class.owner == stall_item.owner == "operator"
    # The refusal sentence is the same list, grouped as it always read.
    assert blockers.refusal_lines(found) == [
        "tasks not complete or settled: alpha, beta",
        f"error classes not ruled: {state.triage.classes[0].id}, {state.triage.classes[1].id}",
        "decisions open: d-1, d-2",
    ]


def test_a_paused_run_needs_the_operator_and_a_queued_one_only_time():
    state = RunState(phase="running", paused=True, tasks=[task("alpha", "running", 1)])
    [paused] = signoff_check(state, scan_waits=False)
    assert paused.owner == "operator" and paused.command.startswith("steward resume")
    state.paused, state.phase = False, "queued"
    [queued] = signoff_check(state, scan_waits=False)
    assert queued.owner == "run" and "queued for capacity" in queued.command


def test_a_proposal_waits_for_the_operator_and_says_whose_it_was():
    state = RunState(phase="finished", tasks=[task("flaky")], scanned_logs=["/logs/flaky.eval"])
    raise_at(state.triage, [sample_error(1)], NOW)
    rule(state.triage, "d-1", "rerun", role="agent")
    found = signoff_check(state, scan_waits=False)
    assert kinds(found) == ["class_unruled", "decision_open"]
    proposed, operator_item = found
    assert proposed.owner == "operator" and "claude proposed rerun" in proposed.what
    assert operator_item.ids == ["d-2"] and operator_item.owner == "operator"
    assert operator_item.command == "steward rule d-2 rerun|exclude|zero|score|accept|dismiss --by NAME"


def test_an_agent_stuck_sample_item_is_cleared_by_cancel_tool():
    triage = Triage()
    stuck = Anomaly(
        kind="stuck_sample", task="t", task_name="t", sample_id="1", epoch=1, uuid="s1",
        tool="bash", detail="{}",
    )  # fmt: skip
    raise_at(triage, [stuck], NOW, rules=StandingRules(stuck_cancel=True))
    assert blockers.answer_command(triage.decisions[0]) == (
        "steward rule d-1 cancel_tool --agent --by NAME"
    )


def test_rulings_to_carry_out_and_the_scan_are_the_runs_own():
    state = RunState(phase="finished", tasks=[task("flaky")])
    raise_at(state.triage, [sample_error(1)], NOW)
    rule(state.triage, "d-1", "rerun")  # ruled, not yet carried out
    state.scan_problem = "the scan model answered 401"
    found = signoff_check(state, scan_waits=False)
    assert kinds(found) == ["rulings_unapplied", "scan_pending"]
    unapplied, scan = found
    assert unapplied.owner == "run" and unapplied.command.startswith("wait: ")
    assert unapplied.what == f"rulings not yet applied: {state.triage.classes[0].id}"
    assert scan.owner == "run" and scan.command.startswith("steward tend")
    assert scan.what == "transcripts not scanned yet (last attempt: the scan model answered 401)"
    # A scan running (or about to) is waited for by the signoff: it blocks nothing.
    assert kinds(signoff_check(state, scan_waits=True)) == ["rulings_unapplied"]
    waiting = blockers.of_triage(
        Triage(), open_tasks=[], stalled_tasks=[], unapplied=["c-1"], unscanned=False,
        scan_problem=None, waiting_for=["worker w-1 of alpha (pid 7)"],
    )  # fmt: skip
    assert "waiting for worker w-1 of alpha (pid 7) to exit" in waiting[0].what
    assert "worker w-1 of alpha (pid 7)" in waiting[0].command


@pytest.mark.parametrize(
    ("phase", "clears"),
    [
        ("capturing", "wait: the run is still resolving its tasks"),
        ("signed_off", "nothing: the run is already signed off"),
        ("cancelled", "nothing: the run has ended (`steward launch` starts a new run)"),
    ],
)
def test_a_run_in_a_phase_without_signoff_says_so(phase, clears):
    [only] = signoff_check(RunState(phase=phase), scan_waits=False)
    assert (only.kind, only.owner, only.command, only.what) == ("run", "run", clears, f"the run is {phase}")
    assert blockers.refusal_lines([only]) == [f"the run is {phase}"]


def test_a_clean_finished_run_has_no_blockers():
    state = RunState(phase="finished", tasks=[task("flaky")], scanned_logs=["/logs/flaky.eval"])
    assert signoff_check(state, scan_waits=False) == []


# ---------------------------------------------------------------- steward.status/1
VIEW_KEYS = {
    "schema", "workflow_id", "workspace", "web_ui", "phase", "phase_text", "paused",
    "pause_reason", "cancel_reason", "samples", "tasks", "decisions", "signoff_blockers", "tends", "last_tend_at",
    "next_tend_at", "next_tend", "route_after", "last_collect_at", "problems", "unsupervised",
    "signed_off",
}  # fmt: skip
DECISION_KEYS = {
    "id", "kind", "owner", "raised_for", "question", "verdicts", "command", "raised_at",
    "routed", "routed_at", "routed_because", "route_at",
}  # fmt: skip
TASK_KEYS = {
    "name", "model", "state", "done", "total", "in_flight", "errors", "setpoint", "pinned",
    "attempts", "host",
}  # fmt: skip
BLOCKER_KEYS = {"kind", "what", "owner", "command", "ids"}


def status_of(state: RunState, **extra) -> RunStatus:
    return RunStatus(
        workflow_id="steward-ws-1", workspace="/ws", state=state, tend_interval=600,
        web_ui="http://127.0.0.1:8233/x", **extra,
    )  # fmt: skip


def test_the_status_view_has_the_documented_shape():
    state = RunState(
        phase="running", tasks=[task("alpha", "running", 1), task("beta")], tend_count=3,
        last_tend_at=NOW, next_tend_at=later(600),
    )  # fmt: skip
    state.tasks[0].progress.in_flight, state.tasks[0].progress.errored = 2, 1
    raise_at(state.triage, [sample_error(1, task="alpha")], NOW)
    view = agent_status.agent_status(status_of(state, route_after=WINDOW), NOW)
    assert set(view) == VIEW_KEYS and view["schema"] == "steward.status/1"
    assert view["samples"] == {"done": 6, "total": 8}  # alpha: 1 completed + 1 errored
    alpha = view["tasks"][0]
    assert set(alpha) == TASK_KEYS
    assert (alpha["name"], alpha["state"], alpha["done"], alpha["total"]) == ("alpha", "running", 2, 4)
    assert (alpha["in_flight"], alpha["errors"]) == (2, 1)
    [decision] = view["decisions"]
    assert set(decision) == DECISION_KEYS
    assert decision["owner"] == "agent" and decision["route_at"] == later(WINDOW).isoformat()
    assert all(set(b) == BLOCKER_KEYS for b in view["signoff_blockers"])
    assert view["next_tend_at"] == later(600).isoformat() and view["route_after"] == WINDOW
    # The blockers are the run's own check over the state the query returned: the same list.
    assert view["signoff_blockers"] == [
        b.model_dump(mode="json") for b in signoff_check(state, scan_waits=False)
    ]
    state.phase, state.tasks[0].phase = "finished", "complete"
    state.tasks[0].progress.in_flight = 0
    state.triage.decisions[0].answer = decisions.Ruling(verdict="dismiss", by="norah", at=NOW)
    state.triage.classes[0].state = "accepted"
    unscanned = agent_status.agent_status(status_of(state), NOW)["signoff_blockers"]
    assert [b["kind"] for b in unscanned] == ["scan_pending"]
    # A scan the run is running (or about to) is waited for by a signoff: nothing blocks.
    assert agent_status.agent_status(status_of(state, scan_waits=True), NOW)["signoff_blockers"] == []


def test_no_next_tend_where_no_timer_will_fire():
    finished = RunState(phase="finished", tasks=[task("alpha")], next_tend_at=None)
    assert finished.timer.armed  # armed, yet nothing due: a finished run waits for commands
    view = agent_status.agent_status(status_of(finished), NOW)
    assert view["next_tend_at"] is None and view["next_tend"].startswith("on an event")
    signed = RunState(
        phase="signed_off", next_tend_at=later(60), signoff=Signoff(by="norah", at=NOW)
    )
    view = agent_status.agent_status(status_of(signed), NOW)
    assert view["next_tend_at"] is None and view["next_tend"] == "none: the run has ended"
    assert view["signed_off"] == {"by": "norah", "at": NOW.isoformat()}
    assert [b["kind"] for b in view["signoff_blockers"]] == ["run"]
    disarmed = RunState(phase="running", next_tend_at=None)
    disarmed.timer.armed = False
    assert agent_status.agent_status(status_of(disarmed), NOW)["next_tend"].startswith(
        "timer disarmed"
    )


def test_problems_are_sentences():
    state = RunState(phase="running", tend_problem="observing the run failed: x")
    state.options_problem = "_steward.yaml is not valid YAML"
    assert agent_status.agent_status(status_of(state), NOW)["problems"] == [
        "the last tend stopped short: observing the run failed: x",
        "options not applied (the last good ones are kept): _steward.yaml is not valid YAML",
    ]


# ---------------------------------------------------------------- what agents read
def _preauthorized_example(text: str) -> dict:
    import yaml

    block = text.split("```yaml\n", 1)[1].split("```", 1)[0]
    return yaml.safe_load(block)


@pytest.mark.parametrize("where", ["cli/runbook.md", "activities/workspace/templates/AGENTS.md"])
def test_the_preauthorized_example_is_a_valid_option_that_rules_the_classes_it_names(where):
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / where).read_text()
    options = StewardOptions(**_preauthorized_example(text))
    rules = StandingRules(preauthorized=dict(options.preauthorized or {}))
    transient = sample_error(1).model_copy(
        update={"error_type": "OfflineSampleFailure", "frame": "worker/offline_model.py:generate"}
    )
    solver = sample_error(2)  # ValueError in ws/evalset.py:solve
    triage = Triage()
    outcome = decisions.absorb(triage, [transient, solver], rules, now=NOW, tend=1)
    assert outcome.raised == [] and len(outcome.standing) == 2  # nobody was asked
    assert [c.ruling.verdict for c in triage.classes if c.ruling] == ["rerun", "exclude"]


def test_the_runbook_is_not_hard_wrapped():
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "cli" / "runbook.md").read_text()
    prose = text.split("```")[0::2]  # outside code blocks
    for part in prose:
        for paragraph in part.split("\n\n"):
            lines = [line for line in paragraph.splitlines() if line.strip()]
            # Each line is a heading, a list item or a paragraph: none continues the one before.
            for before, line in zip(lines, lines[1:], strict=False):
                assert before.startswith("#") or line.startswith(("- ", "1.", "2.", "3.")), line
