"""One vocabulary (workflows/views/vocabulary.py): every phase and task state has a meaning,
and status.md, the web UI's details, `status --json` and `status` say the task table's columns
in its words, from a real RunState (no Temporal)."""

from __future__ import annotations

import io
import typing
from datetime import UTC, datetime

from rich.console import Console

from harness.tables import table_of
from steward.cli import output, render
from steward.workflows.contracts import RunPhase, RunState, RunStatus, TaskPhase
from steward.workflows.contracts.state import TaskState
from steward.workflows.contracts.tasks import Progress, TaskSpec
from steward.workflows.policy.provider_budget import ProviderBudget
from steward.workflows.views import web_ui
from steward.workflows.views.agent_status import agent_status
from steward.workflows.views.status_view import connection_lines, cost_line, render_status_markdown
from steward.workflows.views.vocabulary import (
    COLUMN_LABELS,
    PHASES,
    TASK_COLUMNS,
    TASK_STATES,
    TERMS,
    tends_text,
)

NOW = datetime(2026, 12, 5, 12, 0, tzinfo=UTC)


def _task(name: str, identifier: str, phase: str, **progress) -> TaskState:
    spec = TaskSpec(
        name=name, model="steward/offline", identifier=identifier, samples=6, epochs=1,
        registry_name=name, args_hash="0",
    )  # fmt: skip
    return TaskState(spec=spec, phase=phase, progress=Progress(**progress), attempts=2,
                     max_samples=12, pinned=name == "b")  # fmt: skip


def _status(phase: str = "running") -> RunStatus:
    state = RunState(
        phase=phase,
        tend_count=3,
        tasks=[
            _task("a", "f.py@a#1/m/x", "running", total=6, completed=2, errored=1, in_flight=3),
            _task("b", "f.py@b#2/m/x", "complete", total=6, completed=6),
        ],
    )
    state.last_tend_at = NOW
    return RunStatus(
        workflow_id="steward-ws-1", workspace="/ws", state=state, tend_interval=600,
        web_ui="http://127.0.0.1:8233/x",
    )  # fmt: skip


def test_every_phase_and_task_state_has_a_meaning():
    assert set(typing.get_args(RunPhase)) | {"paused"} == set(PHASES)
    assert set(typing.get_args(TaskPhase)) <= set(TASK_STATES)  # + how ended runs say them
    assert all(meaning.strip() for meaning in [*PHASES.values(), *TASK_STATES.values()])
    labels = [c.label for c in TASK_COLUMNS]
    assert len(set(labels)) == len(labels) and "in flight" in labels and "setpoint" in labels
    for term in ("tend", "setpoint", "ceiling", "reserved capacity", "decision", "signoff"):
        assert TERMS[term].strip()


def test_status_md_web_ui_and_json_say_the_same_columns():
    status = _status()
    page = render_status_markdown(status)
    header = next(line for line in page.splitlines() if line.startswith("| task"))
    assert header == "| " + " | ".join(COLUMN_LABELS) + " |"
    assert "| a | steward/offline | running | 3/6 | 1 | 3 | 12 | 2 |" in page
    assert "| b | steward/offline | complete | 6/6 | 0 | 0 | 12 pinned | 2 |" in page
    assert "(3 tends so far)" in page and "tend #" not in page

    details = web_ui.current_details("/ws", status.state, "next tend on an event")
    assert set(web_ui.UI_COLUMNS) <= set(COLUMN_LABELS)
    assert table_of(details, "task")[0] == list(web_ui.UI_COLUMNS)
    assert "3 tends so far" in details and "tend #" not in details

    document = agent_status(status, NOW)
    keys = {c.key for c in TASK_COLUMNS if c.key}
    for task in document["tasks"]:
        assert keys <= set(task), keys - set(task)
    assert document["tasks"][1]["setpoint"] == 12 and document["tasks"][1]["pinned"] is True
    assert document["tasks"][0]["attempts"] == 2
    assert document["phase"] in PHASES


def test_status_says_the_columns_in_the_same_words(monkeypatch):
    buffer = io.StringIO()
    monkeypatch.setattr(output, "console", Console(file=buffer, width=120))
    monkeypatch.setattr(render, "console", output.console)
    render.print_status(_status())
    said = buffer.getvalue()
    for label in COLUMN_LABELS[2:]:
        assert label in said, label
    for old in ("flight " , "tries", "max_samples", "tend #"):
        assert old not in said.replace("in flight", ""), old
    assert tends_text(3) in said


def test_terms_are_said_where_they_are_used():
    state = _status().state
    state.cost.gi_minutes = 3.0
    assert "Gi·min (sandbox memory × time held)" in (cost_line(state) or "")
    state.providers["http://x"] = ProviderBudget(
        endpoint="http://x", limit=30, shares={"w1": 12, "w2": 10}
    )
    (line,) = connection_lines(state)
    assert "each task worker's ceiling 12/10" in line


def test_tasks_show_identifiers_that_differ():
    ids = [
        "/ws/definition.py@animals#a1b2c3d4e5f6/steward/offline/d065b6e64c38",
        "/ws/definition.py@colours#a1b2c3d4e5f6/steward/offline/d065b6e64c38",
        "/ws/definition.py@animals#99887766aabb/steward/offline/d065b6e64c38",
    ]
    shown = render.short_ids(ids)
    assert len(set(shown)) == 3, shown
    assert all(len(s) <= 40 for s in shown), shown
    assert shown[0].startswith("animals#") and shown[1].startswith("colours#")
    # Identifiers that differ only in their last hash show it.
    tail = ["/ws/d.py@t#aa/m/0123456789ab", "/ws/d.py@t#aa/m/ba9876543210"]
    assert len(set(render.short_ids(tail))) == 2
    assert render.short_ids(["plain"]) == ["plain"]


def test_the_readme_glossary_says_the_same_words():
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    glossary = readme[readme.index("### Words Steward uses") :]
    glossary = glossary[: glossary.index("\n### ", 1)]
    for word in [*PHASES, *TASK_STATES]:
        assert f"`{word}`" in glossary, word
    for column in TASK_COLUMNS[2:]:
        assert f"| {column.label} | `{column.key}`" in glossary, column.label
    for term in ("tend", "setpoint", "ceiling", "reserved capacity", "decision", "signoff"):
        assert f"**{term}**" in glossary, term
