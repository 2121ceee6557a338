"""Capacity: admission before anything spawns, one strict-FIFO queue per capacity domain.

Pure policy over pydantic models (no I/O, no clocks): the CapacityLedger workflow holds a
`Ledger` and decides with these functions; probes (activities) bring it `ProbeReading`s.

A capacity domain is where sandboxes are counted: one Docker host, one Kubernetes namespace.
Runs without sandboxes (or with the in-process `local` one) are unbounded and never queue.
Resources are named by the keys the probe bounds: `sandboxes` for Docker (labelled sandbox
containers), the ResourceQuota's own keys for Kubernetes (`pods`, `requests.cpu`,
`requests.memory` in bytes).
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field

Backend = Literal["docker", "kubernetes", "local"]
BackendChoice = Literal["auto", "docker", "kubernetes", "none"]
DOCKER_SANDBOXES_PER_CPU = 2  # Inspect's own default for Docker (seed 000)
GI = 1024**3


# ---------------------------------------------------------------- sizes and footprints
class SandboxSize(BaseModel):
    """What one sample of a task starts: its sandboxes (one per service) and their requests."""

    sandboxes: int = 1
    cpu: float = 0.5  # cores requested, summed over the sample's sandboxes
    memory_gi: float = 1.0  # GiB requested, summed over the sample's sandboxes
    clamped: bool = False  # a declared request exceeded the ceiling and was cut to it
    source: str = "default"  # the file the size was read from, or "default"


class Footprint(BaseModel):
    """What a run will hold while it runs: resources by probe key, and memory for cost."""

    resources: dict[str, float] = Field(default_factory=dict)
    memory_gi: float = 0.0

    @property
    def empty(self) -> bool:
        return not any(v > 0 for v in self.resources.values())


def backend_for(sandbox: str | None, choice: BackendChoice = "auto") -> Backend:
    """Which capacity domain a task's sandbox counts against."""
    if sandbox is None or choice == "none":
        return "local"
    if choice != "auto":
        return choice
    if sandbox in ("docker", "compose"):
        return "docker"
    if sandbox in ("k8s", "kubernetes"):
        return "kubernetes"
    return "local"


def footprint(setpoints: list[tuple[int, SandboxSize]], backend: Backend) -> Footprint:
    """The footprint of tasks starting at these setpoints: setpoint x sandboxes per sample."""
    if backend == "local":
        return Footprint()
    sandboxes = sum(setpoint * size.sandboxes for setpoint, size in setpoints)
    memory = sum(setpoint * size.memory_gi for setpoint, size in setpoints)
    if backend == "docker":
        return Footprint(resources={"sandboxes": sandboxes}, memory_gi=memory)
    cpu = sum(setpoint * size.cpu for setpoint, size in setpoints)
    return Footprint(
        resources={"pods": sandboxes, "requests.cpu": cpu, "requests.memory": memory * GI},
        memory_gi=memory,
    )


# ---------------------------------------------------------------- the bound
def resolve_docker_bound(
    setting: int | None, environment: str | None, cpus: int
) -> tuple[int | None, str]:
    """The Docker bound and where it came from, as status shows it: max_concurrent_sandboxes
    (`max_concurrent_sandboxes=4`), else SANDBOX_MAX_CONCURRENT (`SANDBOX_MAX_CONCURRENT=4`),
    else Inspect's own default for Docker, 2 x the CPUs of the host's worker (`2 x 2 CPUs
    (Inspect's default)`): the fleet's sandbox budget follows the same rule
    (ramp.sandbox_budget), and per-sample sandboxes are not agentsmith's whole-pipeline ones,
    which its default of 2 was for. 0 means unbounded (returned as None), so only leaving it
    unset hands over to the next."""
    if setting is not None:
        return (setting or None), f"max_concurrent_sandboxes={setting}"
    if environment is not None and environment.strip():
        try:
            value = int(environment.strip())
        except ValueError:
            value = -1
        if value >= 0:
            return (value or None), f"SANDBOX_MAX_CONCURRENT={value}"
    cpus = max(1, cpus)
    per_cpu = DOCKER_SANDBOXES_PER_CPU
    return per_cpu * cpus, f"{per_cpu} x {cpus} CPUs (Inspect's default)"


class ProbeReading(BaseModel):
    """What a probe saw at the moment of a decision."""

    backend: Backend
    limits: dict[str, float | None] = Field(default_factory=dict)  # key -> bound; None: none
    used: dict[str, float] = Field(default_factory=dict)  # key -> in use right now
    source: str = ""  # where the bound came from (logged once, and again when it changes)
    problem: str | None = None  # the probe could not read everything (the reading is partial)


# ---------------------------------------------------------------- the ledger
Door = Literal["launch", "resume", "escalation"]


