"""Docker address pools on `launch`: advice from the daemon (a fake Engine API on a Unix socket,
fixture `fake_docker`), and daemon.json merged only when told (the advice and the merge
themselves are in tests/unit/test_docker_pools.py)."""

from __future__ import annotations

import json

from harness.helpers import make_workspace
from steward.activities.capacity.docker_pools import FINER_POOLS


def test_launch_advises_and_merges_only_when_told(steward, workspace_root, fake_docker):
    daemon = fake_docker(None)  # built-in pools: 32 networks
    workspace = make_workspace(
        steward,
        workspace_root,
        {"swe": 300},
        options="tend_interval: 1h\n",
        sandbox={"swe": "docker"},
        eval_set_args=", max_sandboxes=100",
    )
    daemon_json = workspace_root / "etc-docker" / "daemon.json"
    env = {"DOCKER_HOST": daemon.url}

    declined = steward(
        "launch", "--json", "--daemon-json", str(daemon_json), cwd=workspace, env=env
    )
    assert declined.code == 0, declined.stderr
    advice = declined.json["docker_pools"]
    assert advice == {
        "wanted": 100,
        "networks": 32,
        "short": True,
        "daemon_json": str(daemon_json),
        "written": False,
        "backup": None,
    }
    assert not daemon_json.exists()
    steward.ok("cancel", cwd=workspace)

    human = steward("launch", "--daemon-json", str(daemon_json), cwd=workspace, env=env)
    assert human.code == 0 and "wants up to 100 Docker sandboxes" in human.stdout
    assert '"default-address-pools"' in human.stdout and "systemctl restart docker" in human.stdout
    steward.ok("cancel", cwd=workspace)

    accepted = steward(
        "launch",
        "--json",
        "--docker-pools",
        "accept",
        "--daemon-json",
        str(daemon_json),
        cwd=workspace,
        env=env,
    )
    assert accepted.code == 0 and accepted.json["docker_pools"]["written"] is True
    assert json.loads(daemon_json.read_text()) == {"default-address-pools": FINER_POOLS}
    steward.ok("cancel", cwd=workspace)

    refused = steward("launch", "--docker-pools", "maybe", cwd=workspace)
    assert refused.code == 2 and "'maybe' is not one of" in refused.stderr
