"""Reaching Temporal fails with the cause in words: an address that never answers says it timed
out (the wait's empty message used to read "()"), one that refuses says so. Local sockets only:
no traffic leaves this machine."""

from __future__ import annotations

import asyncio
import socket

import pytest

from steward.cli import run_calls
from steward.cli.output import CommandError
from steward.worker.connect import Target, connect_failure


def _cluster(address: str) -> Target:
    return Target(address=address, namespace="default", embedded=False, ui_url=None)


def test_an_address_that_accepts_and_never_answers_timed_out(monkeypatch):
    monkeypatch.setattr(run_calls, "CONNECT_SECONDS", 1.0)
    with socket.socket() as silent:  # the kernel completes connections from the backlog
        silent.bind(("127.0.0.1", 0))
        silent.listen(16)
        address = f"127.0.0.1:{silent.getsockname()[1]}"
        with pytest.raises(CommandError) as failed:
            asyncio.run(run_calls.client_for(_cluster(address)))
    assert str(failed.value) == (
        f"Cannot reach Temporal at {address} (timed out: nothing answered within 1 s); "
        "check STEWARD_TEMPORAL_ADDRESS."
    )


def test_an_address_nobody_listens_on_is_refused_in_the_os_words():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        address = f"127.0.0.1:{taken.getsockname()[1]}"  # bound, not listening: refused
        with pytest.raises(CommandError) as failed:
            asyncio.run(run_calls.client_for(_cluster(address)))
    assert str(failed.value) == (
        f"Cannot reach Temporal at {address} (Connection refused); check STEWARD_TEMPORAL_ADDRESS."
    )


def test_the_cause_in_a_few_words():
    assert connect_failure(TimeoutError(), 15) == "timed out: nothing answered within 15 s"
    assert connect_failure(RuntimeError("no\n  route"), 15) == "no route"
    assert connect_failure(RuntimeError(""), 15) == "RuntimeError"
