"""The watchdog outside the Steward worker: `steward doctor --notify`, run every minute (by
default) by the systemd timer or launchd agent `steward service install` writes.

A run's own notifications come from its workflow, through the Steward worker; when the worker or
Temporal is down nothing of the run can say so. This check can: it takes `steward doctor`'s
report (does Temporal answer, does a Steward worker serve this host: it polls Steward's task
queues and the worker recorded in the data directory still lives), finds the runs left
unsupervised (from Temporal while it answers; else as recorded when it last did, or when a run
last notified), and tells those runs' Apprise destinations once per outage and once when it is
over (workflows/policy/outage.py decides; its state is `watchdog.json` in the data directory).
The destinations are never printed or logged: only how many were told.
"""

from __future__ import annotations

import asyncio
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from steward.activities.workspace import notify, supervised_runs
from steward.worker import service_units
from steward.worker.connect import Target, connect, data_dir, host_id, target_for
from steward.worker.doctor import Report, exited_worker_pid
from steward.workflows.names import SearchKey, WorkflowType
from steward.workflows.options import StewardOptions
from steward.workflows.policy import outage
from steward.workflows.policy.outage import OutageState, SupervisionCheck, WatchedRun

STATE_FILE = "watchdog.json"
LIST_TIMEOUT_S = 10.0


@dataclass
class WatchOutcome:
    down: bool
    what: str
    result: str  # what the check found and did, one line (the state's last_result)
    notice: str | None = None  # "down" | "back": the notice this check sent or tried
    text: str | None = None  # its line
    delivered: bool = False
    destinations: int = 0  # how many were told (never which: the URLs hold tokens)
    runs: list[str] = field(default_factory=list)  # the runs at stake (workspaces)

    def as_dict(self) -> dict:
        return asdict(self)


def _service_hint(*services: str) -> str:
    """The service manager's way to start them, in parentheses, where their units are
    installed (else nothing: `steward ... start` is the way)."""
    command = service_units.start_command(services)
    return f" (or `{command}`)" if command else ""


def supervision_of(report: Report, target: Target) -> SupervisionCheck:
    """Down or not, from doctor's checks: Temporal answers; a worker polls both of Steward's
    queues; the worker this data directory started has not died."""
    failing = {check.name: check for check in report.checks if not check.ok}
    worker_log = data_dir() / "worker.log"
    if "temporal" in failing:
        fix = (
            "run `steward server start` and `steward worker start`"
            + _service_hint("temporal", "worker")
            if target.embedded
            else f"check the Temporal cluster at {target.address} (STEWARD_TEMPORAL_ADDRESS) "
            "and this host's way to it, then `steward worker start`" + _service_hint("worker")
        )
        return SupervisionCheck(
            down=True, what=f"Temporal at {target.address} does not answer", fix=fix
        )
    gone = exited_worker_pid() if "detached worker" in failing else None
    idle = [name.removeprefix("queue ") for name in failing if name.startswith("queue ")]
    if gone is None and not idle:
        return SupervisionCheck(down=False)
    return SupervisionCheck(
        down=True,
        # The dead worker says it all (Temporal lists its polls for a minute more).
        what=f"the Steward worker (pid {gone}) has exited"
        if gone is not None
        else f"no Steward worker polls {', '.join(idle)}",
        fix=f"run `steward worker start`{_service_hint('worker')}; its log is {worker_log}",
    )


async def _live_runs(target: Target) -> list[WatchedRun]:
    """The running runs whose workspaces are on this host (another host's are its own
    watchdog's)."""
    client = await connect(target)
    query = f"WorkflowType = '{WorkflowType.EVAL_RUN}' AND ExecutionStatus = 'Running'"
    runs = []
    async for execution in client.list_workflows(query):
        attributes = {pair.key.name: pair.value for pair in execution.typed_search_attributes}
        workspace = attributes.get(SearchKey.WORKSPACE.name) or (await execution.memo()).get(
            "workspace"
        )
        if not workspace or not Path(workspace).is_dir():
            continue
        runs.append(
            WatchedRun(
                workflow_id=execution.id,
                workspace=str(workspace),
                state=str(attributes.get(SearchKey.STATE.name) or "running"),
            )
        )
    return runs


def live_runs(target: Target) -> list[WatchedRun] | None:
    """The live runs as Temporal lists them; None when it cannot say."""
    try:
        return asyncio.run(asyncio.wait_for(_live_runs(target), LIST_TIMEOUT_S))
    except Exception:  # noqa: BLE001 - unreachable, timed out, refused: the record answers
        return None


def _destinations(run: WatchedRun) -> list[str] | None:
    try:
        return notify.destinations(Path(run.workspace))
    except Exception:  # noqa: BLE001 - options unreadable now: keep what was recorded
        return None


def load_state(data: Path) -> OutageState:
    try:
        return OutageState.model_validate_json((data / STATE_FILE).read_text())
    except (OSError, ValueError):
        return OutageState()


def watch(options: StewardOptions, report: Report, now: datetime | None = None) -> WatchOutcome:
    """One check: judge, keep the record of live runs current, tell what is new."""
    target = target_for(options)
    data = data_dir()
    check = supervision_of(report, target)
    temporal_answers = any(c.name == "temporal" and c.ok for c in report.checks)
    live = live_runs(target) if temporal_answers else None
    if live is not None:
        before = supervised_runs.replace(data, [(run, _destinations(run)) for run in live])
        runs = live
    else:
        before = supervised_runs.read(data)
        runs = [recorded.watched() for recorded in before.values()]
    record = {**before, **supervised_runs.read(data)}
    with supervised_runs.locked(data, STATE_FILE):  # two checks at once tell once
        state, notice = outage.observe(
            load_state(data), check, runs, host_id(), now or datetime.now(UTC)
        )
        outcome = WatchOutcome(
            down=check.down,
            what=check.what,
            result="",
            runs=[run.workspace for run in outage.at_stake(runs)],
        )
        if notice is not None:
            targets = list(
                dict.fromkeys(
                    url for ws in notice.runs if ws in record for url in record[ws].destinations
                )
            )
            ok = bool(targets) and notify.deliver(targets, notice.title, notice.text)
            state = outage.delivered(state, notice, ok)
            outcome.notice, outcome.text = notice.kind, notice.text
            outcome.delivered, outcome.destinations = ok, len(targets) if ok else 0
        supervised_runs.write_private(data / STATE_FILE, state.model_dump_json(indent=1))
    outcome.result = state.last_result
    return outcome
