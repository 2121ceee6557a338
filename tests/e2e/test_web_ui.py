"""The run in the Temporal web UI: a static summary and details at start (workspace,
definition, tasks), current details rewritten each tend (phase, per-task progress, next tend),
and activities and timers that say what they do. Read through Temporal's API, as the UI reads
them; with Chromium installed, the run's page is also rendered headless and its text checked
(screenshot kept as a test artifact)."""

from __future__ import annotations

import asyncio
import os
import shutil
from pathlib import Path

import pytest

from harness.helpers import make_workspace, temporal_client


def test_the_run_page_says_what_steward_knows(steward, workspace_root):
    from temporalio.api.sdk.v1 import WorkflowMetadata

    workspace = make_workspace(steward, workspace_root, {"alpha": 3, "beta": 2})
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
        history = await first.fetch_history()
        summaries = set()
        for event in history.events:
            if event.HasField("user_metadata") and event.user_metadata.HasField("summary"):
                [text] = await client.data_converter.decode([event.user_metadata.summary], [str])
                summaries.add(text)
        return (
            await described.static_summary(),
            await described.static_details(),
            metadata.current_details,
            summaries,
        )

    summary, details, current, summaries = asyncio.run(look())
    assert summary == "Steward run · ws, 2 task(s)"
    assert str(workspace) in details and "| alpha | steward/offline | 3 × 1 |" in details
    assert current.startswith("**finished** · 5/5 samples") and str(workspace) in current
    assert "| alpha | complete | 3/3 |" in current and "| beta | complete | 2/2 |" in current
    assert any(s.startswith("observe ") for s in summaries), summaries
    assert "write status.md and the journal" in summaries
    assert any(s.startswith("watch worker w0001") for s in summaries), summaries

    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        pytest.skip(
            "Chromium is not installed (Debian: apt-get install chromium); API checks passed"
        )
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright (the dev extra)")
    artifacts = Path(os.environ.get("STEWARD_TEST_ARTIFACTS", workspace_root))
    artifacts.mkdir(parents=True, exist_ok=True)
    shot = artifacts / "web-ui-run.png"
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1400})
            page.goto(launched["web_ui"])
            page.get_by_text("User Metadata").first.click(timeout=60_000)
            # The current details (each run's; a continued run has no static summary), which
            # the UI renders as Markdown in frames of their own.
            text = ""
            for _ in range(60):
                page.wait_for_timeout(1000)
                text = "\n".join(frame.inner_text("body") for frame in page.frames)
                if f"Workspace {workspace}" in text and "complete" in text:
                    break
            page.screenshot(path=str(shot), full_page=True)
        finally:
            browser.close()
    assert f"Workspace {workspace}" in text and "finished" in text and "complete" in text
    assert shot.is_file() and shot.stat().st_size > 10_000