class AdmitRequest(BaseModel):
    run_id: str  # the run's workflow id
    workspace: str
    footprint: Footprint
    door: Door = "launch"
    reading: ProbeReading | None = None  # the probe's reading at this decision
    host_queue: str = ""  # where the ledger's periodic re-probe runs
    probe: dict = Field(default_factory=dict)  # how to probe again (backend options)
    # ask-by-signal-v1: the ask came as a signal; the ledger answers it by signal, echoing this.
    request_id: str = ""


class Admission(BaseModel):
    granted: bool
    position: int | None = None  # 1-based place in the queue when not granted
    reason: str = ""
    resources: dict[str, float] = Field(default_factory=dict)  # what is reserved when granted


class QueueEntry(BaseModel):
    run_id: str
    workspace: str
    footprint: Footprint
    door: Door
    arrived_at: datetime


class Reservation(BaseModel):
    run_id: str
    workspace: str
    footprint: Footprint
    since: datetime


class Release(BaseModel):
    run_id: str
    footprint: Footprint | None = None  # None: release everything; else keep this much
    reason: str = ""


class Ledger(BaseModel):
    domain: str
    queue: list[QueueEntry] = Field(default_factory=list)
    reservations: dict[str, Reservation] = Field(default_factory=dict)
    limits: dict[str, float | None] = Field(default_factory=dict)
    observed: dict[str, float] = Field(default_factory=dict)  # the last probe's usage
    source: str = ""
    host_queue: str = ""
    probe: dict = Field(default_factory=dict)
    admitted: int = 0  # runs admitted over the ledger's life (for figures)
    pumped: int = 0  # of which from the queue


def reserved(ledger: Ledger) -> dict[str, float]:
    total: dict[str, float] = {}
    for reservation in ledger.reservations.values():
        for key, value in reservation.footprint.resources.items():
            total[key] = total.get(key, 0.0) + value
    return total


def _in_use(ledger: Ledger, key: str, besides: str | None = None) -> float:
    """Ours (reservations) or what the probe saw, whichever is more: containers of ours that
    already run are in both, and capacity taken outside Steward shows only in the probe."""
    others = sum(
        r.footprint.resources.get(key, 0.0)
        for run_id, r in ledger.reservations.items()
        if run_id != besides
    )
    held = ledger.reservations.get(besides) if besides else None
    own = held.footprint.resources.get(key, 0.0) if held else 0.0
    return max(others, ledger.observed.get(key, 0.0) - own)


def free(ledger: Ledger, key: str) -> float | None:
    """What the ledger still has of `key` (None: it sets no bound on it)."""
    limit = ledger.limits.get(key)
    return None if limit is None else max(0.0, limit - _in_use(ledger, key))


def _shortfall(ledger: Ledger, wanted: dict[str, float], besides: str | None = None) -> str | None:
    """Why `wanted` does not fit now, quoting the numbers; None when it fits."""
    for key, amount in sorted(wanted.items()):
        limit = ledger.limits.get(key)
        if limit is None or amount <= 0:
            continue
        free = max(0.0, limit - _in_use(ledger, key, besides))
        if amount > free:
            return f"needs {_amount(key, amount)}, {_amount(key, free, unit=False)} free of {_amount(key, limit, unit=False)}"
    return None


def _amount(key: str, value: float, unit: bool = True) -> str:
    if key == "requests.memory":
        return f"{value / GI:g} Gi" + (" of memory" if unit else "")
    if key == "requests.cpu":
        return f"{value:g}" + (" CPUs" if unit else "")
    name = "sandboxes" if key == "sandboxes" else key
    return f"{value:g}" + (f" {name}" if unit else "")


def _clamp_to_limits(ledger: Ledger, wanted: dict[str, float]) -> dict[str, float]:
    """A run bigger than the whole domain would wait forever: it gets the whole domain."""
    return {
        key: min(amount, ledger.limits[key]) if ledger.limits.get(key) is not None else amount
        for key, amount in wanted.items()
    }


def note_reading(ledger: Ledger, reading: ProbeReading | None) -> bool:
    """Take a probe's reading; True when the bound (or its source) changed."""
    if reading is None:
        return False
    changed = reading.limits != ledger.limits or reading.source != ledger.source
    ledger.limits, ledger.source = dict(reading.limits), reading.source
    ledger.observed = dict(reading.used)
    return changed


def position(ledger: Ledger, run_id: str) -> int | None:
    for index, entry in enumerate(ledger.queue):
        if entry.run_id == run_id:
            return index + 1
    return None


