"""One vocabulary on one real run: `status`, status.md, `status --json` and the web UI's
current details say the same phase and the same task-table columns (vocabulary.py's words),
and `collect` says each decision and event in a sentence, the decision with its command; once
the run has ended, `collect --json` calls its phase what `status` calls it."""

from __future__ import annotations

import asyncio
import re

from harness.helpers import make_workspace, temporal_client, wait_for
from harness.tables import table_of
from steward.workflows.views.collect_text import MOST_EVENTS
from steward.workflows.views.vocabulary import COLUMN_LABELS, PHASES, TASK_COLUMNS
from steward.workflows.views.web_ui import UI_COLUMNS


def _current_details(steward, workflow_id: str) -> str:
    from temporalio.api.sdk.v1 import WorkflowMetadata

    async def look() -> str:
        client = await temporal_client(steward)
        handle = client.get_workflow_handle(workflow_id)
        metadata = await handle.query("__temporal_workflow_metadata", result_type=WorkflowMetadata)
        return metadata.current_details

    return asyncio.run(look())


def test_status_page_json_ui_and_collect_say_the_same_words(steward, workspace_root):
    workspace = make_workspace(
        steward,
        workspace_root,
        {"animals": 3, "colours": 2},
        markers={"colours": " BOOM"},
        dotenv="STEWARD_OFFLINE_FAIL=BOOM\n",
        tend_interval="1h",
    )
    launched = steward.ok("launch", cwd=workspace)
    steward.wait_phase(workspace, {"finished"}, tend=True)
    steward.ok("tend", cwd=workspace)  # status.md and the web UI's details as of now

    document = steward.ok("status", cwd=workspace)
    phase = document["phase"]
    assert phase == "finished" and phase in PHASES
    keys = [c.key for c in TASK_COLUMNS if c.key]
    for task in document["tasks"]:
        assert set(keys) <= set(task), set(keys) - set(task)
    by_name = {t["name"]: t for t in document["tasks"]}
    assert by_name["colours"]["errors"] == 2 and by_name["animals"]["attempts"] >= 1

    human = steward("status", cwd=workspace)  # 80 columns wide: every header whole
    assert human.code == 0, human.stderr
    assert f"state: {phase}" in human.stdout
    assert table_of(human.stdout, "task / model")[0] == ["task / model", *COLUMN_LABELS[2:]]
    assert "tends so far" in human.stdout and "tend #" not in human.stdout

    page = (workspace / "status.md").read_text()
    assert page.startswith(f"# Run status: {phase}\n")
    page_table = table_of(page, "task")
    assert page_table[0] == list(COLUMN_LABELS)
    assert ["colours", "steward/offline", "complete", "2/2", "2", "0", "2", "1"] in page_table

    # The suite suggests continue-as-new at 150 events: a query that lands as the execution
    # hands over reads its last words ("continued as new"); the latest execution's are wanted.
    def latest_details() -> str | None:
        details = _current_details(steward, launched["workflow_id"])
        return None if details.startswith("**continued as new**") else details

    details = wait_for(latest_details, timeout=30, what="the latest execution's details")
    assert details.startswith(f"**{phase}** · "), details
    ui_table = table_of(details, "task")
    assert ui_table[0] == list(UI_COLUMNS) and set(UI_COLUMNS) <= set(COLUMN_LABELS)
    assert ["animals", "complete", "3/3", "0", "0", "3"] in ui_table, ui_table

    # collect, for people: one sentence per decision (with its command) and per event.
    seen = steward.ok("collect", "--since", "0", cwd=workspace)
    assert seen["phase"] == phase and seen["decisions"], seen
    decision = seen["decisions"][0]
    said = steward("collect", "--since", "0", cwd=workspace)
    assert said.code == 0, said.stderr
    text = " ".join(said.stdout.split())  # the terminal's wrapping undone
    assert text.startswith(f"Run {phase} ({PHASES[phase]}): {len(seen['decisions'])} open")
    assert f"Decision {decision['id']} (the agent's): " in text
    assert f"Answer: `{decision['command']}`" in text
    assert "The definition resolved to animals, colours (5 samples)" in text
    assert "Task colours is complete (2 samples)." in text
    assert "Next: answer each decision with its command" in text
    assert "{" not in said.stdout and "':" not in said.stdout  # no Python dict, anywhere
    events = [line for line in said.stdout.splitlines() if re.match(r"#\d+ ", line)]
    # (the run may have journalled more since the --json collect: the headline counts them)
    told = int(re.search(r"(\d+) new event\(s\)", text)[1])
    assert told >= len(seen["events"]) and len(events) == min(told, MOST_EVENTS), events

    # Ended: collect --json says the phase status says, not a word of its own.
    steward.ok("cancel", "--reason", "vocabulary checked", cwd=workspace)
    ended = steward.ok("status", cwd=workspace)["phase"]
    assert ended == "cancelled"
    assert steward.ok("collect", cwd=workspace)["phase"] == ended
    last = steward("collect", "--since", "0", cwd=workspace)
    assert "The run was cancelled (vocabulary checked)." in " ".join(last.stdout.split())
    assert "Next: nothing; the run has ended (cancelled)." in " ".join(last.stdout.split())
