"""The run in the Temporal web UI: a static summary and details at start (workspace,
definition, tasks), current details rewritten each tend (state, samples, open decisions and the
next step first, then the tasks), activities and timers that say what they do, no marker of a
retired patch flag in a new run's history, and links (`status`, `launch`, `doctor`) to the run's
page and to a list of the runs only. Read through Temporal's API, as the UI reads them; with
Chromium installed, the pages are also rendered headless and their text checked, and the
screenshots kept in tests/artifacts/ (or $STEWARD_TEST_ARTIFACTS)."""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
from pathlib import Path

import pytest

from harness.helpers import fetch_history, make_workspace, replay, temporal_client
from steward.workflows.names import WorkflowType
from steward.workflows.run import eval_run_versions as versions
from steward.workflows.views.web_ui import UI_COLUMNS

ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts"
CELLS = re.compile(r"\s{2,}")  # the aligned columns' separator (a cell has single spaces)


def _patch_markers(history) -> list[str]:
    ids = []
    for event in history.events:
        if event.HasField("marker_recorded_event_attributes"):
            details = event.marker_recorded_event_attributes.details
            if "patch-data" in details:
                ids.append(json.loads(details["patch-data"].payloads[0].data)["id"])
    return ids


def _open(page, url: str, error: type[Exception]) -> None:
    """Go to `url`. The UI's own server answers a request with its 500 "Internal Error" page now
    and then on a loaded machine (seen once in a full suite): such a page is loaded again."""
    for _ in range(5):
        response = page.goto(url)
        try:
            failed = (response is not None and response.status >= 500) or "Internal Error" in (
                page.inner_text("body", timeout=2000)
            )
        except error:
            failed = False
        if not failed:
            return
        page.wait_for_timeout(2000)


def _recover(page, url: str, error: type[Exception]) -> None:
    """The same for a page that showed the error page while it loaded its data."""
    try:
        if "Internal Error" in page.inner_text("body", timeout=2000):
            _open(page, url, error)
    except error:
        pass


def _details(page, error: type[Exception], workspace: str) -> tuple[str, str]:
    """The rendered current details (the frame that says the next step) and its first
    monospace block, or empty strings while they are not there."""
    for frame in page.frames:
        try:
            text = frame.inner_text("body", timeout=2000)
            if "Next:" in text and workspace in text:
                return text, frame.locator("pre").first.inner_text(timeout=2000)
            if "continued as new" in text and "Latest Execution" in text:
                return text, ""
        except error:  # detached as the UI refreshed it
            continue
    return "", ""


