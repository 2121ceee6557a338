"""The integrity scan keeps pace with the run: a complete task is scanned while another task
still runs, its findings become a decision before the run finishes, status shows how far the
scan has got, and a signoff after the last task waits for the last scan."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from harness.helpers import fetch_history, make_workspace, read_journal, replay, wait_for

# `slow` waits while the hold file exists (its own solver: the offline model, which the scan
# uses too, is never held); `quick` completes at once.
DEFINITION = """import asyncio
from pathlib import Path

from inspect_ai import Task, eval_set, task
from inspect_ai.dataset import Sample
from inspect_ai.scorer import match
from inspect_ai.solver import generate, solver

HOLD = Path(__file__).parent / "hold-slow"


@solver
def held():
    async def solve(state, generate):
        while HOLD.exists():
            await asyncio.sleep(0.2)
        return await generate(state)

    return solve


def samples(prefix, count):
    return [Sample(id=i, input=f"Reply with: {prefix}-{i}", target=f"{prefix}-{i}")
            for i in range(1, count + 1)]


@task
def quick():
    return Task(dataset=samples("quick", 3), solver=generate(), scorer=match())


@task
def slow():
    return Task(dataset=samples("slow", 3), solver=held(), scorer=match())


eval_set(tasks=[quick(), slow()], model="steward/offline")
"""


def _quick_and_held_slow(steward, root: Path) -> Path:
    """The workspace every test here runs: `slow` held, one of `quick`'s samples flagged."""
    return make_workspace(
        steward,
        root,
        definition_text=DEFINITION,
        tend_interval="1h",
        dotenv="STEWARD_OFFLINE_FLAG=quick-2\n",
        holds=["hold-slow"],
    )


def _hold_scans(workspace: Path) -> Path:
    """Add a scanner that waits while the returned file exists (the test removes it)."""
    hold_scan = workspace / "hold-scan"
    hold_scan.write_text("held by the test\n")
    (workspace / "held_scanner.py").write_text(HELD_SCANNER.format(hold=str(hold_scan)))
    with open(workspace / "_steward.yaml", "a") as handle:
        handle.write("scanners: [held_scanner.py@held]\n")
    return hold_scan


def _journalled(workspace: Path, event: str) -> list[dict]:
    return [e for e in read_journal(workspace) if e["event"] == event]


def _a_scan_beside_a_narrow_one(workspace: Path) -> list[dict]:
    """quick's scan starts narrow while slow runs; slow is let go, completes, and its scan
    starts beside quick's. The two `scan connections` events."""
    wait_for(lambda: _journalled(workspace, "scan connections"), what="quick's scan")
    (workspace / "hold-slow").unlink()
    return wait_for(
        lambda: len(found := _journalled(workspace, "scan connections")) == 2 and found,
        what="slow's scan beside quick's",
    )


def _scans(workspace: Path) -> list[dict]:
    return [e for e in read_journal(workspace) if e["event"] == "scanned"]


def test_a_complete_task_is_scanned_while_another_runs(steward, workspace_root):
    workspace = _quick_and_held_slow(steward, workspace_root)
    launched = steward.ok("launch", cwd=workspace)

    # Without any command (the timer is an hour away) quick's log is scanned while slow runs.
    [first] = wait_for(lambda: _scans(workspace), timeout=120, interval=1, what="the first scan")
    assert first["logs"] == 1 and first["findings"] == 1
    state = steward.state(workspace)
    phases = {t["spec"]["name"]: t["phase"] for t in state["tasks"]}
    assert phases == {"quick": "complete", "slow": "running"}
    [decision] = steward.ok("collect", "--since", "0", cwd=workspace)["decisions"]
    assert decision["kind"] == "scan_finding"
    assert [i["sample_id"] for i in decision["instances"]] == ["2"]
    shown = steward("status", cwd=workspace)
    assert "scan: 1 of 1 complete task(s) scanned" in shown.stdout, shown.stdout
    assert "Scan: 1 of 1 complete task(s) scanned" in (workspace / "status.md").read_text()

    steward.ok("rule", decision["id"], "dismiss", "--by", "norah", cwd=workspace)
    (workspace / "hold-slow").unlink()
    status = steward.wait_phase(workspace, {"finished"})
    # Signoff right after the finish waits for slow's scan instead of refusing it.
    assert steward.ok("signoff", "--by", "norah", cwd=workspace)["by"] == "norah"
    scans = _scans(workspace)
    assert [s["logs"] for s in scans] == [1, 1]  # each task's log scanned once
    events = [e["event"] for e in read_journal(workspace)]
    assert events.index("scanned") < events.index("finished")

    history = fetch_history(steward, launched["workflow_id"], status["run_id"])
    replay(history, record_as="eval_run_scan_v2_beside_the_run")


def test_what_completes_during_a_narrow_scan_is_scanned_beside_it(steward, workspace_root):
    # quick's scan starts while slow runs, with a share of the budget, and a scanner that
    # waits for the test keeps it running; slow completes meanwhile and its log does not wait
    # for the narrow scan: it is scanned beside it with what the budget has left.
    workspace = _quick_and_held_slow(steward, workspace_root)
    (workspace / ".env").write_text("")  # nothing flagged: the signoff needs no ruling
    hold_scan = _hold_scans(workspace)
    launched = steward.ok("launch", cwd=workspace)
    first, beside = _a_scan_beside_a_narrow_one(workspace)
    assert "beside_a_scan" not in first and beside["beside_a_scan"] is True
    assert not _scans(workspace)  # both still run: neither waited for the other
    assert len(steward.state(workspace)["scanning_logs"]) == 2
    hold_scan.unlink()
    status = steward.wait_phase(workspace, {"finished"})
    assert steward.ok("signoff", "--by", "norah", cwd=workspace)["by"] == "norah"
    assert sorted(s["logs"] for s in _scans(workspace)) == [1, 1]
    history = fetch_history(steward, launched["workflow_id"], status["run_id"])
    replay(history, record_as="eval_run_scan_pair_v1_beside")


