"""The ports tests hand to servers that bind them later (harness.helpers.free_port): never one an
outgoing connection can take meanwhile (the kernel's ephemeral range), never one twice, and a
block of their own for each pytest-xdist process."""

from __future__ import annotations

from pathlib import Path

from harness import helpers


def test_ports_are_distinct_and_below_the_ephemeral_range(monkeypatch):
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    ports = [helpers.free_port() for _ in range(50)]
    assert len(set(ports)) == 50
    ephemeral = Path("/proc/sys/net/ipv4/ip_local_port_range")
    low = int(ephemeral.read_text().split()[0]) if ephemeral.is_file() else 32768
    assert all(
        helpers.HANDED_PORTS.start <= port < min(low, helpers.HANDED_PORTS.stop) for port in ports
    )


def test_each_xdist_process_has_a_block_of_its_own(monkeypatch):
    blocks = {}
    for worker in ("gw0", "gw1", "gw3"):
        monkeypatch.setenv("PYTEST_XDIST_WORKER", worker)
        blocks[worker] = {
            (helpers.free_port() - helpers.HANDED_PORTS.start) // helpers.PORTS_PER_PROCESS
            for _ in range(5)
        }
    assert blocks == {"gw0": {1}, "gw1": {2}, "gw3": {4}}
