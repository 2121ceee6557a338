"""A Docker run with no bound set is held to Inspect's own default for per-sample sandboxes,
2 x the CPUs of the host's worker (seed 000), not agentsmith's 2 whole-pipeline sandboxes; and
`status` (JSON, human, status.md) says where the bound came from. The Docker engine is the fake
Engine API (harness/fake_docker.py); the samples run in the local sandbox, counted against it."""

from __future__ import annotations

import os

import pytest

from harness.helpers import make_workspace

WANTED = 500  # the run's starting footprint: far more than any host's default bound


def test_no_bound_set_admits_two_sandboxes_per_cpu(steward, workspace_root, fake_docker):
    if "SANDBOX_MAX_CONCURRENT" in os.environ:
        pytest.skip("SANDBOX_MAX_CONCURRENT is set here: the bound would be that")
    # The worker inherits this process's CPUs (it is started from it, not pinned otherwise).
    cpus = len(os.sched_getaffinity(0))
    if 2 * cpus >= WANTED:
        pytest.skip(f"{cpus} CPUs: the default bound would not cut a {WANTED}-sandbox run")
    daemon = fake_docker(None)
    hold = workspace_root / "hold"
    hold.write_text("the run's samples wait while this file exists\n")
    workspace = make_workspace(
        steward,
        workspace_root,
        {"boxed": 2 * WANTED},
        tend_interval="1h",
        options=f"capacity_backend: docker\nsamples_ramp: [{WANTED}, {2 * WANTED}]\n",
        sandbox={"boxed": "local"},
        dotenv=f"DOCKER_HOST={daemon.url}\nSTEWARD_OFFLINE_HOLD={hold}\n",
    )
    source = f"2 x {cpus} CPUs (Inspect's default)"
    try:
        launched = steward.ok("launch", cwd=workspace)
        capacity = launched["state"]["capacity"]
        # Bigger than its whole domain, it is admitted into it with its setpoint cut to fit.
        assert capacity["held"] == {"sandboxes": 2 * cpus}, capacity
        assert capacity["bound_source"] == source
        assert [t["max_samples"] for t in launched["state"]["tasks"]] == [2 * cpus]

        assert steward.status(workspace)["state"]["capacity"]["bound_source"] == source
        shown = steward("status", cwd=workspace)
        assert shown.code == 0, shown.stderr
        assert f"bound from {source}" in " ".join(shown.stdout.split())
        assert f"bound from {source}" in (workspace / "status.md").read_text()
    finally:
        steward("cancel", cwd=workspace)
