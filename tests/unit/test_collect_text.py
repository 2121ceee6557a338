"""`steward collect` for people (workflows/views/collect_text.py): one sentence per event and per
decision, the decision's command, the next step; no event is said as a Python dict."""

from __future__ import annotations

import ast
from pathlib import Path

from steward.workflows.views.collect_text import (
    EVENT_SENTENCES,
    MOST_EVENTS,
    collect_lines,
    decision_sentence,
    event_sentence,
    next_step,
)

REPO = Path(__file__).resolve().parents[2]


def _journalled_events() -> set[str]:
    """Every event name the run's workflow journals with a literal name."""
    names = set()
    for path in (REPO / "workflows").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "journal"
                and node.args
                and isinstance(node.args[0], ast.Constant)
            ):
                names.add(node.args[0].value)
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "RunEvent":
                for keyword in node.keywords:
                    if keyword.arg == "event" and isinstance(keyword.value, ast.Constant):
                        names.add(keyword.value.value)
    return names


def test_every_journalled_event_has_a_sentence():
    names = _journalled_events()
    assert len(names) > 50, names  # the finder found the journal's calls
    missing = names - set(EVENT_SENTENCES)
    assert not missing, f"no sentence for {sorted(missing)}"
    for name in EVENT_SENTENCES:
        said = event_sentence({"seq": 1, "at": "x", "event": name})
        assert said and "\n" not in said and "{" not in said and said[-1] in ".?!:", (name, said)


def test_an_event_is_said_with_its_fields_in_words():
    captured = {
        "seq": 2, "at": "2026-12-05T12:00:00+00:00", "event": "captured",
        "tasks": ["animals", "colours"], "samples": 12, "log_dir": "/ws/logs",
        "sandbox_budget": None,
    }  # fmt: skip
    assert event_sentence(captured) == (
        "The definition resolved to animals, colours (12 samples); logs go to /ws/logs."
    )
    assert event_sentence({"event": "worker exited", "worker": "w0001", "how": "exit 0"}) == (
        "Task worker w0001 exited (exit 0)."
    )
    exited = {"event": "worker exited", "worker": "w0001",
              "how": "worker w0001 (pid 10386) exited with code 0"}  # fmt: skip
    assert event_sentence(exited) == "Task worker w0001 exited with code 0."
    assert event_sentence({"event": "worker exited", "worker": "w0001"}) == (
        "Task worker w0001 exited."
    )
    assert event_sentence({"event": "cancelled", "reason": "wrong model", "by": "norah"}) == (
        "The run was cancelled (wrong model)."
    )
    unknown = event_sentence({"event": "new thing", "held": {"memory": 2.0}, "ids": [1, 2]})
    assert unknown == "New thing: held memory 2; ids 1, 2."


def test_a_decision_is_one_sentence_with_the_command_that_answers_it():
    decision = {
        "id": "d3", "owner": "agent", "routed": False, "verdicts": ["rerun", "exclude"],
        "question": "2 samples of flaky errored with RuntimeError",
        "command": 'steward rule d3 rerun|exclude --agent --by NAME --reason "..."',
    }  # fmt: skip
    said = decision_sentence(decision)
    assert said == (
        "Decision d3 (the agent's): 2 samples of flaky errored with RuntimeError. Answer: "
        '`steward rule d3 rerun|exclude --agent --by NAME --reason "..."`'
    )
    routed = decision_sentence(
        {**decision, "owner": "operator", "routed": True, "routed_because": "no agent looked",
         "command": "steward rule d3 rerun|exclude --by NAME"}
    )  # fmt: skip
    assert "routed to the operator: no agent looked" in routed
    assert routed.endswith("`steward rule d3 rerun|exclude --by NAME`")


def test_collect_says_headline_decisions_events_and_the_next_step():
    events = [
        {"seq": 1, "event": "launched", "by": "norah", "definition": "definition.py"},
        {"seq": 2, "event": "paused", "by": "norah", "reason": "quota"},
        {"seq": 3, "event": "finished", "samples": 8, "tasks": 2},
    ]
    decision = {"id": "d1", "owner": "operator", "question": "Rerun?", "verdicts": ["rerun"],
                "command": "steward rule d1 rerun --by NAME"}  # fmt: skip
    lines = collect_lines(
        {"phase": "finished", "since": 0, "cursor": 3, "decisions": [decision], "events": events}
    )
    assert lines[0].startswith("Run finished (every task is complete")
    assert "1 open decision(s), 3 new event(s) since 0 (cursor now 3)" in lines[0]
    assert "Decision d1 (the operator's): Rerun? Answer: `steward rule d1 rerun --by NAME`" in lines
    assert "#1 The run was launched by norah from definition.py." in lines
    assert "#2 The run was paused by norah (quota). Next: `steward resume` continues." in lines
    assert any(line.startswith("#3 The run finished") and "signoff --check" in line for line in lines)
    assert lines[-1].startswith("Next: answer each decision")
    assert not any("{" in line or "'" in line.replace("operator's", "") for line in lines)

    # A later event settles an earlier one's step; an ended run has no steps at all.
    resumed = [*events[:2], {"seq": 3, "event": "resumed", "by": "norah"}]
    assert next_step(resumed[1], resumed[2:]) is None
    ended = collect_lines(
        {"phase": "signed_off", "since": 0, "cursor": 3, "decisions": [], "events": events}
    )
    assert not any(" Next: " in line for line in ended[1:-1])
    assert ended[-1].startswith("Next: nothing; the run has ended (signed_off)")
    routed = collect_lines(
        {"phase": "running", "decisions": [decision], "events": [], "unattended": True,
         "policies": ["rerun a transient provider error once"]}
    )  # fmt: skip
    assert "no agent collected in time" in routed[1]
    assert "Standing rule for agents: rerun a transient provider error once" in routed
    running = collect_lines({"phase": "running", "decisions": [], "events": []})
    assert running[-1] == (
        "Next: nothing needs you now; `steward wait --by NAME` returns when something does."
    )


def test_collect_says_the_newest_events_and_how_many_it_left_out():
    events = [{"seq": n, "event": "tend", "tend": n} for n in range(1, MOST_EVENTS + 6)]
    lines = collect_lines({"phase": "running", "decisions": [], "events": events})
    assert "(5 earlier event(s) not shown; `steward collect --json` has them all)" in lines
    said = [line for line in lines if line.startswith("#")]
    assert len(said) == MOST_EVENTS and said[-1].startswith(f"#{MOST_EVENTS + 5} Tend ")
