"""Docker's default-address-pools: enough networks for the sandboxes a run wants?

Every sandboxed sample gets its own compose project and so its own bridge network, carved
from the daemon's `default-address-pools`. The built-in pools give about 32 networks however
big the machine is; the seed's finer carving of the same two ranges gives 512. Steward reads the
daemon (through the `docker` client), says so when a run wants more, and can merge the finer
pools into daemon.json (with a backup). It never restarts the daemon.
"""

from __future__ import annotations

import ipaddress
import json
import os
import platform
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

# Docker's built-in pools (what a daemon without the setting uses).
BUILTIN_POOLS = [{"Base": "172.17.0.0/12", "Size": 16}, {"Base": "192.168.0.0/16", "Size": 20}]
# The seed's advice: the same two ranges, carved finer.
FINER_POOLS = [{"base": "172.17.0.0/12", "size": 20}, {"base": "192.168.0.0/16", "size": 24}]


class DaemonJsonError(Exception):
    """daemon.json cannot be read or written; the message names the file and the fix."""


def network_capacity(pools: list[dict]) -> int:
    """How many networks the pools can give (keys as the Engine API or daemon.json spell them)."""
    total = 0
    for pool in pools:
        base = ipaddress.ip_network(pool.get("Base") or pool.get("base"), strict=False)
        size = int(pool.get("Size") or pool.get("size"))
        total += 2 ** max(0, size - base.prefixlen)
    return total


def daemon_pools(base_url: str | None = None, timeout: float = 3.0) -> list[dict] | None:
    """The daemon's pools (built-in when it reports none), or None when no daemon answers."""
    import docker
    from docker.errors import DockerException

    try:
        client = (
            docker.DockerClient(base_url=base_url, timeout=timeout)
            if base_url
            else docker.from_env(timeout=timeout)
        )
        info = client.info()
    except (DockerException, OSError):
        return None
    return info.get("DefaultAddressPools") or BUILTIN_POOLS


def default_daemon_json() -> Path:
    if platform.system() == "Darwin":
        return Path.home() / ".docker" / "daemon.json"
    return Path("/etc/docker/daemon.json")


def restart_command() -> str:
    if platform.system() == "Darwin":
        return "restart Docker Desktop (whale menu > Restart)"
    return "sudo systemctl restart docker"


@dataclass
class PoolAdvice:
    wanted: int
    capacity: int | None  # None: no daemon reachable
    daemon_json: Path

    @property
    def short(self) -> bool:
        return self.capacity is not None and self.wanted > self.capacity

    def message(self) -> str:
        if self.capacity is None:
            return "No Docker daemon answered, so its address pools were not checked."
        if not self.short:
            return f"Docker's address pools give {self.capacity} networks; this run wants up to {self.wanted}."
        return (
            f"This run wants up to {self.wanted} Docker sandboxes but the daemon's default-address-pools "
            f"give only {self.capacity} networks; samples past that fail with 'could not find an available, "
            f"non-overlapping IPv4 address pool'. The finer pools below give {network_capacity(FINER_POOLS)}."
        )

    def snippet(self) -> str:
        return json.dumps({"default-address-pools": FINER_POOLS}, indent=2)


def advise(wanted: int, pools: list[dict] | None, daemon_json: Path | None = None) -> PoolAdvice:
    capacity = None if pools is None else network_capacity(pools)
    return PoolAdvice(
        wanted=wanted, capacity=capacity, daemon_json=daemon_json or default_daemon_json()
    )


def merge_finer_pools(path: Path) -> Path | None:
    """Write the finer pools into daemon.json, keeping every other setting and a backup of the
    file as it was. Returns the backup (None when there was no file). Never restarts Docker."""
    current: dict = {}
    if path.exists():
        try:
            current = json.loads(path.read_text() or "{}")
        except (OSError, ValueError) as err:
            raise DaemonJsonError(
                f"{path} is not valid JSON ({err}); fix or move it, then try again."
            ) from err
        if not isinstance(current, dict):
            raise DaemonJsonError(
                f"{path} must hold a JSON object; fix or move it, then try again."
            )
    backup = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.exists():
            backup = path.with_name(f"{path.name}.bak-{time.strftime('%Y%m%d-%H%M%S')}")
            shutil.copy2(path, backup)
        tmp = path.with_name(f".{path.name}.tmp")
        tmp.write_text(
            json.dumps({**current, "default-address-pools": FINER_POOLS}, indent=2) + "\n"
        )
        os.replace(tmp, path)
    except OSError as err:
        raise DaemonJsonError(
            f"Cannot write {path} ({err.strerror}); run with the rights to change it."
        ) from err
    return backup
