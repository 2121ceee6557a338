"""A big run's state and every payload it sends or answers stay bounded (issue: a run of 50,000
samples, 5,000 of them errored in 3 classes, 1,000 decisions, 1,000 unwritten journal events).
bench/state_size.py builds that run with the run's own policy and measures each payload as
Temporal carries it; before the triage ledger the state alone was 5.2 MB."""

from __future__ import annotations

from bench.state_size import BOUND, measure

TEMPORAL_PAYLOAD_LIMIT = 2 * 1024 * 1024  # limit.blobSize.error


def test_every_payload_of_a_big_run_stays_under_the_bound():
    figures = measure()
    assert figures["errored_samples"] == 5_000 and figures["decisions_raised"] >= 1_000
    over = {k: v for k, v in figures.items() if k.endswith("_bytes") and k != "state_all_open_bytes" and v >= BOUND}  # fmt: skip
    assert over == {}
    # Even with all 1,000 decisions open at once the state stays under Temporal's limit.
    assert figures["state_all_open_bytes"] < TEMPORAL_PAYLOAD_LIMIT
