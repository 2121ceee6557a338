"""Change without loss: relaunching an edited definition commits only its delta (gated when it
would move results), reverting restores from the archive without re-running, an unlaunched edit
is drift, and the workspace's files are mirrored into the log dir."""

from __future__ import annotations

from pathlib import Path

from inspect_ai.log import read_eval_log

from harness.helpers import (
    DEFINITION_HEAD,
    Steward,
    fetch_history,
    make_workspace,
    replay,
    tasks_by_name,
    wait_for,
)

TASK = """
@task
def {name}():
    return Task(
        dataset=samples("{name}", 4),
        solver=[system_message({system!r}), generate()],
        scorer=match(),
        epochs={epochs},
    )
"""


def _definition(workspace: Path, tasks: dict[str, tuple[str, int]]) -> None:
    """tasks: name -> (system message, epochs)."""
    body = DEFINITION_HEAD.replace(
        "from inspect_ai.solver import generate",
        "from inspect_ai.solver import generate, system_message",
    )
    for name, (system, epochs) in tasks.items():
        body += TASK.format(name=name, system=system, epochs=epochs)
    calls = ", ".join(f"{t}()" for t in tasks)
    body += f"\n\neval_set(tasks=[{calls}], model='steward/offline')\n"
    (workspace / "evalset.py").write_text(body)


def _samples(log: str) -> dict[tuple, str]:
    """(sample id, epoch) -> sample uuid of a log."""
    return {(s.id, s.epoch): s.uuid for s in read_eval_log(log).samples or []}


V1 = {"alpha": ("Be brief.", 1), "beta": ("Be brief.", 1), "gamma": ("Be brief.", 1)}
V2 = {"alpha": ("Be brief.", 2), "beta": ("Be very brief.", 1), "delta": ("Be brief.", 1)}


def test_relaunch_commits_the_delta_gates_archiving_and_restores(steward: Steward, workspace_root):
    # One worker process for all tasks: the delta is the point here, not the fleet.
    workspace = make_workspace(
        steward, workspace_root, {"placeholder": 1}, options="max_workers: 1\n"
    )
    _definition(workspace, V1)
    steward.ok("launch", cwd=workspace)
    first = tasks_by_name(steward.wait_phase(workspace, {"finished"}, tend=True))
    before = {name: _samples(t["log"]) for name, t in first.items()}
    workers_before = steward.status(workspace)["state"]["worker_counter"]

    # An edit not launched is drift, reported with what a launch would change.
    _definition(workspace, V2)
    drift = wait_for(
        lambda: steward.ok("tend", cwd=workspace) and steward.state(workspace)["drift"],
        timeout=120,
        what="drift",
    )
    assert any(line.startswith("superseded beta") for line in drift)
    assert "Drift" in (workspace / "status.md").read_text()

    dry = steward.ok("launch", "--dry-run", cwd=workspace)
    assert {(r["kind"], r["name"]) for r in dry["delta"]} >= {
        ("extend", "alpha"),
        ("superseded", "beta"),
        ("add", "beta"),
        ("removed", "gamma"),
        ("add", "delta"),
    }
    refused = steward("launch", cwd=workspace)
    assert refused.code == 2 and "--accept-archive" in refused.stderr
    assert "removed gamma" in refused.stderr and "superseded beta" in refused.stderr
    assert steward.status(workspace)["state"]["worker_counter"] == workers_before  # no change

    amended = steward.ok("launch", "--accept-archive", cwd=workspace)
    assert sorted(amended["amended"]["added"]) == ["alpha", "beta", "delta"]
    archive = workspace / "logs-archive"
    assert {Path(p).name for p in amended["amended"]["archived"]} == {
        Path(first["beta"]["log"]).name,
        Path(first["gamma"]["log"]).name,
    }
    assert all((archive / Path(p).name).is_file() for p in amended["amended"]["archived"])
    second = tasks_by_name(steward.wait_phase(workspace, {"finished"}, tend=True))
    assert set(second) == {"alpha", "beta", "delta"}
    alpha = _samples(second["alpha"]["log"])
    assert len(alpha) == 8  # 4 samples x 2 epochs
    # The first epoch was reused (same uuids), only the second ran.
    assert {k: v for k, v in alpha.items() if k[1] == 1} == before["alpha"]
    assert not (workspace / "logs" / Path(first["gamma"]["log"]).name).exists()
    seen = {u for samples in before.values() for u in samples.values()}
    relaunched = [u for t in second.values() for u in _samples(t["log"]).values()]
    ran = [u for u in relaunched if u not in seen]
    assert (len(ran), len(relaunched) - len(ran)) == (12, 4)  # alpha's epoch 2, beta', delta
    print(f"relaunch: {len(ran)} samples run, {len(relaunched) - len(ran)} reused")

    # Revert the edit: beta and gamma come back from the archive; nothing is re-run.
    _definition(workspace, V1)
    workers = steward.status(workspace)["state"]["worker_counter"]
    reverted = steward.ok("launch", "--accept-archive", cwd=workspace)
    assert sorted(reverted["amended"]["restored"]) == ["beta", "gamma"]
    assert reverted["amended"]["added"] == []
    third = tasks_by_name(steward.wait_phase(workspace, {"finished"}, tend=True))
    assert steward.status(workspace)["state"]["worker_counter"] == workers
    assert _samples(third["gamma"]["log"]) == before["gamma"]
    assert _samples(third["beta"]["log"]) == before["beta"]
    assert third["alpha"]["phase"] == "complete"  # fewer epochs asked: its log stands
    restored = [u for t in ("beta", "gamma") for u in _samples(third[t]["log"]).values()]
    assert set(restored) <= seen
    print(f"revert: 0 samples run, {len(restored)} restored from the archive")
    assert not steward.status(workspace)["state"]["drift"]

    # The workspace's files are mirrored beside the logs on each tend.
    mirror = workspace / "logs" / "_steward"
    assert (mirror / "status.md").is_file() and (mirror / "journal.jsonl").is_file()
    replay(fetch_history(steward, amended["workflow_id"]), record_as="eval_run_delta_v1_amend")


