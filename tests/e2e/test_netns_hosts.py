"""Many hosts with their own addresses (issue 31): each host a network namespace with a veth
link to the home Steward's Temporal (harness/netns.py), its own Steward worker inside it.

A host cut off but alive (its link down; or only its route to Temporal cut, its task workers
still able to write the shared logs) is lost to the run within host_timeout, its tasks move,
its task workers stop once the new owners claim the logs, and when it comes back it is heard
again, told to the operator once, writes nothing and takes new work. Four hosts: one killed
and one partitioned during a run of 16 tasks. Every (id, epoch) once, uuids kept.

Skipped, saying why, where network namespaces cannot be made (not root, no iproute2)."""

from __future__ import annotations

import json
import shutil
import tempfile
import time
from pathlib import Path

import pytest
from inspect_ai.log import read_eval_log_sample_summaries

from harness.helpers import (
    Steward,
    assert_each_sample_once,
    make_workspace,
    own_services,
    pid_alive,
    read_journal,
    wait_for,
)
from harness.netns import Cluster, Unavailable, check_available, home_env
from harness.receiver import Receiver

HOST_TIMEOUT = "host_timeout: 20s\n"  # heartbeats every 10 s: two may be late under load
# The hosts' samples take 0.5 s each and wait while their hold file exists (their task workers
# inherit their Steward's environment): a cut-off host's workers are held until the run has
# moved their tasks, then let go, so they are writing as the new owners claim the logs. The
# home's samples are instant, but wait while its own hold file exists (a test keeps its run
# going until the hosts are back).


@pytest.fixture(scope="module")
def home() -> Steward:
    """A Steward whose Temporal listens beyond loopback (the hosts reach it over their links)."""
    try:
        check_available()
    except Unavailable as why:
        pytest.skip(f"no test hosts: {why}")

    def hold(data: Path) -> dict[str, str]:
        return {"STEWARD_OFFLINE_HOLD": str(data / "hold")}

    with own_services("steward-test-netns-", hold, wrap=home_env) as runner:
        yield runner


@pytest.fixture(scope="module")
def cluster(home: Steward):
    """Three hosts (h1, h2, h3) beside home: four in all, shared by the tests of this module
    (each leaves them as it found them, but the last, which kills one)."""
    root = Path(tempfile.mkdtemp(prefix="steward-test-hosts-"))
    hosts_env = {"STEWARD_OFFLINE_DELAY": "0.5", "STEWARD_OFFLINE_HOLD": str(root / "hold")}
    # h3 has no mount of `hidden` (a workspace there is out of its sight).
    hidden = root / "hidden"
    hidden.mkdir()
    with Cluster(home, 3, root, env=hosts_env, hidden={"h3": [str(hidden)]}) as made:
        wait_for(
            lambda: (
                {"h1", "h2", "h3"} <= {n for n, h in _hosts(home).items() if h["state"] == "live"}
            ),
            what="the hosts live in `steward hosts`",
            describe=lambda: _hosts(home),
        )
        yield made
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def receiver():
    with Receiver() as listening:
        yield listening


def _hosts(steward: Steward) -> dict[str, dict]:
    return {h["host_id"]: h for h in steward.ok("hosts")["hosts"]}


def _summaries(log: str) -> list:
    """A running task's log, read between Inspect's rewrites of it (a read that meets one
    finds no zip directory yet: read again)."""
    for _ in range(20):
        try:
            return read_eval_log_sample_summaries(log)
        except ValueError:
            time.sleep(0.25)
    return read_eval_log_sample_summaries(log)


def _done_samples(steward: Steward, workspace: Path) -> dict[str, dict[str, tuple]]:
    """task identifier -> {uuid: (id, epoch)} of the samples its log completed so far."""
    return {
        t["spec"]["identifier"]: {
            s.uuid: (s.id, s.epoch) for s in _summaries(t["log"]) if not s.error
        }
        for t in steward.state(workspace)["tasks"]
        if t["log"]
    }


def _kept(status: dict, before: dict[str, dict[str, tuple]]) -> None:
    """What was completed before a host went keeps its uuid in the final logs (not run again)."""
    for task in status["state"]["tasks"]:
        earlier = before.get(task["spec"]["identifier"])
        if earlier:
            after = {s.uuid: (s.id, s.epoch) for s in read_eval_log_sample_summaries(task["log"])}
            assert earlier.items() <= after.items(), task["spec"]["name"]


def _on(steward: Steward, workspace: Path, host: str) -> list[dict]:
    return [w for w in steward.state(workspace)["workers"].values() if w.get("host") == host]


def _progress(steward: Steward, workspace: Path, tasks: set[str]) -> int:
    state = steward.state(workspace)
    return min(
        t["progress"]["completed"] for t in state["tasks"] if t["spec"]["identifier"] in tasks
    )


