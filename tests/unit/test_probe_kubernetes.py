"""The Kubernetes capacity probe, through the real `kubernetes` client, against a fake API."""

from __future__ import annotations

import pytest

from harness.fake_kubernetes import TOKEN, FakeKubernetes, write_kubeconfig
from harness.helpers import free_port
from steward.activities.capacity.probe_kubernetes import (
    kubernetes_reading,
    parse_quantity,
    quota_event,
)
from steward.workflows.policy.capacity import GI

COMPUTE = {"pods": "10", "requests.cpu": "8", "requests.memory": "16Gi"}
COMPUTE_USED = {"pods": "4", "requests.cpu": "2500m", "requests.memory": "4Gi"}


@pytest.fixture
def fake():
    server = FakeKubernetes()
    yield server
    server.close()


@pytest.fixture
def kubeconfig(fake, tmp_path):
    return str(write_kubeconfig(tmp_path / "config", fake.url, namespace="evals"))


@pytest.mark.parametrize(
    "text, value",
    [
        ("2", 2.0),
        ("500m", 0.5),
        ("1.5", 1.5),
        ("8Gi", 8 * GI),
        ("512Mi", 512 * 1024**2),
        ("1G", 1e9),
        ("100k", 1e5),
        ("1e3", 1000.0),
        ("1073741824", float(GI)),
    ],
)
def test_quantities(text, value):
    assert parse_quantity(text) == value
    assert isinstance(parse_quantity(text), float)


def test_reading_with_a_quota(fake, kubeconfig):
    fake.set_quota("evals", "compute-quota", COMPUTE, COMPUTE_USED)
    reading = kubernetes_reading("evals", kubeconfig=kubeconfig)
    assert reading.problem is None
    assert reading.backend == "kubernetes"
    assert reading.limits == {"pods": 10, "requests.cpu": 8, "requests.memory": 16 * GI}
    assert reading.used == {"pods": 4, "requests.cpu": 2.5, "requests.memory": 4 * GI}
    assert reading.source == "ResourceQuota compute-quota in namespace evals"
    assert fake.requests[-1] == ("/api/v1/namespaces/evals/resourcequotas", f"Bearer {TOKEN}")


def test_tightest_quota_wins_per_key(fake, kubeconfig):
    fake.set_quota("evals", "compute-quota", COMPUTE, COMPUTE_USED)
    # more pods but less free CPU (bare `cpu` means requests.cpu); other keys are ignored
    fake.set_quota(
        "evals",
        "team-quota",
        {"pods": "50", "cpu": "4", "limits.cpu": "1", "count/configmaps": "5"},
        {"pods": "45", "cpu": "3"},
    )
    reading = kubernetes_reading("evals", kubeconfig=kubeconfig)
    # pods: compute leaves 6, team leaves 5; cpu: compute leaves 5.5, team leaves 1
    assert reading.limits == {"pods": 50, "requests.cpu": 4, "requests.memory": 16 * GI}
    assert reading.used == {"pods": 45, "requests.cpu": 3, "requests.memory": 4 * GI}
    assert reading.source == "ResourceQuotas compute-quota, team-quota in namespace evals"


def test_no_quota_is_unbounded(fake, kubeconfig):
    fake.set_quota("elsewhere", "compute-quota", COMPUTE, COMPUTE_USED)
    reading = kubernetes_reading("evals", kubeconfig=kubeconfig)
    assert reading.problem is None
    assert reading.limits == {} and reading.used == {}
    assert reading.source == "no ResourceQuota in namespace evals"


def test_namespace_from_the_kubeconfig_context(fake, kubeconfig, tmp_path):
    fake.set_quota("evals", "compute-quota", COMPUTE, COMPUTE_USED)
    reading = kubernetes_reading(kubeconfig=kubeconfig)
    assert reading.source == "ResourceQuota compute-quota in namespace evals"
    assert reading.limits["pods"] == 10
    # a context without a namespace means "default"
    bare = write_kubeconfig(tmp_path / "bare", fake.url, namespace=None)
    assert (
        kubernetes_reading(kubeconfig=str(bare)).source == "no ResourceQuota in namespace default"
    )


def test_live_change_applies_to_the_next_reading(fake, kubeconfig):
    fake.set_quota("evals", "compute-quota", COMPUTE, COMPUTE_USED)
    assert kubernetes_reading(kubeconfig=kubeconfig).limits["pods"] == 10
    fake.set_quota(
        "evals", "compute-quota", {**COMPUTE, "pods": "20"}, {**COMPUTE_USED, "pods": "7"}
    )
    reading = kubernetes_reading(kubeconfig=kubeconfig)
    assert (reading.limits["pods"], reading.used["pods"]) == (20, 7)
    fake.clear("evals")
    assert kubernetes_reading(kubeconfig=kubeconfig).limits == {}


def test_unreachable_server_is_a_problem(tmp_path):
    closed = write_kubeconfig(tmp_path / "config", f"http://127.0.0.1:{free_port()}", "evals")
    reading = kubernetes_reading(kubeconfig=str(closed), timeout=2)
    assert reading.limits == {}
    assert "namespace evals" in reading.problem
    assert "\n" not in reading.problem


def test_forbidden_is_a_problem(fake, kubeconfig):
    fake.set_quota("evals", "compute-quota", COMPUTE, COMPUTE_USED)
    fake.forbidden = True
    reading = kubernetes_reading("evals", kubeconfig=kubeconfig)
    assert reading.limits == {}
    assert "namespace evals" in reading.problem and "403 Forbidden" in reading.problem


def test_bad_kubeconfig_is_a_problem(tmp_path):
    missing = kubernetes_reading("evals", kubeconfig=str(tmp_path / "nope"))
    assert missing.limits == {} and "namespace evals" in missing.problem
    garbage = tmp_path / "garbage"
    garbage.write_text("clusters: [\n")
    problem = kubernetes_reading("evals", kubeconfig=str(garbage)).problem
    assert "namespace evals" in problem and "\n" not in problem


def test_quota_event_when_pods_exceed_free(fake, kubeconfig):
    fake.set_quota("evals", "compute-quota", COMPUTE, COMPUTE_USED)
    reading = kubernetes_reading("evals", kubeconfig=kubeconfig)
    fits = {"pods": 6, "requests.cpu": 5.5, "requests.memory": 12 * GI}
    assert quota_event(reading, fits) is None
    assert quota_event(reading, {**fits, "pods": 7}) == {
        "event": "quota exceeded",
        "namespace": "evals",
        "key": "pods",
        "wanted": 7,
        "free": 6,
        "hard": 10,
    }
    unbounded = kubernetes_reading("other", kubeconfig=kubeconfig)
    assert quota_event(unbounded, {"pods": 1000}) is None
