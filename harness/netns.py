"""Real test hosts on one machine: network namespaces with veth links (iproute2; root).

Host k of a cluster is the namespace `<prefix><pid>-h<k>`, its end of a veth pair at
10.231.<net>.2/24 and the root side at 10.231.<net>.1/24 (one /24 per host, picked free at
start under a lock, so two pytest processes never share one). The home Steward's Temporal dev
server listens on every address (`--ip 0.0.0.0`, see `home_env`), and each host reaches it at
its own link's root-side address: its traffic crosses the veth link, which can be taken down
(`link_down`) and up again, or only the route to Temporal cut (`cut_temporal`). One Steward
worker per host runs inside its namespace (`ip netns exec`), with its own STEWARD_HOST_ID and
data dir; the filesystem is shared, so the log storage is shared as it is on one machine.

`Cluster` is a context manager: it removes stale namespaces of its prefix whose process is gone
(a test killed mid-way), and on exit, even when a test failed, kills every process in its
namespaces and deletes the namespaces and links it made. `Unavailable` says why namespaces
cannot be made here (not root, no iproute2); tests turn it into a skip.
"""

from __future__ import annotations

import fcntl
import os
import re
import shlex
import shutil
import signal
import subprocess
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from harness.helpers import STEWARD, Steward, reap_leftovers

PREFIX = "stw"
LOCK = Path(tempfile.gettempdir()) / "steward-netns.lock"


class Unavailable(Exception):
    """Network namespaces cannot be made on this machine; the message says why."""


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(["ip", *args], capture_output=True, text=True, check=check, timeout=30)