def _lost(workspace: Path) -> list[str]:
    return sorted(e["host"] for e in read_journal(workspace) if e["event"] == "host lost")


def test_hosts_cut_off_refused_and_killed(home, cluster, workspace_root, receiver):
    """One test, in three parts, so that the hosts are made once per pytest process (the
    suite's --dist worksteal would otherwise make them again for a test another process took)."""
    partitioned_and_back(home, cluster, workspace_root / "partition", receiver)
    refused_for_want_of_the_definition(home, cluster)
    stuck_on_another_host(home, cluster, workspace_root / "stuck")
    four_hosts_one_killed_one_partitioned(home, cluster, workspace_root / "four")


def partitioned_and_back(home, cluster, workspace_root, receiver):
    h1, h2 = cluster["h1"], cluster["h2"]
    tasks = {f"t{i}": 100 for i in range(1, 5)}
    held = Path(cluster.env["STEWARD_OFFLINE_HOLD"])
    hold = Path(home.env["STEWARD_OFFLINE_HOLD"])
    hold.write_text("the home's samples wait until the hosts are back\n")
    workspace = make_workspace(
        home,
        workspace_root,
        tasks,
        options="samples_ramp: [2, 2]\nshared_storage: true\nhosts: any\nheartbeat: false\n"
        + HOST_TIMEOUT,
        dotenv=f"STEWARD_NOTIFICATION={receiver.url}\n",
    )
    held.write_text("the hosts' samples wait\n")  # spawns are slow under load: h1 waits for h2
    home.ok("launch", cwd=workspace)
    remote = wait_for(
        lambda: (
            (w := _on(home, workspace, "h1") + _on(home, workspace, "h2"))
            and {x["host"] for x in w} == {"h1", "h2"}
            and w
        ),
        what="task workers on h1 and h2",
        describe=lambda: home.state(workspace)["workers"],
    )
    moved = {i for w in remote for i in w["tasks"]}
    held.unlink()
    wait_for(lambda: _progress(home, workspace, moved) >= 2, what="progress on h1 and h2")
    held.write_text("the hosts' samples wait until their tasks have moved\n")
    before = _done_samples(home, workspace)

    # h1 partitioned (its link down), h2 cut from Temporal only; both keep running.
    cluster.link_down(h1)
    cluster.cut_temporal(h2)
    try:
        assert all(pid_alive(w["pid"]) for w in remote)
        wait_for(lambda: {"h1", "h2"} <= set(_lost(workspace)), timeout=120, what="both lost")
        held.unlink()  # the cut-off workers write again, as the new owners claim their logs
        # Their task workers stop themselves once the new owners claim the logs.
        wait_for(
            lambda: not any(pid_alive(w["pid"]) for w in remote),
            timeout=60,
            what="the cut-off hosts' task workers to stop",
        )
        said = "".join(Path(w["output"]).read_text() for w in remote)
        assert "stopping: the task logs of" in said, said[-2000:]
    finally:
        held.unlink(missing_ok=True)
        cluster.link_up(h1)
        cluster.restore_temporal(h2)

    # Back: both heard again while the run goes on, told once each.
    wait_for(
        lambda: (
            {e["host"] for e in read_journal(workspace) if e["event"] == "host back"}
            >= {"h1", "h2"}
        ),  # fmt: skip
        timeout=120,
        what="both hosts back in the run's journal",
    )
    hold.unlink()
    status = home.wait_phase(workspace, {"finished"}, timeout=300)
    assert all(t["phase"] == "complete" for t in status["state"]["tasks"])
    assert _lost(workspace) == ["h1", "h2"]
    assert_each_sample_once(workspace, tasks)
    _kept(status, before)

    # The hosts write nothing of the run's and hold no task worker.
    written = {p: p.stat().st_mtime_ns for p in (workspace / "logs").glob("*.eval")}
    time.sleep(3)
    assert {p: p.stat().st_mtime_ns for p in (workspace / "logs").glob("*.eval")} == written
    assert not cluster.task_workers(h1) and not cluster.task_workers(h2)
    wait_for(lambda: "is heard again" in receiver.text(), what="the return told")
    text = receiver.text()
    for host in ("h1", "h2"):
        assert text.count(f"Host {host} has been silent") == 1, text
        assert text.count(f"Host {host} is heard again") == 1, text
    assert "a host is back" in " ".join(receiver.titles())

    # New work goes to them again.
    fresh = make_workspace(
        home,
        workspace_root / "again",
        {"n1": 50, "n2": 50, "n3": 50, "n4": 50},
        options="shared_storage: true\nhosts: any\n" + HOST_TIMEOUT,
    )
    home.ok("launch", cwd=fresh)
    wait_for(
        lambda: (
            {e.get("host") for e in read_journal(fresh) if e["event"] == "spawned"} >= {"h1", "h2"}
        ),
        what="new work on h1 and h2",
        describe=lambda: read_journal(fresh),
    )
    home.ok("cancel", "--reason", "seen placed", cwd=fresh)


