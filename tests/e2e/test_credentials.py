"""Credentials reach the workers: a key only in the launching shell is refused (the workers,
started by the Steward worker, would never see it); in .env, or with --no-env-check, the launch
goes ahead; no secret value lands in workflow history, the journal or status.md."""

from __future__ import annotations

import asyncio
import os

from harness.helpers import Steward, fetch_history, history_plaintext, make_workspace, replay

SIM_MODEL = "openai-api/sim/echo"
SECRET = "sk-sim-7f3a9c-do-not-leak"


def _history_text(steward: Steward, workflow_id: str, run_id: str | None = None) -> str:
    return history_plaintext(fetch_history(steward, workflow_id, run_id))


def _credential_checks(steward: Steward, prefix: str) -> list[str]:
    from temporalio.client import Client

    async def go() -> list[str]:
        client = await Client.connect(f"127.0.0.1:{steward.env['STEWARD_TEMPORAL_PORT']}")
        return [
            w.id
            async for w in client.list_workflows("WorkflowType = 'CredentialsCheck'")
            if w.id.startswith(prefix)
        ]

    return asyncio.run(go())


def test_a_key_only_in_the_shell_is_refused_and_accepted_from_dotenv(
    steward: Steward, workspace_root, simulator
):
    assert "SIM_API_KEY" not in os.environ and "SIM_API_KEY" not in steward.env
    # The transcripts are scanned by the offline model (the simulator only echoes).
    workspace = make_workspace(
        steward,
        workspace_root,
        {"chat": 2},
        model=SIM_MODEL,
        options="scan_model: steward/offline\n",
    )
    shell = {"SIM_API_KEY": SECRET, "SIM_BASE_URL": f"{simulator}/v1"}

    refused = steward("launch", cwd=workspace, env=shell)
    assert refused.code == 2, refused.stdout + refused.stderr
    assert "SIM_API_KEY" in refused.stderr and "SIM_BASE_URL" in refused.stderr
    assert f"{workspace}/.env" in refused.stderr and "Traceback" not in refused.stderr
    assert steward("status", cwd=workspace).code != 0  # nothing was launched

    # --no-env-check launches anyway (the operator knows better); cancel that run.
    forced = steward.ok("launch", "--no-env-check", "--no-timer", cwd=workspace, env=shell)
    assert "credentials" not in forced
    steward.ok("cancel", cwd=workspace)
    steward.wait_phase(workspace, {"cancelled"})
    workflow_id = forced["workflow_id"]

    # In .env, which the workers read, the same launch is accepted and runs to the end.
    (workspace / ".env").write_text(f"SIM_API_KEY={SECRET}\nSIM_BASE_URL={simulator}/v1\n")
    launched = steward.ok("launch", cwd=workspace)
    sources = {f["variable"]: f["source"] for f in launched["credentials"]["found"]}
    assert sources == {
        "SIM_API_KEY": str(workspace / ".env"),
        "SIM_BASE_URL": str(workspace / ".env"),
    }
    steward.wait_phase(workspace, {"finished"})

    checks = _credential_checks(steward, workflow_id)
    assert len(checks) == 2  # the refused launch and the accepted one
    assert launched["run_id"] != forced["run_id"]
    runs = [(workflow_id, forced["run_id"]), (workflow_id, launched["run_id"])]
    for text in [_history_text(steward, *run) for run in runs + [(i, None) for i in checks]]:
        assert "SIM_API_KEY" in text or "offline" in text or "sim/echo" in text  # payloads read
        assert SECRET not in text
    replay(fetch_history(steward, checks[0]), record_as="credentials_check_v1")
    for name in ("journal.jsonl", "status.md", "analysis.md"):
        assert SECRET not in (workspace / name).read_text()
    # Arming the timer checks again: scheduled tends start workers.
    (workspace / ".env").unlink()
    rearm = steward("timer", "arm", cwd=workspace, env=shell)
    assert rearm.code == 2 and "SIM_API_KEY" in rearm.stderr
    steward.ok("timer", "arm", "--no-env-check", cwd=workspace)
