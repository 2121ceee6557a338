"""What `steward launch` works out before it starts or changes a run: the resolved definition,
what the log store already answers, the delta against the live run (and its archive gate),
and the smoke run of the work that is new."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from steward.cli import launch_preflight as preflight
from steward.cli.context import Context
from steward.cli.output import CommandError, bad_input, console
from steward.cli.run_calls import ask_worker, live_status
from steward.cli.step_progress import timed_step
from steward.workflows.contracts import Capture, RunStatus, TaskSpec
from steward.workflows.policy.delta import Delta, compute_delta, delta_lines

SMOKE_SAMPLES = 2
SMOKE_CAP_S = 300.0
RUNS_WORK = ("add", "extend")  # rows whose work runs (restore and unchanged do not)


@dataclass
class LaunchPlan:
    capture: Capture
    definition_hash: str | None
    log_dir: str
    store_hits: dict[str, str]  # task identifier -> the store's log answering it
    live: RunStatus | None  # the workspace's open run, if there is one
    delta: Delta

    def name_of(self, identifier: str) -> str:
        return next(t.name for t in self.capture.tasks if t.identifier == identifier)

    def to_run(self) -> list[TaskSpec]:
        """The tasks whose work would run: new or grown, and not answered by the store."""
        running = {r.identifier for r in self.delta.rows if r.kind in RUNS_WORK}
        return [
            t
            for t in self.capture.tasks
            if t.identifier in running and t.identifier not in self.store_hits
        ]

    def document(self) -> dict[str, Any]:
        return {
            "delta": [r.model_dump(mode="json") for r in self.delta.rows],
            "store_hits": sorted(self.name_of(i) for i in self.store_hits),
            "log_dir": self.log_dir,
        }


def refuse_unsupported(ctx: Context, definition: str) -> None:
    """A Hawk configuration where Hawk cannot run (before Python 3.13, or without the hawk
    extra): say so, naming the Python and the extra it needs (worker/hawk_config.py)."""
    from steward.worker import hawk_config

    named = definition if hawk_config.is_hawk_config(definition) else None
    if named is None and not (ctx.workspace / definition).is_file():
        named = next((h for h in hawk_config.HAWK_FILES if (ctx.workspace / h).is_file()), None)
    reason = hawk_config.unavailable_reason() if named else None
    if reason:
        raise bad_input(
            f"{ctx.workspace / named} is a Hawk configuration, which cannot run here: {reason}; "
            "or write an eval_set() definition (evalset.py) or an Inspect Flow config.py instead."
        )


def refuse_unwritable(ctx: Context) -> None:
    """Refuse a workspace, `log_root` or `sync` directory the run could not write, before
    anything starts: a worker would otherwise fail on it hours in."""
    from steward.worker.workspace import unwritable

    problem = unwritable(str(ctx.workspace))
    if problem:
        raise bad_input(
            f"The workspace {ctx.workspace} cannot be written ({problem}); make it writable: "
            "the run keeps its journal and status there."
        )
    for option in ("log_root", "sync"):
        location = getattr(ctx.options, option)
        problem = unwritable(location) if location else None
        if problem:
            raise bad_input(
                f"The {option} directory {location} cannot be created or written ({problem}); "
                f"make it writable, or set {option} to a directory that is."
            )


def refuse_unwritable_log_dir(plan: LaunchPlan) -> None:
    """Refuse a log dir the workers could not write (the definition's own, or under log_root)."""
    from steward.worker.workspace import unwritable

    problem = unwritable(plan.log_dir)
    if problem:
        fix = (
            "pass eval_set() another log_dir" if plan.capture.log_dir else "set log_root elsewhere"
        )
        raise bad_input(
            f"The run's log dir {plan.log_dir} cannot be created or written ({problem}); "
            f"make it writable, or {fix}."
        )


def make_plan(ctx: Context, definition: str, quiet: bool = False) -> LaunchPlan:
    """Resolve the definition (on the Steward worker: `ensure_services` first; shown as it goes
    unless `quiet`) and work out what it means against the live run and the log store."""
    from steward.worker.workspace import definition_hash, log_store

    with timed_step(f"resolving {definition} (capture)", quiet):
        capture = preflight.capture(ctx, definition)
    live = asyncio.run(live_status(ctx))
    if live is not None:
        log_dir = live.state.log_dir
        committed = [t.spec for t in live.state.tasks]
        logs = {t.spec.identifier: t.log for t in live.state.tasks}
        delta = compute_delta(committed, logs, capture.tasks, log_store.archived_logs(log_dir))
    else:
        log_dir = capture.log_dir or log_store.log_dir_for(str(ctx.workspace), ctx.options.log_root)
        delta = compute_delta([], {}, capture.tasks, [])
    hits: dict[str, str] = {}
    if ctx.options.log_store:
        wanted = [t for t in capture.tasks if _row_kind(delta, t.identifier) in RUNS_WORK]
        try:
            entries = log_store.index_store(ctx.options.log_store)
        except ValueError as err:  # a Flow store without the flow extra
            raise bad_input(f"{ctx.workspace / '_steward.yaml'}: {err}") from err
        hits = {i: e.path for i, e in log_store.satisfied(wanted, entries).items()}
    return LaunchPlan(
        capture=capture,
        definition_hash=definition_hash(ctx.workspace, definition),
        log_dir=log_dir,
        store_hits=hits,
        live=live,
        delta=delta,
    )


def _row_kind(delta: Delta, identifier: str) -> str | None:
    return next((r.kind for r in delta.rows if r.identifier == identifier), None)


def print_plan(plan: LaunchPlan) -> None:
    if plan.live is not None:
        console.print(f"Delta against the live run ({plan.live.state.phase}):", highlight=False)
        for line in delta_lines(plan.delta):
            console.print(f"  {line}", highlight=False)
    if plan.store_hits:
        names = ", ".join(sorted(plan.name_of(i) for i in plan.store_hits))
        console.print(f"From the log store (not run): {names}", highlight=False)


def smoke(
    ctx: Context,
    definition: str,
    tasks: list[TaskSpec],
    accept: list[str],
    quiet: bool,
    stopped: str = "nothing was launched",
) -> dict[str, Any]:
    """Smoke the work about to run; a failure not waived stops the launch with what failed."""
    from steward.workflows.prelaunch.preflight import waived

    if not quiet:
        names = ", ".join(t.name for t in tasks)
        console.print(f"Smoke: {SMOKE_SAMPLES} samples each of {names} ...", highlight=False)
    result = preflight.smoke(ctx, definition, tasks, SMOKE_SAMPLES, SMOKE_CAP_S)
    failures = waived(result, accept)
    document = {**result.model_dump(mode="json"), "failures": [f.model_dump() for f in failures]}
    if failures:
        lines = "; ".join(f"{f.task} ({f.model}): {f.check} — {f.message}" for f in failures)
        raise CommandError(
            f"The smoke run failed, so {stopped}: {lines}. Fix it, or waive a check "
            "with --accept CHECK (model, sandbox, task, timeout, definition, or TASK:CHECK), or "
            "skip the smoke with --no-smoke."
        )
    if not quiet:
        waived = len(result.checks) - len(failures)
        console.print(
            f"Smoke passed: {result.samples} samples in {result.seconds:.0f} s"
            + (f" ({waived} failure(s) waived)" if waived else "")
            + ".",
            highlight=False,
        )
    return document


def check_credentials(ctx: Context, models: list[str], quiet: bool) -> dict[str, Any]:
    """Refuse, naming the variables and the fix, when the workers would not see the
    credentials the models' providers need. The check runs on the worker's host."""
    from temporalio.client import WorkflowFailureError

    from steward.worker.connect import host_queue
    from steward.workflows.prelaunch.credentials import (
        CredentialsCheck,
        CredentialsReport,
        CredentialsRequest,
        refusal,
        requirements_for,
    )

    requirements, unchecked = requirements_for(models)
    document: dict[str, Any] = {"found": [], "unchecked": unchecked}
    if requirements:
        request = CredentialsRequest(
            workspace=str(ctx.workspace), host_queue=host_queue(), requirements=requirements
        )
        try:
            report = ask_worker(
                ctx,
                CredentialsCheck.run,
                request,
                step="credentials",
                seconds=90,
                result_type=CredentialsReport,
            )
        except WorkflowFailureError as err:  # no Steward worker on this host answered in time
            raise CommandError(
                "The Steward worker on this host did not answer the credentials check; start it "
                "(`steward worker start`) and launch again, or pass --no-env-check."
            ) from err
        refused = refusal(report, str(ctx.workspace))
        if refused:
            raise bad_input(refused)
        document["found"] = [f.model_dump() for f in report.found]
    if not quiet:
        for found in document["found"]:
            console.print(
                f"Credentials: {found['variable']} from {found['source']}.", highlight=False
            )
        if unchecked:
            console.print(
                f"Credentials of {', '.join(unchecked)} come from their own chain (files, roles, "
                "local servers) and were not checked.",
                highlight=False,
            )
    return document
