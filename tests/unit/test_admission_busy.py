"""A burst of launches meets Temporal's limit of 10 updates in flight per workflow, and a
ledger's handover aborts the updates in flight: the admission asks again within about a second
instead of failing its attempt into the activity's backoff. Run in the SDK's activity
environment (heartbeats and all); the ledger's handle is a stand-in that answers busy first."""

from __future__ import annotations

import pytest
from temporalio.service import RPCError, RPCStatusCode
from temporalio.testing import ActivityEnvironment

from steward.activities.capacity import capacity


class BusyLedger:
    """Answers with `errors` in turn, then admits."""

    def __init__(self, *errors: RPCError) -> None:
        self.errors, self.calls = list(errors), 0

    async def execute_update(self, update, request):
        self.calls += 1
        if self.errors:
            raise self.errors.pop(0)
        return ("admitted", request)


def _busy(status: RPCStatusCode, message: str) -> RPCError:
    return RPCError(message, status, b"")


async def test_a_busy_or_handed_over_ledger_is_asked_again_until_it_admits():
    ledger = BusyLedger(
        _busy(RPCStatusCode.RESOURCE_EXHAUSTED, "limit on number of concurrent in-flight updates"),
        _busy(RPCStatusCode.UNAVAILABLE, "workflow update was aborted"),
        _busy(RPCStatusCode.RESOURCE_EXHAUSTED, "limit on number of concurrent in-flight updates"),
    )
    heartbeats: list = []
    env = ActivityEnvironment()
    env.on_heartbeat = lambda *details: heartbeats.append(details)
    assert await env.run(capacity._admit, ledger, "run-1") == ("admitted", "run-1")
    assert ledger.calls == 4 and len(heartbeats) == 3


async def test_any_other_error_fails_the_attempt_at_once():
    ledger = BusyLedger(_busy(RPCStatusCode.INVALID_ARGUMENT, "bad request"))
    with pytest.raises(RPCError, match="bad request"):
        await ActivityEnvironment().run(capacity._admit, ledger, "run-1")
    assert ledger.calls == 1


async def test_a_ledger_busy_past_the_patience_leaves_it_to_the_activitys_retry(monkeypatch):
    monkeypatch.setattr(capacity, "BUSY_FOR_S", 0.2)
    ledger = BusyLedger(*[_busy(RPCStatusCode.RESOURCE_EXHAUSTED, "limit") for _ in range(100)])
    with pytest.raises(RPCError, match="limit"):
        await ActivityEnvironment().run(capacity._admit, ledger, "run-1")
    assert 2 <= ledger.calls < 100