def test_a_second_workspace_reuses_published_results(steward: Steward, workspace_root):
    store = workspace_root / "store"
    options = f"log_store: {store}\nmax_workers: 1\n"
    first = make_workspace(
        steward, workspace_root / "one", {"shared": 4, "mine": 3}, options=options
    )
    steward.ok("launch", cwd=first)
    steward.wait_phase(first, {"finished"}, tend=True)
    steward.ok("signoff", "--by", "norah", "--publish", cwd=first)
    assert len(list(store.glob("*.eval"))) == 2

    second = make_workspace(
        steward, workspace_root / "two", {"shared": 4, "theirs": 2}, options=options
    )
    dry = steward.ok("launch", "--dry-run", cwd=second)
    assert dry["store_hits"] == ["shared"]
    launched = steward.ok("launch", cwd=second)
    assert launched["store_hits"] == ["shared"]
    done = tasks_by_name(steward.wait_phase(second, {"finished"}, tend=True))
    assert done["shared"]["attempts"] == 0  # never spawned: the store answered it
    assert done["theirs"]["attempts"] == 1
    shared_log = done["shared"]["log"]
    assert Path(shared_log).parent == second / "logs" and (store / Path(shared_log).name).is_file()
    assert steward.status(second)["state"]["reused"] == ["shared"]


def test_a_failed_smoke_blocks_the_launch_until_waived(steward: Steward, workspace_root):
    log_root = workspace_root / "machine-logs"
    workspace = make_workspace(
        steward,
        workspace_root,
        {"fragile": 6},
        options=f"log_root: {log_root}\n",
        dotenv="STEWARD_OFFLINE_FAIL=fragile-2\n",
    )
    smoke_on = {"STEWARD_SMOKE": "true"}
    rehearsal = steward("launch", "--smoke", "--json", cwd=workspace, env=smoke_on)
    assert rehearsal.code == 1 and "fragile" in rehearsal.json["error"]
    assert "task" in rehearsal.json["error"]
    not_launched = steward("status", cwd=workspace, env=smoke_on)
    assert not_launched.code == 2 and "No run has been launched" in not_launched.stderr

    blocked = steward("launch", cwd=workspace, env=smoke_on)
    assert blocked.code == 1 and "smoke run failed" in blocked.stderr
    # The run that started beside the smoke was stopped, with nothing of it left to resume.
    assert "cancelled and its logs removed" in blocked.stderr
    stopped = steward.state(workspace)
    assert stopped["phase"] == "cancelled" and stopped["cancel_reason"] == "the smoke failed"
    assert not [p for p in log_root.rglob("*") if p.is_file()]

    waived = steward.ok("launch", "--accept", "fragile:task", cwd=workspace, env=smoke_on)
    assert waived["smoke"]["checks"][0]["check"] == "task"
    assert waived["state"]["phase"] in ("running", "finished")
    # log_root: one directory per workspace under the machine's root, named for it.
    log_dir = Path(waived["state"]["log_dir"])
    assert log_dir.parent == log_root and log_dir.name.startswith("ws-")
    wait_for(lambda: list(log_dir.glob("*.eval")), what="a log under log_root")
    steward.ok("cancel", cwd=workspace)
