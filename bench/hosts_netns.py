"""bench.hosts on real test hosts (harness/netns.py): each host a network namespace with its own
address, reaching the home Steward's Temporal over its veth link, its Steward worker (and so its
task workers) pinned with taskset to its share of the machine's cores.

Speed: the same CPU-bound run (4 tasks of the offline model with no delay: each sample's CPU is
the limit) on one host (home, pinned to CPU 0; `hosts` unset), on two (home + h1, a CPU each)
and on four (home, h1, h2, h3: on a 2-CPU machine two hosts share each CPU, so four hosts have
what two have). Wall time is from `steward launch --no-smoke` returning to the last sample.

Faults, each on a run over all four hosts (`host_timeout: 30s`, 4 x 150 samples at 0.5 s, two
at a time, so it is mid-run): h3 killed (SIGKILL to everything in its namespace), then, on a
fresh run, h2's link taken down while its Steward and task workers keep running. Measured from
the fault to the moment every moved task runs again (a new live worker holds it); each run is
then let finish and its logs counted: samples_duplicated and samples_lost must be 0.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from harness.helpers import STEWARD, Steward, make_workspace, wait_for
from harness.netns import Cluster, home_env

from .common import run_to_last_sample, wait_until_moved

HOST_TIMEOUT_S = 30


def _workspace(home: Steward, root: Path, name: str, samples: int, options: str, env: str = ""):
    return make_workspace(
        home,
        root / name,
        {f"part_{i}": samples for i in range(4)},
        tend_interval="5s",
        options=options,
        dotenv=env,
    )


def _counted(workspace: Path, samples: int) -> tuple[int, int]:
    """(duplicated, lost) over the run's final logs."""
    from inspect_ai.log import read_eval_log

    seen: dict[str, list] = {}
    for path in sorted((workspace / "logs").glob("*.eval")):
        log = read_eval_log(str(path))
        seen.setdefault(log.eval.task, []).extend((s.id, s.epoch) for s in log.samples or [])
    duplicated = sum(len(ids) - len(set(ids)) for ids in seen.values())
    lost = sum(samples - len(set(seen.get(f"part_{i}", []))) for i in range(4))
    return duplicated, lost


def _fault_to_resume(home: Steward, workspace: Path, host: str, fault) -> float:
    home.ok("launch", "--no-smoke", cwd=workspace)
    remote = wait_for(
        lambda: [w for w in home.state(workspace)["workers"].values() if w.get("host") == host],
        timeout=300,
        what=f"task workers on {host}",
    )
    moved = {i for w in remote for i in w["tasks"]}

    def progress() -> int:
        tasks = home.state(workspace)["tasks"]
        return min(t["progress"]["completed"] for t in tasks if t["spec"]["identifier"] in moved)

    wait_for(lambda: progress() >= 10, timeout=300, what=f"progress on {host}")
    fault()
    at = time.monotonic()
    old = {w["worker_id"] for w in remote}
    wait_until_moved(home, workspace, moved, old, timeout=HOST_TIMEOUT_S + 300)
    return time.monotonic() - at


def measure(root: Path, home: Steward, samples: int, say) -> dict:
    """Every figure, on one home Steward (server and worker started here) and three hosts."""
    results: dict = {}
    home = Steward(home_env(home.env))
    home.ok("server", "start")
    import subprocess

    subprocess.run(
        ["taskset", "-c", "0", STEWARD, "worker", "start", "--json"],
        env=home.env, check=True, capture_output=True, timeout=300,
    )  # fmt: skip
    cpus = os.cpu_count() or 1
    pins = [str(k % cpus) for k in (1, 2, 3)]  # h1, h2, h3 after home on CPU 0
    try:
        with Cluster(home, 3, root / "hosts", cpus=pins) as cluster:
            wait_for(
                lambda: (
                    {"h1", "h2", "h3"}
                    <= {h["host_id"] for h in home.ok("hosts")["hosts"] if h["state"] == "live"}
                ),
                timeout=120,
                what="the hosts live",
            )
            shared = "shared_storage: true\n"
            say("one host (CPU 0) ...")
            ws = _workspace(home, root, "one", samples, "")
            results["one_host_s"] = run_to_last_sample(home, ws)
            say("two hosts (home + h1, a CPU each) ...")
            ws = _workspace(home, root, "two", samples, shared + "hosts: [h1]\n")
            results["two_hosts_s"] = run_to_last_sample(home, ws)
            say(f"four hosts (home, h1, h2, h3 over {cpus} CPUs) ...")
            ws = _workspace(home, root, "four", samples, shared + "hosts: any\n")
            results["four_hosts_s"] = run_to_last_sample(home, ws)

            slow = shared + f"hosts: any\nhost_timeout: {HOST_TIMEOUT_S}s\nsamples_ramp: [2, 2]\n"
            duplicated = lost = 0
            for key, host, fault in (
                ("host_loss_to_resume_s", "h3", lambda: cluster.kill(cluster["h3"])),
                ("host_partition_to_resume_s", "h2", lambda: cluster.link_down(cluster["h2"])),
            ):
                say(f"{key} ({host}, host_timeout {HOST_TIMEOUT_S} s) ...")
                ws = _workspace(home, root, key, 150, slow, env="STEWARD_OFFLINE_DELAY=0.5\n")
                results[key] = _fault_to_resume(home, ws, host, fault)
                home.wait_phase(ws, {"finished"}, timeout=900)
                cluster.link_up(cluster["h2"])
                more_duplicated, more_lost = _counted(ws, 150)
                duplicated, lost = duplicated + more_duplicated, lost + more_lost
                home("cancel", "--reason", "measured", cwd=ws)
            results["samples_duplicated"], results["samples_lost"] = duplicated, lost
    finally:
        home("worker", "stop")
        home("server", "stop")
    return results
