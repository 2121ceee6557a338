"""What the Temporal web UI's run page says, from a real RunState (no Temporal, no browser;
tests/e2e/test_web_ui.py renders it): the first lines say the state, samples, open decisions
and the next step for each kind of run; tables are aligned monospace blocks (the UI pads no
Markdown table cell); the links Steward prints name the run's User Metadata tab and the runs."""

from __future__ import annotations

import re
from urllib.parse import parse_qs, urlsplit

from steward.worker.connect import RUNS_QUERY, Target, run_url, runs_url
from steward.workflows.contracts import RunState
from steward.workflows.contracts.state import TaskState
from steward.workflows.contracts.tasks import Progress, TaskSpec
from steward.workflows.names import WorkflowType
from steward.workflows.views import web_ui


def _task(name: str, phase: str, **progress) -> TaskState:
    spec = TaskSpec(
        name=name, model="steward/offline", identifier=f"f.py@{name}#1/m/x", samples=40,
        epochs=1, registry_name=name, args_hash="0",
    )  # fmt: skip
    return TaskState(spec=spec, phase=phase, progress=Progress(**progress), max_samples=8)


def _state(phase: str = "running", **fields) -> RunState:
    return RunState(
        phase=phase,
        tend_count=4,
        tasks=[
            _task("animals", "running", total=40, completed=12, in_flight=4),
            _task("a_task_name_longer_than_the_pane_allows", "pending", total=40, errored=2),
        ],
        **fields,
    )


def test_the_first_lines_say_state_samples_and_the_next_step():
    details = web_ui.current_details("/ws", _state(), "next tend at 12:00:00 UTC (every 10m)")
    head, step = details.splitlines()[:2]
    # "14 of 80", never "14/80" (which the UI turns into a superscript fraction).
    assert head == "**running** · 14 of 80 samples done"
    assert step == "**Next:** nothing needs you; next tend at 12:00:00 UTC (every 10m)"
    assert "Workspace `/ws` · 4 tends so far" in details

    ended = web_ui.current_details("/ws", _state("cancelled", cancel_reason="wrong model"), "")
    assert ended.splitlines()[1].startswith("**Next:** nothing: the run has ended")
    assert "**Cancelled:** wrong model" in ended
    finished = web_ui.current_details("/ws", _state("finished"), "")
    assert "`steward signoff --check`" in finished.splitlines()[1]
    paused = web_ui.current_details("/ws", _state(paused=True, pause_reason="quota"), "")
    assert paused.startswith("**paused**") and "`steward resume`" in paused.splitlines()[1]
    assert "**Paused:** quota" in paused


def test_the_task_table_is_an_aligned_block_with_each_cell_apart():
    details = web_ui.current_details("/ws", _state(), "")
    lines = details.splitlines()
    start = lines.index("```")
    block = lines[start + 1 : lines.index("```", start + 1)]
    rows = [re.split(r"\s{2,}", line) for line in block]
    assert rows[0] == list(web_ui.UI_COLUMNS)
    assert rows[1] == ["animals", "running", "12/40", "0", "4", "8"]
    assert rows[2][:4] == ["a_task_name_longe…", "pending", "2/40", "2"]
    # Aligned: every column starts at the same place on every line.
    starts = [[m.start() for m in re.finditer(r"(?:^|(?<=  ))\S", line)] for line in block]
    assert starts[0] == starts[1] == starts[2], block
    assert max(len(line) for line in block) <= 66  # what the half-page pane shows at 1400 px
    assert "|" not in "".join(block)


def test_a_handed_over_execution_says_where_the_run_went_on():
    said = web_ui.handed_over("/ws", _state())
    assert said.startswith("**continued as new**") and "Latest Execution" in said
    assert "14 of 80 samples done" in said


def test_the_links_name_the_user_metadata_tab_and_the_runs_only():
    target = Target("127.0.0.1:7233", "default", embedded=True, ui_url="http://127.0.0.1:8233")
    assert run_url(target, "steward-ws-1") == (
        "http://127.0.0.1:8233/namespaces/default/workflows/steward-ws-1"
    )
    assert run_url(target, "steward-ws-1", "r-1") == (
        "http://127.0.0.1:8233/namespaces/default/workflows/steward-ws-1/r-1/user-metadata"
    )
    link = runs_url(target)
    assert link is not None and " " not in link
    parts = urlsplit(link)
    assert parts.path == "/namespaces/default/workflows"
    assert parse_qs(parts.query)["query"] == [RUNS_QUERY]
    assert f'WorkflowType="{WorkflowType.EVAL_RUN}"' in RUNS_QUERY
    assert runs_url(Target("x:7233", "default", embedded=False, ui_url=None)) is None
