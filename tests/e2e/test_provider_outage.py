"""A provider outage end to end, against the OpenAI-compatible simulator through Inspect's real
openai-api provider: a rerun ruled `--when-provider-answers` is carried out once the provider
answers a probe again and not before, and a provider that answers nothing is asked about within
`provider_stuck_after`, the question closing itself once it answers again."""

from __future__ import annotations

import time
from datetime import datetime
from pathlib import Path

import httpx
import pytest

from harness.helpers import (
    fetch_history,
    make_workspace,
    read_journal,
    replay,
    temporal_client,
    wait_for,
)
from steward.worker.provider_simulator import spawn
from steward.workflows.names import Activity

SIM_MODEL = "openai-api/sim/echo"


@pytest.fixture
def outage(tmp_path):
    """The simulator, down from the start: every request answered 503."""
    process, url = spawn(tmp_path / "sim.port", latency=0.2, jitter=0.0, fail_status=503)
    yield url
    process.kill()
    process.wait()


def events(steward, workspace: Path) -> list[dict]:
    """Every journal event so far, those the run still holds included (collect from 0)."""
    return steward.ok("collect", "--since", "0", cwd=workspace)["events"]


def named(found: list[dict], name: str) -> list[dict]:
    return [e for e in found if e["event"] == name]


def sim(url: str, **config) -> dict:
    if config:
        httpx.post(f"{url}/admin/config", json=config).raise_for_status()
    return httpx.get(f"{url}/admin/stats").json()


def at(event: dict) -> float:
    return datetime.fromisoformat(event["at"]).timestamp()


def test_a_rerun_deferred_until_the_provider_answers_lands_when_it_is_back_and_not_before(
    steward, workspace_root, outage
):
    workspace = make_workspace(
        steward,
        workspace_root,
        {"chat": 3},
        model=SIM_MODEL,
        tend_interval="1h",
        # The scan reads the transcripts with the offline model: the outage is the eval's.
        options="provider_stuck_after: false\nscan_model: steward/offline\n",
        dotenv=f"SIM_BASE_URL={outage}/v1\nSIM_API_KEY=test-key\n",
        eval_set_args=", max_retries=1",  # each sample gives up after a retry: it errors
    )
    steward.ok("launch", cwd=workspace)
    status = steward.wait_phase(workspace, {"finished"}, tend=True)
    assert status["state"]["tasks"][0]["progress"]["errored"] == 3
    decisions = [
        d for d in steward.ok("collect", "--since", "0", cwd=workspace)["decisions"]
        if d["kind"] == "sample_error"
    ]  # fmt: skip
    # One class for the three 503s (a fresh-clone run once found two: name them if so)
    assert len(decisions) == 1, [(d["class"], d["question"]) for d in decisions]
    (decision,) = decisions
    log_dir = workspace / "logs"
    logs_before = {p.name: p.stat().st_mtime for p in log_dir.glob("*.eval")}

    ruled = steward.ok(
        "rule", decision["id"], "rerun", "--when-provider-answers", "--by", "norah",
        "--reason", "the provider is down", cwd=workspace,
    )  # fmt: skip
    assert ruled["effect"] == "ruled" and ruled["until"] == "provider_answers"
    ruled_at = time.time()
    # Waited on by queries (a collect is a signal: polling it would grow the history).
    wait_for(
        lambda: steward.state(workspace)["deferrals"][0]["probes"] >= 1,
        timeout=60,
        interval=1.0,
        what="the first probe to find the provider down",
    )
    (missed,) = named(events(steward, workspace), "provider did not answer")
    assert "503" in missed["problem"] and missed["next_probe_in_s"] == 10
    (deferred,) = named(events(steward, workspace), "rerun deferred")
    assert deferred["until"] == "openai-api/sim answers" and deferred["models"] == [SIM_MODEL]

    # Down for a while longer: probed again (10 s later), nothing re-run, the log untouched.
    wait_for(
        lambda: steward.state(workspace)["deferrals"][0]["probes"] >= 2,
        timeout=60,
        interval=1.0,
        what="a second probe",
    )
    seen = events(steward, workspace)
    for event in ("provider answered", "ruling applied", "rerun queued"):
        assert not named(seen, event), f"{event} while the provider was down"
    assert {p.name: p.stat().st_mtime for p in log_dir.glob("*.eval")} == logs_before
    state = steward.state(workspace)
    assert state["phase"] == "finished" and state["tasks"][0]["attempts"] == 1
    deferral = state["deferrals"][0]
    assert deferral["class_id"] == decision["class"] and "503" in deferral["last_problem"]
    stats = sim(outage)
    assert stats["served"] == 0  # no sample ran again: every request so far failed
    blockers = steward("signoff", "--by", "norah", "--json", cwd=workspace)
    assert blockers.code == 2 and decision["class"] in blockers.json["error"]

    back_at = time.time()
    sim(outage, fail_status=0)
    wait_for(
        lambda: named(read_journal(workspace), "task complete")[1:],
        timeout=240,
        interval=1.0,
        what="the rerun to complete the task again",
    )
    status = steward.wait_phase(workspace, {"finished"})
    journal = read_journal(workspace)
    (answered,) = named(journal, "provider answered")
    assert at(answered) >= back_at - 1 and answered["then"] == "rerun applied"
    assert answered["provider"] == "openai-api/sim" and answered["probes"] >= 3
    assert answered["waited_s"] >= back_at - ruled_at - 2
    order = [e["event"] for e in journal]
    assert (
        order.index("rerun deferred")
        < order.index("provider answered")
        < order.index("ruling applied")
        < order.index("rerun queued")
    )
    task = status["state"]["tasks"][0]
    assert task["progress"]["completed"] == 3 and task["progress"]["errored"] == 0
    assert status["state"]["deferrals"] == []

    from inspect_ai.log import read_eval_log

    (final,) = log_dir.glob("*.eval")
    assert all(s.error is None for s in read_eval_log(str(final)).samples)
    steward.ok("signoff", "--by", "norah", cwd=workspace)
    # Every run of it (continued as new on the way) replays deterministically; the one that
    # probed is kept as a fixture.
    for run_id in run_ids(steward, status["workflow_id"]):
        history = fetch_history(steward, status["workflow_id"], run_id)
        probed = Activity.PROBE_PROVIDER in history.to_json()
        replay(history, record_as="eval_run_deferred_rerun_v1" if probed else None)


