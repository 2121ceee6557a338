"""A run whose workspace is deleted stops its workers, ends `orphaned` at its next tend (its
timer stops with it) and can then be deleted from the list."""

from __future__ import annotations

import asyncio
import shutil

from harness.helpers import (
    fetch_history,
    make_workspace,
    pid_alive,
    replay,
    temporal_client,
    wait_for,
)


def test_a_run_whose_workspace_is_gone_ends_orphaned(steward, workspace_root):
    from temporalio.client import WorkflowExecutionStatus

    from steward.workflows.run.eval_run import EvalRun

    workspace = make_workspace(
        steward,
        workspace_root,
        {"slow": 30},
        options="samples_ramp: [1, 1]\ntend_interval: 1h\n",
        dotenv="STEWARD_OFFLINE_DELAY=2\n",
    )
    launched = steward.ok("launch", cwd=workspace)
    workflow_id = launched["workflow_id"]
    (pid,) = [w["pid"] for w in launched["state"]["workers"].values()]
    shutil.rmtree(workspace)

    async def tend_and_wait():
        client = await temporal_client(steward)
        handle = client.get_workflow_handle(workflow_id)
        try:  # its worker's watch may have woken the tend already: the run then has ended
            await handle.execute_update(EvalRun.tend)
        except Exception:  # noqa: BLE001 - the update finds the run completed
            pass
        for _ in range(100):
            if (await handle.describe()).status != WorkflowExecutionStatus.RUNNING:
                break
            await asyncio.sleep(0.2)
        described = await handle.describe()
        return described.status, await handle.query(EvalRun.status)

    ended, status = asyncio.run(tend_and_wait())
    assert ended == WorkflowExecutionStatus.COMPLETED  # no timer keeps it going
    assert status.state.phase == "orphaned"
    assert "no longer exists" in status.state.error
    assert not pid_alive(pid)
    wait_for(
        lambda: any(
            r["workflow_id"] == workflow_id and r["state"] == "orphaned"
            for r in steward.ok("runs")["runs"]
        ),
        timeout=30,
        what="the run listed as orphaned",
    )
    replay(fetch_history(steward, workflow_id), record_as="eval_run_orphan_v1")
    assert steward.ok("runs", "delete", workflow_id)["deleted"] == workflow_id