def refused_for_want_of_the_definition(home, cluster):
    hidden = cluster.root / "hidden"
    tasks = {f"s{i}": 3 for i in range(1, 7)}
    workspace = make_workspace(
        home, hidden, tasks, options="shared_storage: true\nhosts: any\n" + HOST_TIMEOUT
    )
    home.ok("launch", cwd=workspace)
    status = home.wait_phase(workspace, {"finished"}, timeout=180)
    journal = read_journal(workspace)
    [refused] = [e for e in journal if e["event"] == "host refused"]
    assert refused["host"] == "h3"
    assert f"cannot read the definition {workspace / 'evalset.py'}" in refused["reason"]
    placed = {e.get("host") for e in journal if e["event"] == "spawned"}
    assert "h3" not in placed and not [e for e in journal if e["event"] == "host lost"]
    assert status["state"]["refused_hosts"] == {"h3": refused["reason"]}
    assert_each_sample_once(workspace, tasks)
    home.ok("cancel", "--reason", "checked", cwd=workspace)


def stuck_on_another_host(home, cluster, workspace_root):
    """A sample stuck in a task worker on h2 is found through h2's own look at its control
    sockets and asked about, as one on the workspace's host would be."""
    held = Path(cluster.env["STEWARD_OFFLINE_HOLD"])
    tasks = {"quick": 2, "sleepy": 2}
    workspace = make_workspace(
        home,
        workspace_root,
        tasks,
        options="stuck_after: 2s\nsamples_ramp: [2, 2]\nshared_storage: true\nhosts: [h2]\n"
        + HOST_TIMEOUT,
    )
    held.write_text("h2's samples wait: they are stuck\n")
    try:
        home.ok("launch", cwd=workspace)
        [remote] = wait_for(lambda: _on(home, workspace, "h2"), what="a task worker on h2")

        def stuck() -> dict | None:
            decisions = home.ok("collect", "--since", "0", cwd=workspace)["decisions"]
            return next((d for d in decisions if d["kind"] == "stuck_sample"), None)

        decision = wait_for(stuck, timeout=120, interval=1.0, what="a stuck_sample decision")
        names = {t["spec"]["identifier"]: t["spec"]["name"] for t in home.state(workspace)["tasks"]}
        assert names[remote["tasks"][0]] in json.dumps(decision), decision
    finally:
        held.unlink(missing_ok=True)
    home.wait_phase(workspace, {"finished"}, timeout=180)
    assert_each_sample_once(workspace, tasks)
    home.ok("cancel", "--reason", "checked", cwd=workspace)


def four_hosts_one_killed_one_partitioned(home, cluster, workspace_root):
    h1, h3 = cluster["h1"], cluster["h3"]
    held = Path(cluster.env["STEWARD_OFFLINE_HOLD"])
    tasks = {f"t{i:02}": 30 for i in range(1, 17)}
    workspace = make_workspace(
        home,
        workspace_root,
        tasks,
        options="samples_ramp: [2, 2]\nmax_workers: 4\nshared_storage: true\nhosts: any\n"
        "heartbeat: false\n" + HOST_TIMEOUT,
    )
    held.write_text("the hosts' samples wait\n")
    home.ok("launch", cwd=workspace)
    wait_for(
        lambda: (
            {w.get("host", "") for w in home.state(workspace)["workers"].values()}
            == {"", "h1", "h2", "h3"}
        ),
        what="a task worker on each of the four hosts",
        describe=lambda: home.state(workspace)["workers"],
    )
    doomed = {
        i for w in _on(home, workspace, "h1") + _on(home, workspace, "h3") for i in w["tasks"]
    }

    def completed() -> int:
        state = home.state(workspace)
        return sum(
            t["progress"]["completed"] for t in state["tasks"] if t["spec"]["identifier"] in doomed
        )

    held.unlink()
    wait_for(lambda: completed() >= 6, what="progress on h1 and h3")
    held.write_text("the hosts' samples wait until their tasks have moved\n")
    before = _done_samples(home, workspace)
    cluster.kill(h3)
    cluster.link_down(h1)
    try:
        wait_for(lambda: _lost(workspace) == ["h1", "h3"], timeout=120, what="h1 and h3 lost")
    finally:
        held.unlink(missing_ok=True)
        cluster.link_up(h1)
    status = home.wait_phase(workspace, {"finished"}, timeout=300)
    assert all(t["phase"] == "complete" for t in status["state"]["tasks"])
    assert _lost(workspace) == ["h1", "h3"]
    assert_each_sample_once(workspace, tasks)
    _kept(status, before)
    assert not cluster.task_workers(h1)