def run_ids(steward, workflow_id: str) -> list[str]:
    import asyncio

    async def listed() -> list[str]:
        client = await temporal_client(steward)
        return [w.run_id async for w in client.list_workflows(f"WorkflowId = '{workflow_id}'")]

    return asyncio.run(listed())


def test_a_stuck_provider_is_asked_about_within_its_window_and_closed_once_it_answers(
    steward, workspace_root, tmp_path
):
    process, url = spawn(tmp_path / "sim.port", latency=0.5, jitter=0.1, concurrency=200)
    try:
        workspace = make_workspace(
            steward,
            workspace_root,
            {"chat": 2000},
            model=SIM_MODEL,
            tend_interval="1h",  # no timer to lean on: the watch must say it
            options="provider_stuck_after: 20s\nsamples_ramp: [20, 20]\n",
            dotenv=f"SIM_BASE_URL={url}/v1\nSIM_API_KEY=test-key\n",
        )
        steward.ok("launch", cwd=workspace)
        wait_for(lambda: sim(url)["served"] >= 40, timeout=180, what="the run to get going")
        failed_at = time.time()
        sim(url, fail_status=503)

        def stuck() -> list[dict]:
            seen = steward.ok("collect", "--since", "0", cwd=workspace)["decisions"]
            return [d for d in seen if d["kind"] == "provider_stuck"]

        (decision,) = wait_for(stuck, timeout=120, interval=1.0, what="the stuck provider")
        raised = datetime.fromisoformat(decision["raised_at"]).timestamp() - failed_at
        assert 19 <= raised <= 20 + 15, f"raised {raised:.1f} s after the outage began"
        assert decision["owner"] == "operator" and decision["verdicts"] == ["wait", "pause"]
        assert f"the provider of {SIM_MODEL} stopped answering" in decision["question"]
        (reported,) = named(events(steward, workspace), "provider stuck")
        assert reported["model"] == SIM_MODEL and "no answer for" in reported["detail"]
        assert steward.state(workspace)["phase"] == "running"  # Inspect goes on retrying

        sim(url, fail_status=0)
        closed = wait_for(
            lambda: [
                e
                for e in named(events(steward, workspace), "decision closed")
                if e["decision"] == decision["id"]
            ],  # fmt: skip
            timeout=120,
            interval=1.0,
            what="the stuck-provider decision to close once it answers",
        )
        assert f"{SIM_MODEL} answers worker" in closed[0]["reason"]
        assert not stuck()
        steward.ok("cancel", "--reason", "done", cwd=workspace)
    finally:
        process.kill()
        process.wait()
