"""The scoring-integrity scan keeps pace with the run: a task's transcripts
are scanned as soon as the task is complete, while other tasks still run, and never inside a
tend.

The tend starts a scan of the complete logs not scanned yet when none is running (`start`); the
scan runs beside the run (an asyncio task of the workflow, like the watches) and its end wakes
the run; the next tend takes its findings in (`take_in`) and starts the next scan for what
completed meanwhile. A scan started while tasks still ran holds only a share of the provider
budget; once no eval work is left, what completed since is scanned beside it with the rest of the
budget, not after it. A signoff waits for the running scans and takes their findings in first.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import Any

from pydantic import BaseModel, Field
from temporalio import workflow
from temporalio.exceptions import ActivityError

with workflow.unsafe.imports_passed_through():
    from steward.workflows.activity_io import ScanRequest
    from steward.workflows.contracts import TendSummary
    from steward.workflows.names import Activity
    from steward.workflows.policy import provider_budget
    from steward.workflows.policy import run_policy as policy
    from steward.workflows.policy.decisions import Anomaly
    from steward.workflows.policy.layout import scans_dir_of
    from steward.workflows.run.eval_run_context import RunContext, cause_of

MAX_SCANS = 2  # at once: the first, and one beside it once eval work has ended


class ScanOutcome(BaseModel):
    logs: list[str]
    findings: list[dict[str, Any]] = Field(default_factory=list)
    problem: str | None = None


async def start(ctx: RunContext, room: Callable[..., Awaitable[int | None]] | None = None) -> None:
    """Scan the complete logs not scanned yet, unless a scan waits to be taken in; while one
    runs, only a second one beside it (`_start_beside`). `room` makes room in the provider budget and says how many connections the scan may hold."""
    state = ctx.state
    if ctx.scan_outcomes:
        return
    if ctx.scanning:
        await _start_beside(ctx, room)
        return
    logs = policy.unscanned_logs(state)
    if not logs:
        return
    ctx.scanning, state.scanning_logs, ctx.scans_running = True, list(logs), 1
    connections = await room(ctx) if room is not None else None
    ctx.scan_job = asyncio.create_task(_scan(ctx, logs, connections, _named(ctx, connections)))


async def _start_beside(ctx: RunContext, room: Callable[..., Awaitable[int | None]] | None) -> None:
    """A scan started while tasks still ran holds only a share of the budget,
    and scout cannot widen a running scan. Once no eval work is left, the logs completed since
    are scanned beside it with what the budget has left, instead of waiting for it."""
    state = ctx.state
    if room is None or ctx.scans_running >= MAX_SCANS:
        return
    if policy.open_tasks(state):
        return
    logs = [log for log in policy.unscanned_logs(state) if log not in state.scanning_logs]
    if not logs:
        return
    connections = await room(ctx, logs)
    if not connections:
        return  # the budget has nothing left: they wait for the running scan
    ctx.scans_running += 1
    state.scanning_logs = [*state.scanning_logs, *logs]
    ctx.scan_job = asyncio.create_task(_scan(ctx, logs, connections, _named(ctx, connections)))


def _named(ctx: RunContext, connections: int | None) -> str | None:
    """A name for a scan that holds connections, under which the run answers
    how many it may hold now (`EvalRun.scan_connections`)."""
    if not connections:
        return None
    ctx.scan_counter += 1
    key = f"scan-{ctx.scan_counter}"
    ctx.scan_shares[key] = connections
    return key


def widen_the_other(ctx: RunContext, key: str | None) -> None:
    """A scan ended (or asks for nothing more): once no eval work is left, the scan still
    running beside it takes its connections (their sum stays what the budget gave the scans).
    Once per scan: its key is forgotten."""
    freed = ctx.scan_shares.pop(key, 0) if key else 0
    if freed and ctx.scan_shares and not policy.open_tasks(ctx.state):
        other = sorted(ctx.scan_shares)[0]
        ctx.scan_shares[other] += freed
        ctx.journal("scan widened", scan=other, connections=ctx.scan_shares[other])


def headroom(ctx: RunContext, key: str) -> int:
    """budget-episode-v1: how far above its share the running scan `key` may probe. Only once
    no eval work is left (the scans then hold the whole budget); shared by the scans running
    in proportion to their shares."""
    share = ctx.scan_shares.get(key)
    if not (share and ctx.state.providers):
        return 0
    if policy.open_tasks(ctx.state):
        return 0
    budget = max(ctx.state.providers.values(), key=lambda b: b.limit)  # as the ceiling's
    room = provider_budget.scan_headroom(budget, workflow.now())
    return room * share // max(1, sum(ctx.scan_shares.values()))


async def scan_logs(
    ctx: RunContext,
    logs: list[str],
    heartbeat: timedelta | None = None,
    connections: int | None = None,
    key: str | None = None,
) -> list[dict[str, Any]]:
    """The scan activity on `logs` (tried twice); its findings as plain dicts. With `key` the
    scan asks the run for its share as it goes."""
    request = ScanRequest(
        log_paths=logs,
        results_dir=scans_dir_of(ctx.workspace),
        scan_model=ctx.settings.scan_model,
        scanners=ctx.settings.scanners,
        cwd=ctx.workspace,
        max_connections=connections,
    )
    if key is not None:
        request.scan_key, request.run_id = key, ctx.run_id
        request.connections_ceiling = max(b.limit for b in ctx.state.providers.values())
    return await ctx.activity(
        Activity.SCAN_TRANSCRIPTS,
        request,
        result_type=list[dict[str, Any]],
        timeout=timedelta(minutes=30),
        heartbeat=heartbeat,
        attempts=2,
    )


async def _scan(
    ctx: RunContext, logs: list[str], connections: int | None, key: str | None = None
) -> None:
    try:
        # Heartbeats let a scan on a Steward worker that died be tried again within minutes.
        findings = await scan_logs(ctx, logs, timedelta(minutes=2), connections, key)
        outcome = ScanOutcome(logs=logs, findings=findings)
    except ActivityError as err:
        outcome = ScanOutcome(logs=logs, problem=cause_of(err))
    widen_the_other(ctx, key)
    ctx.scan_outcomes.append(outcome)
    ctx.scans_running = max(0, ctx.scans_running - 1)
    ctx.scanning = ctx.scans_running > 0
    ctx.wake = True


async def wait_for_scan(ctx: RunContext) -> None:
    """A signoff waits for the running scan (its findings may still block it). Once every
    task is settled it also waits for the scan of what completed since
    (the tend it wakes starts it), unless scanning fails (the signoff then says why)."""
    await workflow.wait_condition(lambda: not ctx.scanning)
    if not scan_pending(ctx):
        return
    ctx.wake = True
    await workflow.wait_condition(lambda: not scan_pending(ctx))


def scan_pending(ctx: RunContext) -> bool:
    """Every task is settled and some of their logs wait for a scan that will come
    (one runs, waits to be taken in, or the next tend starts it)."""
    state = ctx.state
    if policy.open_tasks(state) or state.scan_problem is not None:
        return False  # a failing scan is retried at tends: the signoff says why, not waits
    return ctx.scanning or bool(ctx.scan_outcomes) or bool(policy.unscanned_logs(state))


def take_in(ctx: RunContext, summary: TendSummary) -> list[Anomaly]:
    """The finished scans' findings as anomalies (the caller files them); the logs they read
    count as scanned; a failed scan is journalled once per reason and tried again."""
    state, anomalies = ctx.state, []
    if ctx.scan_outcomes:
        done = {log for outcome in ctx.scan_outcomes for log in outcome.logs}
        state.scanning_logs = [log for log in state.scanning_logs if log not in done]
    for outcome in ctx.scan_outcomes:
        if outcome.problem is not None:
            if outcome.problem != state.scan_problem:
                ctx.journal("scan failed", problem=outcome.problem, logs=len(outcome.logs))
            state.scan_problem = outcome.problem
            continue
        state.scan_problem = None
        state.scanned_logs.extend(outcome.logs)
        found = findings_as_anomalies(ctx, outcome.findings)
        ctx.journal("scanned", logs=len(outcome.logs), findings=len(found))
        anomalies.extend(found)
    ctx.scan_outcomes = []
    return anomalies


def findings_as_anomalies(ctx: RunContext, findings: list[dict[str, Any]]) -> list[Anomaly]:
    """Scan findings as `scan_finding` anomalies of the tasks whose logs they came from."""
    state = ctx.state
    by_name = {t.spec.name: t.spec for t in state.tasks}
    by_log = {t.log: t.spec for t in state.tasks if t.log}
    anomalies = []
    for finding in findings:
        spec = by_log.get(finding.get("log")) or by_name.get(str(finding.get("task")))
        if spec is None:
            continue
        anomalies.append(
            Anomaly(
                kind="scan_finding",
                task=spec.identifier,
                task_name=spec.name,
                sample_id=str(finding.get("sample_id")),
                epoch=finding.get("epoch"),
                uuid=f"{finding.get('scanner')}:{finding.get('log')}",
                log=finding.get("log"),
                scanner=str(finding.get("scanner")),
                detail=str(finding.get("explanation") or "")[:500],
            )
        )
    return anomalies
