"""Hosts as plain data: who is live, which hosts a run admits, when the registry must tell a
run of a loss, and where each group of tasks is placed (workflows/policy/hosts.py)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from steward.workflows.policy.hosts import (
    HostInfo,
    HostLoad,
    Subscription,
    admitted,
    is_live,
    newly_lost,
    next_expiry,
    place,
)

NOW = datetime(2026, 12, 5, 12, 0, tzinfo=UTC)


def _host(name: str, silent_s: float = 0.0, **fields) -> HostInfo:
    return HostInfo(
        host_id=name, queue=f"q-{name}", last_seen=NOW - timedelta(seconds=silent_s), **fields
    )


def test_live_means_heard_within_the_timeout_and_not_stopping():
    assert is_live(_host("a", 119), NOW, 120)
    assert not is_live(_host("a", 120), NOW, 120)
    assert not is_live(_host("a", 1, stopping=True), NOW, 120)
    assert not is_live(HostInfo(host_id="never", queue="q"), NOW, 120)


def test_a_run_admits_its_home_always_and_others_only_when_named():
    hosts = [_host("a"), _host("b"), _host("c")]
    assert [h.host_id for h in admitted(hosts, None, "a")] == ["a"]
    assert [h.host_id for h in admitted(hosts, ["c"], "a")] == ["a", "c"]
    assert [h.host_id for h in admitted(hosts, "any", "a")] == ["a", "b", "c"]


def test_the_registry_tells_each_subscribed_run_once_after_its_own_timeout():
    hosts = {"a": _host("a", 5), "b": _host("b", 100)}
    subs = {
        "run-1": Subscription(run_id="run-1", hosts=["b"], timeout_s=90),
        "run-2": Subscription(run_id="run-2", hosts=["a", "b"], timeout_s=120),
    }
    lost = newly_lost(hosts, subs, {}, NOW)
    assert [(run, loss.host_id, loss.queue) for run, loss in lost] == [("run-1", "b", "q-b")]
    assert lost[0][1].last_seen == NOW - timedelta(seconds=100)
    assert newly_lost(hosts, subs, {"run-1": ["b"]}, NOW) == []  # told already
    # The next to wake for: run-2's b, 20 s from now (run-1's b is told; a has 115 s left).
    assert next_expiry(hosts, subs, {"run-1": ["b"]}, NOW) == timedelta(seconds=20)
    assert next_expiry(hosts, {}, {}, NOW) is None


def test_placement_spreads_by_free_cpu_and_sends_a_respawn_home():
    hosts = [
        HostLoad(host_id="a", queue="qa", cpus=2, workers=1),
        HostLoad(host_id="b", queue="qb", cpus=2),
    ]
    # b is free; then a and b are even (2 cpus, 1 worker each) and the name breaks the tie.
    assert place([["t1"], ["t2"], ["t3"]], hosts, {}) == ["b", "a", "b"]
    # A task goes back to the host it last ran on while that host is live.
    assert place([["t1"]], hosts, {"t1": "a"}) == ["a"]
    # ... and somewhere else once that host is not among the live ones.
    assert place([["t1"]], hosts[1:], {"t1": "a"}) == ["b"]
    assert place([["t1"]], [], {}) == [None]


def test_placement_counts_sandbox_room():
    hosts = [
        HostLoad(host_id="a", queue="qa", cpus=8, sandboxes_free=0),
        HostLoad(host_id="b", queue="qb", cpus=1, sandboxes_free=1),
    ]
    assert place([["s1"], ["plain"]], hosts, {}, sandboxed={"s1"}) == ["b", "a"]
    assert place([["s1"], ["s2"]], hosts, {}, sandboxed={"s1", "s2"}) == ["b", None]


def test_a_hosts_free_sandboxes_are_its_ledgers_bound_less_what_is_in_use():
    from steward.workflows.policy.capacity import Ledger, free

    assert (
        free(Ledger(domain="d", limits={"sandboxes": 4}, observed={"sandboxes": 3}), "sandboxes")
        == 1
    )
    assert (
        free(Ledger(domain="d", limits={"sandboxes": 2}, observed={"sandboxes": 5}), "sandboxes")
        == 0
    )
    assert free(Ledger(domain="d"), "sandboxes") is None  # no bound: unbounded
