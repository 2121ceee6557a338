"""The admission activity's probe: the workspace's options are re-read at every decision (a
changed bound applies to the next one), the domain is the Docker host or the namespace, and
Kubernetes quota shortfalls are structured events."""

from __future__ import annotations

import os

from harness.fake_docker import FakeContainer
from harness.fake_kubernetes import FakeKubernetes, write_kubeconfig
from steward.activities.capacity.capacity import probe
from steward.activities.capacity.probe_kubernetes import quota_event
from steward.workflows.policy.capacity import GI
from steward.workflows.policy.capacity_contracts import ProbeRequest


def _inspect_sandbox(name: str) -> FakeContainer:
    return FakeContainer(
        name=name, labels={"com.docker.compose.project": f"inspect-swe-i{name}abcdef"}
    )


def test_docker_bound_follows_the_workspace_options_at_each_decision(tmp_path, daemon, monkeypatch):
    workspace = tmp_path / "ws"
    workspace.mkdir()
    options = workspace / "_steward.yaml"
    options.write_text("max_concurrent_sandboxes: 3\n")
    (workspace / ".env").write_text(f"DOCKER_HOST={daemon.url}\nSANDBOX_MAX_CONCURRENT=9\n")
    monkeypatch.delenv("DOCKER_HOST", raising=False)
    monkeypatch.delenv("SANDBOX_MAX_CONCURRENT", raising=False)
    daemon.server.containers = [_inspect_sandbox("one"), _inspect_sandbox("two")]
    request = ProbeRequest(backend="docker", workspace=str(workspace))

    reading, domain = probe(request, "steward-host-abc")
    assert domain == "steward-capacity-docker-steward-host-abc"
    assert reading.limits == {"sandboxes": 3} and reading.used == {"sandboxes": 2}
    assert reading.source == "max_concurrent_sandboxes=3"

    options.write_text("# the bound handed back to the environment (.env here)\n")
    reading, _ = probe(request, "steward-host-abc")
    assert reading.limits == {"sandboxes": 9} and reading.source == "SANDBOX_MAX_CONCURRENT=9"

    options.write_text("max_concurrent_sandboxes: 0\n")
    assert probe(request, "steward-host-abc")[0].limits == {"sandboxes": None}


def test_kubernetes_domain_is_the_namespace_and_a_shortfall_is_an_event(tmp_path, monkeypatch):
    fake = FakeKubernetes()
    try:
        config = write_kubeconfig(tmp_path / "config", fake.url, namespace="evals")
        monkeypatch.setenv("KUBECONFIG", str(config))
        fake.set_quota("evals", "compute", {"pods": "10", "requests.memory": "8Gi"}, {"pods": "8"})
        workspace = tmp_path / "ws"
        workspace.mkdir()
        (workspace / "_steward.yaml").write_text("kubernetes_namespace: evals\n")

        reading, domain = probe(
            ProbeRequest(backend="kubernetes", workspace=str(workspace)), "host"
        )
        assert domain == "steward-capacity-kubernetes-evals"
        assert reading.limits == {"pods": 10, "requests.memory": 8 * GI}
        event = quota_event(reading, {"pods": 4, "requests.memory": GI})
        assert event == {
            "event": "quota exceeded",
            "namespace": "evals",
            "key": "pods",
            "wanted": 4,
            "free": 2,
            "hard": 10,
        }
    finally:
        fake.close()


def test_a_broken_options_file_still_probes_and_says_why(tmp_path, monkeypatch):
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "_steward.yaml").write_text("max_concurrent_sandboxes: many\n")
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/nothing.sock")
    monkeypatch.delenv("SANDBOX_MAX_CONCURRENT", raising=False)
    reading, _ = probe(ProbeRequest(backend="docker", workspace=str(workspace)), "host")
    cpus = len(os.sched_getaffinity(0))
    assert reading.limits == {"sandboxes": 2 * cpus}  # decided on the environment: the default
    assert "max_concurrent_sandboxes" in reading.problem
