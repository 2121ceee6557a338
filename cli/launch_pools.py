"""At launch: will Docker's address pools give the run the sandbox networks it wants?"""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from steward.cli.output import CommandError, console
from steward.worker.workspace import docker_pools
from steward.workflows.contracts import RunStatus
from steward.workflows.policy.ramp import ceiling_for


def docker_sandboxes_wanted(status: RunStatus, ramp: tuple[int, int] | bool) -> int:
    """The Docker sandboxes the run may hold at once: each Docker task at its ramp ceiling (or its
    pinned setpoint), within the sandbox budget."""
    state = status.state
    wanted = 0
    for task in state.tasks:
        if task.spec.sandbox != "docker":
            continue
        top = (
            task.max_samples
            if task.pinned or not ramp
            else ceiling_for(ramp, task.spec.planned_samples)
        )
        wanted += max(top, task.max_samples)
    return min(wanted, state.sandbox_budget) if state.sandbox_budget is not None else wanted


def check_docker_pools(
    status: RunStatus,
    ramp: tuple[int, int] | bool,
    choice: str,
    daemon_json: Path | None,
    quiet: bool,
) -> dict | None:
    if not any(t.spec.sandbox == "docker" for t in status.state.tasks):
        return None
    advice = docker_pools.advise(
        docker_sandboxes_wanted(status, ramp), docker_pools.daemon_pools(), daemon_json
    )
    result = {
        "wanted": advice.wanted,
        "networks": advice.capacity,
        "short": advice.short,
        "daemon_json": str(advice.daemon_json),
        "written": False,
        "backup": None,
    }
    say = (
        (lambda text: None)
        if quiet
        else (lambda text: console.print(text, highlight=False, soft_wrap=True))
    )
    say(advice.message())
    if not advice.short:
        return result
    asked = choice == "ask" and sys.stdin.isatty() and not quiet
    accept = choice == "accept" or (
        asked
        and typer.confirm(
            f"Merge the finer pools into {advice.daemon_json} (a backup is kept)?", default=False
        )
    )
    if accept:
        try:
            backup = docker_pools.merge_finer_pools(advice.daemon_json)
        except docker_pools.DaemonJsonError as err:
            raise CommandError(f"The run is launched, but {err}") from err
        result.update(written=True, backup=str(backup) if backup else None)
        say(f"Wrote {advice.daemon_json}" + (f" (backup: {backup})" if backup else "") + ".")
    else:
        say(f"Not changed. To fix it, put this in {advice.daemon_json}:\n{advice.snippet()}")
    say(
        f"Nothing takes effect until Docker restarts, which stops every running container: "
        f"{docker_pools.restart_command()}"
    )
    return result