def admit(ledger: Ledger, request: AdmitRequest, now: datetime) -> Admission:
    """The door: reserve now if nothing waits ahead and it fits, else queue (once per run)."""
    note_reading(ledger, request.reading)
    if request.host_queue:
        ledger.host_queue, ledger.probe = request.host_queue, dict(request.probe)
    run_id = request.run_id
    held = ledger.reservations.get(run_id)
    if held is not None and request.door != "escalation":
        return Admission(
            granted=True, reason="already admitted", resources=held.footprint.resources
        )
    if request.door == "escalation":
        return _escalate(ledger, request, now)
    place = position(ledger, run_id)
    if place is not None:
        ledger.queue[place - 1].footprint = request.footprint
        return Admission(granted=False, position=place, reason=queue_reason(ledger, run_id))
    wanted = _clamp_to_limits(ledger, request.footprint.resources)
    problem = _shortfall(ledger, wanted)
    if not ledger.queue and problem is None:
        _reserve(ledger, run_id, request.workspace, request.footprint, wanted, now)
        return Admission(granted=True, reason="fits", resources=wanted)
    ledger.queue.append(
        QueueEntry(
            run_id=run_id,
            workspace=request.workspace,
            footprint=request.footprint,
            door=request.door,
            arrived_at=now,
        )
    )
    return Admission(granted=False, position=len(ledger.queue), reason=queue_reason(ledger, run_id))


def _escalate(ledger: Ledger, request: AdmitRequest, now: datetime) -> Admission:
    """A running run wants more: granted only if it fits and nobody waits (no overtaking)."""
    held = ledger.reservations.get(request.run_id)
    current = held.footprint.resources if held else {}
    wanted = request.footprint.resources
    if all(wanted.get(k, 0.0) <= current.get(k, 0.0) for k in wanted):
        if held is not None:
            held.footprint = request.footprint
        return Admission(granted=True, reason="within its reservation", resources=wanted)
    if ledger.queue:
        return Admission(
            granted=False,
            reason=f"{len(ledger.queue)} run(s) wait for capacity; they go first",
            resources=current,
        )
    problem = _shortfall(ledger, wanted, besides=request.run_id)
    if problem is not None:
        return Admission(granted=False, reason=problem, resources=current)
    _reserve(ledger, request.run_id, request.workspace, request.footprint, wanted, now)
    return Admission(granted=True, reason="fits", resources=wanted)


def _reserve(
    ledger: Ledger,
    run_id: str,
    workspace: str,
    footprint: Footprint,
    resources: dict[str, float],
    now: datetime,
) -> None:
    held = ledger.reservations.get(run_id)
    ledger.reservations[run_id] = Reservation(
        run_id=run_id,
        workspace=workspace,
        footprint=footprint.model_copy(update={"resources": resources}),
        since=held.since if held else now,
    )
    if held is None:
        ledger.admitted += 1


def queue_reason(ledger: Ledger, run_id: str) -> str:
    place = position(ledger, run_id)
    return "" if place is None else reason_at(ledger, place)


def reason_at(ledger: Ledger, place: int) -> str:
    """Why the entry at this 1-based place waits (the ledger's view asks it of every entry:
    linear in the queue, where a search by run id for each would be quadratic)."""
    entry = ledger.queue[place - 1]
    wanted = _clamp_to_limits(ledger, entry.footprint.resources)
    problem = _shortfall(ledger, wanted)
    if place > 1:
        ahead = f"{place - 1} run(s) ahead"
        return f"{problem}; {ahead}" if problem else ahead
    return problem or "waiting for the next release"


def release(ledger: Ledger, request: Release) -> bool:
    """Give capacity back (all of it, or down to a smaller footprint). True if anything freed."""
    held = ledger.reservations.get(request.run_id)
    if held is None:
        return False
    if request.footprint is None or request.footprint.empty:
        del ledger.reservations[request.run_id]
        return True
    smaller = {
        key: min(value, request.footprint.resources.get(key, 0.0))
        for key, value in held.footprint.resources.items()
    }
    freed = smaller != held.footprint.resources
    held.footprint = request.footprint.model_copy(update={"resources": smaller})
    return freed


def withdraw(ledger: Ledger, run_id: str) -> bool:
    """Take a run out of the queue (cancelled or deleted while waiting). True if it was there."""
    before = len(ledger.queue)
    ledger.queue = [e for e in ledger.queue if e.run_id != run_id]
    return len(ledger.queue) != before


def pump(ledger: Ledger, now: datetime) -> list[QueueEntry]:
    """Admit from the head while it fits, in strict order: the head blocks everyone behind it.
    Decides against the ledger alone (reservations and the last reading), never a probe."""
    admitted = []
    while ledger.queue:
        head = ledger.queue[0]
        wanted = _clamp_to_limits(ledger, head.footprint.resources)
        if _shortfall(ledger, wanted):
            break
        ledger.queue.pop(0)
        _reserve(ledger, head.run_id, head.workspace, head.footprint, wanted, now)
        ledger.pumped += 1
        admitted.append(head)
    return admitted


def forget_observed(ledger: Ledger) -> None:
    """After a release the probe's last count is stale (it still counts what just stopped):
    until the next reading, what we reserved is what is in use."""
    ledger.observed = {}


def domain_id(backend: Backend, where: str) -> str:
    """A ledger's workflow id: one per Docker host or Kubernetes namespace."""
    safe = "".join(c if c.isalnum() or c in "-_." else "-" for c in where)
    return f"steward-capacity-{backend}-{safe}"