def test_a_scan_left_running_takes_the_connections_of_the_one_that_ended(steward, workspace_root):
    # As above, quick's narrow scan and slow's beside it; each held by a file of its own task.
    # quick's ends first: no eval work is left, so slow's running scan takes its connections,
    # and its child is told so (scan-widen-v1) instead of finishing on what was left.
    workspace = _quick_and_held_slow(steward, workspace_root)
    (workspace / ".env").write_text("")
    holds = {task: workspace / f"hold-scan-{task}" for task in ("quick", "slow")}
    for hold in holds.values():
        hold.write_text("held by the test\n")
    (workspace / "held_scanner.py").write_text(
        HELD_BY_TASK_SCANNER.format(prefix=str(workspace / "hold-scan-"))
    )
    with open(workspace / "_steward.yaml", "a") as handle:
        handle.write("scanners: [held_scanner.py@held]\n")
    launched = steward.ok("launch", cwd=workspace)
    first, beside = _a_scan_beside_a_narrow_one(workspace)
    holds["quick"].unlink()
    [widened] = wait_for(lambda: _journalled(workspace, "scan widened"), what="the widening")
    assert widened["connections"] == first["connections"] + beside["connections"]
    told = workspace / ".steward" / "scans" / f"connections-{widened['scan']}"
    wait_for(
        lambda: told.is_file() and int(told.read_text()) == widened["connections"],
        timeout=30,
        what="slow's scan told its new share",
        describe=lambda: sorted(p.name for p in told.parent.iterdir()),
    )
    assert len(steward.state(workspace)["scanning_logs"]) == 1  # slow's, still running
    holds["slow"].unlink()
    status = steward.wait_phase(workspace, {"finished"})
    assert steward.ok("signoff", "--by", "norah", cwd=workspace)["by"] == "norah"
    assert sorted(s["logs"] for s in _scans(workspace)) == [1, 1]
    history = fetch_history(steward, launched["workflow_id"], status["run_id"])
    replay(history, record_as="eval_run_scan_widen_v1")


def _history_length(steward, workflow_id: str) -> int:
    import asyncio

    from temporalio.client import Client

    async def go() -> int:
        client = await Client.connect(f"127.0.0.1:{steward.env['STEWARD_TEMPORAL_PORT']}")
        described = await client.get_workflow_handle(workflow_id).describe()
        return described.raw_description.workflow_execution_info.history_length

    return asyncio.run(go())


def test_a_signoff_waiting_for_the_scan_when_the_history_fills_still_ends(steward, workspace_root):
    # A full history makes the run hand over once no handler runs; a signoff waiting for the
    # scan needs the tend that takes the scan in. The run used to wait for the signoff, and the
    # signoff for the run, for ever (the e2e server suggests a handover after 150 events).
    workspace = _quick_and_held_slow(steward, workspace_root)
    (workspace / ".env").write_text("")
    (workspace / "hold-slow").unlink()
    hold_scan = _hold_scans(workspace)
    launched = steward.ok("launch", cwd=workspace)
    steward.wait_phase(workspace, {"finished"})

    with ThreadPoolExecutor(max_workers=1) as pool:
        signoff = pool.submit(steward, "signoff", "--by", "norah", "--json", cwd=workspace)
        time.sleep(3)  # the signoff is in, waiting for the held scan
        assert not signoff.done()
        # Manual tends grow the history until the server suggests a handover.
        wait_for(
            lambda: (
                steward.ok("tend", cwd=workspace)
                and _history_length(steward, launched["workflow_id"]) > 160
            ),
            timeout=240,
            interval=0.5,
            what="the history to fill",
        )
        time.sleep(2)  # the run now waits to hand over
        hold_scan.unlink()
        result = signoff.result(timeout=150)
    assert result.code == 0, result.stderr
    assert result.json["by"] == "norah"
    assert steward.status(workspace)["state"]["phase"] == "signed_off"
    replay(fetch_history(steward, launched["workflow_id"]), record_as="eval_run_handler_tends_v1")


HELD_SCANNER = """
import asyncio
from pathlib import Path

from inspect_scout import Result, Scanner, Transcript, scanner

HOLD = Path({hold!r})


@scanner(messages="all")
def held() -> Scanner[Transcript]:
    async def scan(transcript: Transcript) -> Result:
        while HOLD.exists():
            await asyncio.sleep(0.2)
        return Result(value=False, explanation="released by the test")

    return scan
"""

HELD_BY_TASK_SCANNER = """
import asyncio
from pathlib import Path

from inspect_scout import Result, Scanner, Transcript, scanner


@scanner(messages="all")
def held() -> Scanner[Transcript]:
    async def scan(transcript: Transcript) -> Result:
        task = transcript.task_set or (transcript.metadata or {{}}).get("task_name")
        while Path({prefix!r} + str(task)).exists():
            await asyncio.sleep(0.2)
        return Result(value=False, explanation="released by the test")

    return scan
"""
