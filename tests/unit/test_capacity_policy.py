"""The capacity ledger's pure policy: FIFO order, no overtaking, idempotent enqueue,
release -> pump, bound resolution, 0 = unbounded, escalation, footprints."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from steward.workflows.policy import capacity, capacity_contracts, ramp
from steward.workflows.policy.capacity import (
    AdmitRequest,
    Footprint,
    Ledger,
    ProbeReading,
    Release,
    SandboxSize,
)

T0 = datetime(2026, 12, 3, 8, 0, tzinfo=UTC)


def _ledger(bound: int | None = 4, used: int = 0) -> Ledger:
    ledger = Ledger(domain="docker-test")
    capacity.note_reading(ledger, _reading(bound, used))
    return ledger


def _reading(bound: int | None, used: int = 0) -> ProbeReading:
    return ProbeReading(
        backend="docker", limits={"sandboxes": bound}, used={"sandboxes": used}, source="test"
    )


def _ask(ledger: Ledger, run: str, sandboxes: int, door="launch", at: int = 0, reading=None):
    return capacity.admit(
        ledger,
        AdmitRequest(
            run_id=run,
            workspace=f"/ws/{run}",
            footprint=Footprint(resources={"sandboxes": sandboxes}),
            door=door,
            reading=reading,
        ),
        T0 + timedelta(seconds=at),
    )


def test_fits_now_is_reserved_else_queued_with_position_and_reason():
    ledger = _ledger(bound=4)
    first = _ask(ledger, "a", 3)
    assert first.granted and first.resources == {"sandboxes": 3}
    second = _ask(ledger, "b", 2)
    assert not second.granted and second.position == 1
    assert second.reason == "needs 2 sandboxes, 1 free of 4"
    third = _ask(ledger, "c", 1)
    assert not third.granted and third.position == 2
    assert "1 run(s) ahead" in third.reason


def test_a_small_run_never_overtakes_a_big_one():
    ledger = _ledger(bound=4)
    _ask(ledger, "a", 3)
    _ask(ledger, "big", 4)
    small = _ask(ledger, "small", 1)  # would fit in the 1 free sandbox, but "big" is ahead
    assert not small.granted and small.position == 2
    capacity.release(ledger, Release(run_id="a", footprint=Footprint(resources={"sandboxes": 2})))
    assert capacity.pump(ledger, T0) == []  # 2 free: still not enough for the head
    assert [e.run_id for e in ledger.queue] == ["big", "small"]


def test_enqueue_is_idempotent_one_entry_per_run():
    ledger = _ledger(bound=2)
    _ask(ledger, "a", 2)
    for _ in range(3):
        again = _ask(ledger, "b", 2)
        assert again.position == 1
    assert [e.run_id for e in ledger.queue] == ["b"]
    assert _ask(ledger, "a", 2).granted  # asking again when admitted changes nothing
    assert len(ledger.reservations) == 1


def test_release_pumps_the_head_in_arrival_order():
    ledger = _ledger(bound=2)
    _ask(ledger, "a", 2)
    _ask(ledger, "b", 1, at=1)
    _ask(ledger, "c", 1, at=2)
    _ask(ledger, "d", 2, at=3)
    assert capacity.release(ledger, Release(run_id="a"))
    admitted = capacity.pump(ledger, T0 + timedelta(seconds=5))
    assert [e.run_id for e in admitted] == ["b", "c"]  # both fit; d waits for them
    assert capacity.position(ledger, "d") == 1
    assert ledger.pumped == 2 and set(ledger.reservations) == {"b", "c"}
    capacity.release(ledger, Release(run_id="b"))
    assert capacity.pump(ledger, T0) == []  # d needs 2, only 1 free
    capacity.release(ledger, Release(run_id="c"))
    assert [e.run_id for e in capacity.pump(ledger, T0)] == ["d"]


def test_withdraw_takes_a_queued_run_out():
    ledger = _ledger(bound=1)
    _ask(ledger, "a", 1)
    _ask(ledger, "b", 1)
    _ask(ledger, "c", 1)
    assert capacity.withdraw(ledger, "b")
    assert not capacity.withdraw(ledger, "b")
    assert capacity.position(ledger, "c") == 1


def test_zero_means_unbounded_and_unset_falls_through():
    assert capacity.resolve_docker_bound(5, "9", 4) == (5, "max_concurrent_sandboxes=5")
    assert capacity.resolve_docker_bound(0, "9", 4) == (None, "max_concurrent_sandboxes=0")
    assert capacity.resolve_docker_bound(None, "9", 4) == (9, "SANDBOX_MAX_CONCURRENT=9")
    assert capacity.resolve_docker_bound(None, "0", 4) == (None, "SANDBOX_MAX_CONCURRENT=0")
    ledger = _ledger(bound=None)
    assert all(_ask(ledger, run, 1000).granted for run in "abc")


@pytest.mark.parametrize("cpus", [1, 2, 32])
def test_left_unset_the_docker_bound_is_inspects_default_of_two_per_cpu(cpus):
    # Seed 000: per-sample Docker sandboxes are limited to 2 x the available CPUs, the same
    # rule as the fleet's sandbox budget; agentsmith's default of 2 was for whole pipelines.
    default = (2 * cpus, f"2 x {cpus} CPUs (Inspect's default)")
    assert capacity.resolve_docker_bound(None, None, cpus) == default
    assert capacity.resolve_docker_bound(None, "many", cpus) == default
    assert capacity.resolve_docker_bound(None, " ", cpus) == default
    assert default[0] == ramp.sandbox_budget(None, ["docker"], cpus)


def test_a_host_reporting_no_cpus_still_gets_two_sandboxes():
    assert capacity.resolve_docker_bound(None, None, 0) == (2, "2 x 1 CPUs (Inspect's default)")


def test_probe_usage_outside_steward_counts_and_a_changed_bound_applies_next():
    ledger = _ledger(bound=4, used=3)  # three sandboxes running that we did not reserve
    assert not _ask(ledger, "a", 2).granted
    # The bound is raised: the next decision (any door) sees it and the head gets in.
    assert _ask(ledger, "b", 1, reading=_reading(8, used=3)).position == 2
    assert [e.run_id for e in capacity.pump(ledger, T0)] == ["a", "b"]


def test_a_run_bigger_than_the_domain_gets_the_whole_domain_when_it_is_empty():
    ledger = _ledger(bound=4)
    huge = _ask(ledger, "huge", 40)
    assert huge.granted and huge.resources == {"sandboxes": 4}


def test_escalation_never_overtakes_and_quotes_the_shortfall():
    ledger = _ledger(bound=6)
    _ask(ledger, "a", 2)
    grown = _ask(ledger, "a", 4, door="escalation")
    assert grown.granted and ledger.reservations["a"].footprint.resources == {"sandboxes": 4}
    refused = _ask(ledger, "a", 8, door="escalation")
    assert not refused.granted and refused.reason == "needs 8 sandboxes, 6 free of 6"
    _ask(ledger, "b", 4)  # queued: 2 free
    waiting = _ask(ledger, "a", 6, door="escalation")
    assert not waiting.granted and "wait for capacity" in waiting.reason
    assert ledger.reservations["a"].footprint.resources == {"sandboxes": 4}


def test_ramping_down_releases_part_and_pumps():
    ledger = _ledger(bound=4)
    _ask(ledger, "a", 4)
    _ask(ledger, "b", 2)
    smaller = Footprint(resources={"sandboxes": 2})
    assert capacity.release(ledger, Release(run_id="a", footprint=smaller))
    assert [e.run_id for e in capacity.pump(ledger, T0)] == ["b"]
    assert capacity.reserved(ledger) == {"sandboxes": 4}


def test_footprints_per_backend():
    sizes = [(10, SandboxSize(sandboxes=2, cpu=1.0, memory_gi=2.0)), (5, SandboxSize())]
    docker = capacity.footprint(sizes, "docker")
    assert docker.resources == {"sandboxes": 25} and docker.memory_gi == 25.0
    k8s = capacity.footprint(sizes, "kubernetes")
    assert k8s.resources["pods"] == 25 and k8s.resources["requests.cpu"] == 12.5
    assert k8s.resources["requests.memory"] == 25 * capacity.GI
    assert capacity.footprint(sizes, "local").empty


@pytest.mark.parametrize(
    ("sandbox", "choice", "backend"),
    [
        ("docker", "auto", "docker"),
        ("k8s", "auto", "kubernetes"),
        ("local", "auto", "local"),
        (None, "docker", "local"),
        ("local", "docker", "docker"),
        ("docker", "none", "local"),
    ],
)
def test_backend_for_sandbox_type(sandbox, choice, backend):
    assert capacity.backend_for(sandbox, choice) == backend


def test_kubernetes_quota_shortfall_names_the_key():
    ledger = Ledger(domain="k8s-evals")
    capacity.note_reading(
        ledger,
        ProbeReading(
            backend="kubernetes",
            limits={"pods": 10, "requests.memory": 8 * capacity.GI},
            used={"pods": 2, "requests.memory": 2 * capacity.GI},
        ),
    )
    wanted = Footprint(resources={"pods": 4, "requests.memory": 8 * capacity.GI})
    refused = capacity.admit(
        ledger, AdmitRequest(run_id="a", workspace="/ws", footprint=wanted), T0
    )
    assert not refused.granted
    assert refused.reason == "needs 8 Gi of memory, 6 Gi free of 8 Gi"


def test_the_reason_at_a_place_is_the_reason_for_its_run():
    """The ledger's view asks each entry's reason by its place (linear in the queue)."""
    ledger = _ledger(bound=2)
    for index, run in enumerate("abcd"):
        _ask(ledger, run, 2, at=index)
    assert [capacity.reason_at(ledger, place) for place in (1, 2, 3)] == [
        capacity.queue_reason(ledger, run) for run in "bcd"
    ]


def test_what_a_ledger_of_1000_queued_runs_carries_over_a_handover_is_under_1_mb():
    """A handover (continue-as-new) carries the ledger, its log and the runs still to signal:
    with 1,000 runs queued on Kubernetes footprints and long workspace paths, under 1 MB."""
    ledger = Ledger(domain="steward-capacity-kubernetes-" + "n" * 60)
    capacity.note_reading(
        ledger,
        ProbeReading(
            backend="kubernetes",
            limits={"pods": 4, "requests.cpu": 8, "requests.memory": 16 * capacity.GI},
            source="ResourceQuota steward in namespace " + "n" * 60,
        ),
    )
    sizes = [(4, SandboxSize(sandboxes=3, cpu=1.5, memory_gi=3.0))]
    for index in range(1_001):
        capacity.admit(
            ledger,
            AdmitRequest(
                run_id=f"steward-run-{index:06d}-" + "r" * 40,
                workspace="/home/someone/evals/" + "w" * 100 + f"/{index}",
                footprint=capacity.footprint(sizes, "kubernetes"),
                probe={"backend": "kubernetes", "workspace": "/home/someone/evals/" + "w" * 100},
                host_queue="steward-host-" + "h" * 40,
            ),
            T0 + timedelta(seconds=index),
        )
    assert len(ledger.queue) == 1_000
    pending = [
        capacity_contracts.PendingAdmission(
            run_id=f"run-{i}", admission=capacity.Admission(granted=True, resources={"pods": 4})
        )
        for i in range(2)
    ]
    carried = capacity_contracts.LedgerInput(
        domain=ledger.domain,
        ledger=ledger,
        log=["2026-12-05T10:00:00 " + "x" * 200] * 20,
        pending=pending,
    )
    size = len(carried.model_dump_json().encode())
    assert size < 1_000_000, size


# ---------------------------------------------------------------- what the ledger owes runs
def _owed(run: str, request_id: str = "", granted: bool = False, position: int | None = None):
    from steward.workflows.policy.capacity import Admission
    from steward.workflows.policy.capacity_contracts import PendingAdmission

    reason = "pumped" if granted and not request_id else ""
    return PendingAdmission(
        run_id=run,
        request_id=request_id,
        admission=Admission(granted=granted, position=position, reason=reason),
    )


def test_a_pumped_admission_goes_ahead_of_the_answers_but_behind_earlier_admissions():
    owed = [_owed("a", granted=True), _owed("x", "ask-x", position=3), _owed("y", "ask-y")]
    capacity_contracts.owe_admission(owed, _owed("b", granted=True))
    assert [o.run_id for o in owed] == ["a", "b", "x", "y"]
    capacity_contracts.owe_admission(owed, _owed("c", granted=True))
    assert [o.run_id for o in owed] == ["a", "b", "c", "x", "y"]


def test_a_run_whose_answer_is_still_owed_is_answered_with_its_admission():
    owed = [_owed("x", "ask-x", position=1), _owed("y", "ask-y", position=2)]
    capacity_contracts.owe_admission(owed, _owed("x", granted=True))
    assert [(o.run_id, o.request_id) for o in owed] == [("x", "ask-x"), ("y", "ask-y")]
    assert owed[0].admission.granted and owed[0].admission.reason == "pumped"
    assert not owed[1].admission.granted


def test_with_nothing_owed_an_admission_is_simply_owed():
    owed: list = []
    capacity_contracts.owe_admission(owed, _owed("a", granted=True))
    assert [o.run_id for o in owed] == ["a"]