def test_the_run_page_says_what_steward_knows(steward, workspace_root):
    from temporalio.api.sdk.v1 import WorkflowMetadata
    from temporalio.client import WorkflowExecutionStatus

    # beta-2 errors: the run finishes with one open decision about it.
    workspace = make_workspace(
        steward, workspace_root, {"alpha": 3, "beta": 2}, dotenv="STEWARD_OFFLINE_FAIL=beta-2\n"
    )
    launched = steward.ok("launch", cwd=workspace)
    steward.wait_phase(workspace, {"finished"})
    steward.ok("tend", cwd=workspace)

    async def look():
        client = await temporal_client(steward)
        handle = client.get_workflow_handle(launched["workflow_id"])
        # The static summary is the first run's (continue-as-new does not carry it over).
        first = client.get_workflow_handle(launched["workflow_id"], run_id=launched["run_id"])
        described = await first.describe()
        metadata = await handle.query("__temporal_workflow_metadata", result_type=WorkflowMetadata)
        # The execution launch's link names: its last details, once it continued as new.
        first_details = None
        if described.status == WorkflowExecutionStatus.CONTINUED_AS_NEW:
            first_details = (
                await first.query("__temporal_workflow_metadata", result_type=WorkflowMetadata)
            ).current_details
        history = await first.fetch_history()
        summaries = set()
        for event in history.events:
            if event.HasField("user_metadata") and event.user_metadata.HasField("summary"):
                [text] = await client.data_converter.decode([event.user_metadata.summary], [str])
                summaries.add(text)
        others = [w.workflow_type async for w in client.list_workflows() if w.workflow_type]
        return (
            await described.static_summary(),
            await described.static_details(),
            metadata.current_details,
            summaries,
            history,
            others,
            first_details,
        )

    summary, details, current, summaries, history, types, first_details = asyncio.run(look())
    assert summary.startswith("Steward run · ws · 2 tasks")
    assert str(workspace) in details
    assert re.search(r"^alpha\s{2,}steward/offline\s{2,}3 × 1$", details, re.M), details
    # First the state, samples done of planned, open decisions and the next step.
    head, step = current.splitlines()[:2]
    assert head == "**finished** · 5 of 5 samples done · 1 open decision", current
    assert step.startswith("**Next:** answer the open decisions"), current
    assert "- **d-1** (agent): " in current and "`steward rule d-1 <" in current
    assert str(workspace) in current
    assert any(s.startswith("observe ") for s in summaries), summaries
    assert "write status.md and the journal" in summaries
    assert any(s.startswith("watch worker w0001") for s in summaries), summaries

    # No marker of a retired flag: the markers left are those a release reads or records.
    markers = _patch_markers(history)
    retired = {f.id for f in (*versions.AT_START, versions.AT_FIRST_TEND)}
    kept = {versions.SUPPORTED_SINCE, versions.RELEASE_MARKER} | {f.id for f in versions.LIVE}
    assert markers and set(markers) <= kept and not set(markers) & retired, markers
    # ... and the history replays (recorded as the kind a new run of this release makes).
    replay(history, record_as="eval_run_retired_flags_unmarked")  # STEWARD_RECORD_HISTORY=1

    # The links: the run's page (its latest execution) on its User Metadata tab, and the runs
    # only. A run continues as new (this session's server suggests it early): the execution
    # launch's link names then says where the run went on.
    assert launched["web_ui"].endswith(f"/{launched['run_id']}/user-metadata")
    if first_details is not None:
        assert first_details.startswith("**continued as new**"), first_details
        assert "Latest Execution" in first_details and "5 of 5 samples done" in first_details
    now = steward.ok("status", cwd=workspace)
    said = steward("status", cwd=workspace)
    assert said.code == 0, said.stderr
    page_url = now["web_ui"]
    # (Each names the execution it found: the run may continue as new between the two.)
    execution_page = rf"/workflows/{launched['workflow_id']}/[\w-]+/user-metadata"
    assert re.search(execution_page + "$", page_url), page_url
    assert re.search(r"web UI:\s*\S+" + execution_page, said.stdout), said.stdout
    page_md = (workspace / "status.md").read_text()  # the run writes it: its own execution's
    assert re.search(execution_page, page_md), page_md
    lines = said.stdout.splitlines()
    runs_url = next(
        line.split(": ", 1)[1] if ": " in line else lines[i + 1]
        for i, line in enumerate(lines)
        if line.startswith("all runs:")
    ).strip()
    assert f'WorkflowType="{WorkflowType.EVAL_RUN}"' in runs_url, runs_url
    doctor = steward.ok("doctor")
    [ui_check] = [c for c in doctor["checks"] if c["name"] == "web UI"]
    assert ui_check["detail"] == runs_url
    assert set(types) - {WorkflowType.EVAL_RUN}, types  # the list without it has other kinds

    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        pytest.skip(
            "Chromium is not installed (Debian: apt-get install chromium); API checks passed"
        )
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright (the dev extra)")
    artifacts = Path(os.environ.get("STEWARD_TEST_ARTIFACTS") or ARTIFACTS)
    artifacts.mkdir(parents=True, exist_ok=True)
    shot, list_shot = artifacts / "web-ui-run.png", artifacts / "web-ui-runs.png"
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            _open(page, page_url, sync_api.Error)  # straight onto User Metadata
            # The current details render as Markdown in a frame of their own (which the UI
            # replaces when it refreshes them: read it again until it holds still).
            text = table = ""
            for _ in range(60):
                page.wait_for_timeout(1000)
                text, table = _details(page, sync_api.Error, str(workspace))
                if table:
                    break
                if text:  # it continued as new meanwhile: the link status prints now
                    page_url = steward.ok("status", cwd=workspace)["web_ui"]
                    _open(page, page_url, sync_api.Error)
                else:
                    _recover(page, page_url, sync_api.Error)
            page.screenshot(path=str(shot), full_page=True)
            history_text = ""
            history_url = page_url.removesuffix("/user-metadata") + "/history?sort=ascending"
            _open(page, history_url, sync_api.Error)
            for _ in range(30):
                page.wait_for_timeout(1000)
                _recover(page, history_url, sync_api.Error)
                history_text = page.inner_text("body")
                if "WorkflowExecutionStarted" in history_text and "core_patch" in history_text:
                    break
            _open(page, runs_url, sync_api.Error)
            rows = page.locator('[data-testid="workflows-summary-configurable-table-row"]')
            for _ in range(30):
                page.wait_for_timeout(1000)
                _recover(page, runs_url, sync_api.Error)
                if any(launched["workflow_id"] in r for r in rows.all_inner_texts()):
                    break
            listed = rows.all_inner_texts()
            page.screenshot(path=str(list_shot), full_page=True)
        finally:
            browser.close()
    print(f"web UI screenshots: {shot} {list_shot}")
    # What a person reads first: state, samples, decisions, the next step, as rendered.
    assert "finished · 5 of 5 samples done · 1 open decision" in text, text
    assert "Next: answer the open decisions" in text
    # The per-task table: aligned columns, each cell apart from the next.
    rows_seen = [CELLS.split(line.strip()) for line in table.splitlines() if line.strip()]
    assert rows_seen[0] == list(UI_COLUMNS), table
    assert ["alpha", "complete", "3/3", "0", "0"] == rows_seen[1][:5], table
    assert ["beta", "complete", "2/2", "1", "0"] == rows_seen[2][:5], table
    # The rendered history (of the execution the page showed) holds the few markers its
    # recorded history has, none of a retired flag: not one per retired flag.
    shown = _patch_markers(fetch_history(steward, launched["workflow_id"], page_url.split("/")[-2]))
    assert shown and not set(shown) & retired, shown
    assert history_text.count("core_patch") == len(shown), history_text[:2000]
    # The runs-only list: this run, and nothing but runs.
    assert any(launched["workflow_id"] in row for row in listed), listed
    assert all(WorkflowType.EVAL_RUN in row for row in listed), listed
    assert shot.is_file() and shot.stat().st_size > 10_000
    assert list_shot.is_file() and list_shot.stat().st_size > 10_000
