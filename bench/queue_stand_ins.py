"""The queue bench's stand-ins: one for every activity the Steward worker registers, except the
two it runs for real (the admission activity and the capacity probe), each answering at once
as a task that completes instantly would. They record what the bench measures: when each run
first spawned, when capacity was released, how each run was admitted.

tests/unit/test_bench_queue.py holds this list against the worker's (worker/temporal_worker.py
ACTIVITIES): a run calling an activity the bench lacks fails and retries it beside the pump
(as `watch_worker` and `exchange_provider_budgets` once did), and the figure is the bench's.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime

from temporalio import activity

from steward.activities.capacity.capacity import probe_capacity, request_admission
from steward.workflows.activity_io import (
    ApplyResult,
    BudgetAnswer,
    BudgetCall,
    CurateResult,
    HostStorageRequest,
    LiveOptions,
    NotifyResult,
    ObserveRequest,
    ProbeRequest,
    ProbeResult,
    SpawnRequest,
    StopResult,
    WatchRequest,
    WorkerEnd,
    WorkspaceWrite,
)
from steward.workflows.contracts import (
    Capture,
    Observation,
    Progress,
    TaskObservation,
    TaskSpec,
    WorkerProcess,
)
from steward.workflows.names import Activity
from steward.workflows.policy.hosts import HostInfo
from steward.workflows.prelaunch.credentials import CredentialsReport
from steward.workflows.prelaunch.preflight import SmokeResult


@dataclass
class Record:
    """What the stand-ins saw, in wall-clock seconds (one process: one record)."""

    spawned_at: dict[str, float] = field(default_factory=dict)  # run id -> its first spawn
    released_at: list[float] = field(default_factory=list)  # "capacity released" events
    admitted: dict[str, str] = field(default_factory=dict)  # run id -> how it was admitted
    admitted_at: dict[str, float] = field(default_factory=dict)  # run id -> when (workflow time)
    # While set, spawned workers run on (their watches and observations say so): the bench holds
    # the first runs until every run has queued, so the pump is measured with the whole queue.
    hold: bool = False


RECORD = Record()


# ---------------------------------------------------------------- the run's life
@activity.defn(name=Activity.CAPTURE_DEFINITION)
async def capture(request) -> Capture:
    spec = TaskSpec(name="t", model="m", identifier="t-id", samples=1, sandbox="docker")
    return Capture(tasks=[spec], max_samples=1)


@activity.defn(name=Activity.SPAWN_WORKER)
async def spawn(request: SpawnRequest) -> WorkerProcess:
    RECORD.spawned_at.setdefault(request.eval_set_id, time.time())
    return WorkerProcess(
        worker_id=request.worker_id,
        tasks=[t.identifier for t in request.tasks],
        pid=1,
        create_time=0.0,
        socket="",
        output="",
        started_at=datetime.now(UTC),
    )


@activity.defn(name=Activity.WATCH_WORKER)
async def watch(request: WatchRequest) -> WorkerEnd:
    """The stand-in worker is done at once (once the bench lets it): its watch sees it exit
    (and wakes the run)."""
    while RECORD.hold:
        activity.heartbeat()
        await asyncio.sleep(0.5)
    return WorkerEnd(
        worker_id=request.worker.worker_id,
        kind="exited",
        at=datetime.now(UTC),
        detail="exited with code 0",
        exit_code=0,
        log_status={identifier: "success" for identifier in request.worker.tasks},
    )


@activity.defn(name=Activity.OBSERVE_RUN)
async def observe(request: ObserveRequest) -> Observation:
    """Every spawned task is complete at its first observation (once the bench lets it): the
    run finishes at once."""
    done = Progress(total=1, completed=0 if RECORD.hold else 1)
    return Observation(
        alive={w.worker_id: RECORD.hold for w in request.workers},
        tasks={
            t.identifier: TaskObservation(
                identifier=t.identifier,
                progress=done,
                log="/dev/null",
                log_status="started" if RECORD.hold else "success",
            )
            for t in request.tasks
            if request.workers
        },
        anomalies=[],
    )


@activity.defn(name=Activity.WRITE_WORKSPACE)
async def write_workspace(write: WorkspaceWrite) -> None:
    for event in write.journal:
        if event.event == "capacity released":
            RECORD.released_at.append(event.at.timestamp())
        elif event.event == "admitted":
            RECORD.admitted[write.status.workflow_id] = event.data.get("how", "")
            RECORD.admitted_at[write.status.workflow_id] = event.at.timestamp()


@activity.defn(name=Activity.READ_LIVE_OPTIONS)
async def ramp_settings(request) -> LiveOptions:
    return LiveOptions(samples_ramp=(1, 1), heartbeat=False)


@activity.defn(name=Activity.EXCHANGE_PROVIDER_BUDGETS)
async def exchange_budgets(call: BudgetCall) -> BudgetAnswer:
    """Every model reaches one endpoint nobody has learned anything about yet."""
    return BudgetAnswer(endpoints={model: "bench-endpoint" for model in call.models})


@activity.defn(name=Activity.PROBE_PROVIDER)
def probe_provider(request: ProbeRequest) -> ProbeResult:
    return ProbeResult(answered=True, endpoints={m: "bench-endpoint" for m in request.models})


@activity.defn(name=Activity.LIST_HOSTS)
async def list_hosts(run_id: str) -> list[HostInfo]:
    return []


@activity.defn(name=Activity.CHECK_HOST_STORAGE)
async def check_host_storage(request: HostStorageRequest) -> str | None:
    return None  # the host sees the definition and the log dir


@activity.defn(name=Activity.NOTIFY)
async def notify(request) -> NotifyResult:
    return NotifyResult(configured=False, delivered=False)


@activity.defn(name=Activity.SCAN_TRANSCRIPTS)
async def scan(request) -> list:
    return []


@activity.defn(name=Activity.APPLY_ACTIONS)
async def apply_actions(request) -> ApplyResult:
    return ApplyResult()


@activity.defn(name=Activity.APPLY_SETPOINTS)
async def apply_setpoints(request) -> list:
    return []


@activity.defn(name=Activity.TIDY_LOGS)
async def tidy(request) -> None:
    return None


@activity.defn(name=Activity.STOP_WORKERS)
async def stop(request) -> StopResult:
    return StopResult()


@activity.defn(name=Activity.CURATE_LOGS)
async def curate(request) -> CurateResult:
    return CurateResult()


@activity.defn(name=Activity.REAP_SANDBOXES)
async def reap_sandboxes(workspaces: list[str]) -> list[str]:
    return []


# ---------------------------------------------------------------- relaunch, prelaunch
@activity.defn(name=Activity.FETCH_FROM_STORE)
async def fetch_from_store(request) -> dict[str, str]:
    return {}


@activity.defn(name=Activity.MOVE_LOGS)
async def move_logs(request) -> list[str]:
    return []


@activity.defn(name=Activity.CHECK_CREDENTIALS)
async def check_credentials(request) -> CredentialsReport:
    return CredentialsReport()


@activity.defn(name=Activity.SMOKE_TASKS)
async def smoke_tasks(request) -> SmokeResult:
    return SmokeResult(ok=True, checks=[], tasks=[], log_dir="", seconds=0.0, samples=0)


STAND_INS = [
    capture,
    spawn,
    watch,
    observe,
    write_workspace,
    ramp_settings,
    exchange_budgets,
    probe_provider,
    list_hosts,
    check_host_storage,
    notify,
    scan,
    apply_actions,
    apply_setpoints,
    tidy,
    stop,
    curate,
    reap_sandboxes,
    fetch_from_store,
    move_logs,
    check_credentials,
    smoke_tasks,
]
REAL = [request_admission, probe_capacity]  # Steward's own capacity path, measured
ACTIVITIES = [*STAND_INS, *REAL]