def _in(ns: str, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    return _ip("netns", "exec", ns, *args, check=check)


def home_env(env: dict[str, str]) -> dict[str, str]:
    """A home Steward's environment whose embedded dev server the hosts can reach (it listens
    on every address, not only loopback; the last --ip given wins)."""
    extra = env.get("STEWARD_TEMPORAL_DEV_ARGS", "")
    return {**env, "STEWARD_TEMPORAL_DEV_ARGS": f"{extra} --ip 0.0.0.0".strip()}


def check_available() -> None:
    """Raise Unavailable, with the reason, where namespaces cannot be made."""
    if shutil.which("ip") is None:
        raise Unavailable("iproute2's `ip` is not installed, so no network namespace can be made")
    if os.geteuid() != 0:
        raise Unavailable("network namespaces need root (ip netns add); these tests run as a user")
    probe = f"{PREFIX}{os.getpid()}-probe"
    made = _ip("netns", "add", probe, check=False)
    if made.returncode != 0:
        raise Unavailable(f"`ip netns add` failed here: {made.stderr.strip()}")
    _ip("netns", "del", probe, check=False)


def _namespaces() -> list[str]:
    listed = _ip("netns", "list", check=False).stdout
    return [line.split()[0] for line in listed.splitlines() if line.strip()]


def _kill_namespace_processes(ns: str) -> None:
    pids = _ip("netns", "pids", ns, check=False).stdout.split()
    for pid in pids:
        try:
            os.kill(int(pid), signal.SIGKILL)
        except (ProcessLookupError, ValueError):
            pass


def remove_namespace(ns: str) -> None:
    """Kill what runs in `ns`, delete its root-side link (the pair goes with it) and `ns`."""
    _kill_namespace_processes(ns)
    _ip("link", "del", _root_link(ns), check=False)
    _ip("netns", "del", ns, check=False)


def remove_stale() -> None:
    """Namespaces of this prefix whose creating process is gone (a killed test run)."""
    for ns in _namespaces():
        found = re.fullmatch(rf"{PREFIX}(\d+)-.*", ns)
        if found and not psutil.pid_exists(int(found.group(1))):
            remove_namespace(ns)


def _root_link(ns: str) -> str:
    # Interface names have at most 15 characters: a short hash of the namespace's name.
    import hashlib

    return "stv" + hashlib.sha256(ns.encode()).hexdigest()[:10]


def _free_nets(count: int) -> list[int]:
    used = {int(n) for n in re.findall(r"10\.231\.(\d+)\.", _ip("-o", "addr").stdout)}
    free = [n for n in range(1, 255) if n not in used]
    if len(free) < count:
        raise Unavailable("no free 10.231.x.0/24 left for test hosts")
    return free[:count]


@dataclass
class Host:
    """One host: its namespace, link, addresses and the Steward that runs in it."""

    name: str
    ns: str
    net: int
    data_dir: Path
    steward: Steward  # its environment (STEWARD_HOST_ID, data dir, Temporal address)

    @property
    def address(self) -> str:
        return f"10.231.{self.net}.2"

    @property
    def gateway(self) -> str:
        """The root side of its link: where it reaches Temporal."""
        return f"10.231.{self.net}.1"

    @property
    def link(self) -> str:
        return _root_link(self.ns)

    def run(self, *args: str, timeout: float = 180, cpus: str | None = None, hide: list[str] = ()):
        """`steward <args>` inside this host's namespace (optionally pinned with taskset, and
        with `hide`'s directories covered by an empty tmpfs in a mount namespace of its own)."""
        pin = ["taskset", "-c", cpus] if cpus else []
        command = [*pin, STEWARD, *args]
        if hide:
            mounts = " && ".join(f"mount -t tmpfs steward-hidden {shlex.quote(d)}" for d in hide)
            command = ["unshare", "-m", "--propagation", "private", "sh", "-c",
                       f"{mounts} && exec {shlex.join(command)}"]  # fmt: skip
        return subprocess.run(
            ["ip", "netns", "exec", self.ns, *command],
            env=self.steward.env,
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )

    def pids(self) -> list[int]:
        """Every process in this host's namespace."""
        return [int(p) for p in _ip("netns", "pids", self.ns, check=False).stdout.split()]


@dataclass
class Cluster:
    """`count` hosts named `names` (default h1..hN) beside the `home` Steward, whose server
    must listen beyond loopback (home_env)."""

    home: Steward
    count: int
    root: Path
    names: list[str] | None = None
    cpus: list[str] | None = None  # each host's Steward worker pinned to these (taskset -c)
    env: dict[str, str] = field(default_factory=dict)  # more for every host's environment
    # Host name -> directories it cannot see: its Steward worker (and so its task workers) runs
    # in a mount namespace of its own with an empty tmpfs over each, as a host without a mount.
    hidden: dict[str, list[str]] = field(default_factory=dict)
    hosts: list[Host] = field(default_factory=list)

    def __enter__(self) -> Cluster:
        check_available()
        try:
            self._make()
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def _make(self) -> None:
        port = self.home.env["STEWARD_TEMPORAL_PORT"]
        names = self.names or [f"h{k}" for k in range(1, self.count + 1)]
        with open(LOCK, "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            remove_stale()
            for k, (name, net) in enumerate(zip(names, _free_nets(self.count), strict=True)):
                ns = f"{PREFIX}{os.getpid()}-{id(self) % 10000}-h{k}"
                data = self.root / f"host-{name}"
                data.mkdir(parents=True, exist_ok=True)
                env = {
                    **self.home.env,
                    "STEWARD_DATA_DIR": str(data),
                    "STEWARD_HOST_ID": name,
                    "STEWARD_TEMPORAL_ADDRESS": f"10.231.{net}.1:{port}",
                    **self.env,
                }
                host = Host(name, ns, net, data, Steward(env))
                self.hosts.append(host)
                _ip("netns", "add", ns)
                peer = "stp" + host.link[3:]
                _ip("link", "add", host.link, "type", "veth", "peer", "name", peer)
                _ip("link", "set", peer, "netns", ns)
                _ip("addr", "add", f"{host.gateway}/24", "dev", host.link)
                _ip("link", "set", host.link, "up")
                _in(ns, "ip", "addr", "add", f"{host.address}/24", "dev", peer)
                _in(ns, "ip", "link", "set", peer, "up")
                _in(ns, "ip", "link", "set", "lo", "up")
        # At once: each start waits for its worker to connect (seconds, under load).
        with ThreadPoolExecutor(max_workers=len(self.hosts)) as pool:
            starts = [
                pool.submit(self.start_worker, host, self.cpus[k] if self.cpus else None)
                for k, host in enumerate(self.hosts)
            ]
            for start in starts:
                start.result()

    def __exit__(self, *exc) -> None:
        for host in self.hosts:
            remove_namespace(host.ns)
            reap_leftovers(host.data_dir)

    def __getitem__(self, name: str) -> Host:
        return next(h for h in self.hosts if h.name == name)

    # What a test does to a host.
    def start_worker(self, host: Host, cpus: str | None = None) -> None:
        done = host.run("worker", "start", "--json", cpus=cpus, hide=self.hidden.get(host.name, []))
        if done.returncode != 0:
            log = host.data_dir / "worker.log"
            tail = log.read_text()[-2000:] if log.exists() else ""
            raise RuntimeError(
                f"host {host.name}'s worker did not start: {done.stdout}{done.stderr}{tail}"
            )

    def link_down(self, host: Host) -> None:
        """Partition: the host's link goes down; everything in it keeps running."""
        _ip("link", "set", host.link, "down")

    def link_up(self, host: Host) -> None:
        _ip("link", "set", host.link, "up")

    def cut_temporal(self, host: Host) -> None:
        """Only Temporal unreachable from the host (the link stays up; the filesystem is shared)."""
        _in(host.ns, "ip", "route", "add", "prohibit", f"{host.gateway}/32")

    def restore_temporal(self, host: Host) -> None:
        _in(host.ns, "ip", "route", "del", "prohibit", f"{host.gateway}/32")

    def kill(self, host: Host) -> None:
        """The host dies: SIGKILL to every process in its namespace (link and namespace stay)."""
        _kill_namespace_processes(host.ns)
        reap_leftovers(host.data_dir)
        deadline = time.monotonic() + 30
        while host.pids() and time.monotonic() < deadline:
            time.sleep(0.1)
        (host.data_dir / "worker.pid").unlink(missing_ok=True)

    def task_workers(self, host: Host) -> list[int]:
        """Live task workers in the host: its processes with an Inspect control socket."""
        from steward.activities.processes.control_socket import socket_path

        return [p for p in host.pids() if Path(socket_path(p)).exists()]
