"""Does a provider answer again? One cheap request per model, made as the workspace's task
workers make theirs: Inspect's own provider for the model (`get_model(...).generate`, a prompt
of a few tokens, no retries, a timeout), under the workspace's environment (its `.env`: the base
URL and key are often there), in a process of its own so that environment is its alone.

The process is forked from the Steward worker's fork server when it is warm (Inspect already
imported: milliseconds), else started fresh (`python -m steward.activities.processes.
provider_probe MODEL OUT TIMEOUT`); either way it has its own session and is killed with what
it started if it overruns. A run probes this way while a rerun waits for its provider
(workflows/policy/deferrals.py decides when).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

from temporalio import activity

from steward.activities.processes.forkserver import context
from steward.activities.processes.forkserver import start as forkserver_start
from steward.activities.processes.runner_process import forking
from steward.activities.workspace.dotenv_files import workspace_environment
from steward.workflows.activity_io import ProbeRequest, ProbeResult
from steward.workflows.names import Activity
from steward.workflows.policy.provider_budget import endpoint_of

PROMPT = "Reply with: ok"
GRACE_S = 15.0  # beyond the request's timeout: the process's own start, Inspect's model setup
PROBLEM_LIMIT = 300


def one_line(err: BaseException) -> str:
    """An error as one line: its type and message (a RetryError names what it wrapped)."""
    cause = err
    last = getattr(err, "last_attempt", None)  # tenacity's RetryError
    if last is not None and last.exception() is not None:
        cause = last.exception()
    text = " ".join(f"{type(cause).__name__}: {cause}".split())
    return text[:PROBLEM_LIMIT]


def probe_model(model: str, timeout: float) -> dict:
    """Ask `model` for a few tokens, once (in the probe's own process): whether it answered,
    and what the request met when it did not."""
    import asyncio

    from inspect_ai.model import GenerateConfig, get_model

    try:
        config = GenerateConfig(max_retries=0, timeout=max(1, int(timeout)), max_tokens=16)
        instance = get_model(model, config=config, memoize=False)
        output = asyncio.run(instance.generate(PROMPT))
    except Exception as err:  # the provider's error, whatever it is: it did not answer
        return {"answered": False, "problem": one_line(err)}
    error = getattr(output, "error", None)
    if error:
        return {"answered": False, "problem": " ".join(str(error).split())[:PROBLEM_LIMIT]}
    return {"answered": True}


def _write(out: str, answer: dict) -> None:
    tmp = Path(out).with_suffix(".tmp")
    tmp.write_text(json.dumps(answer))
    tmp.replace(out)


def _forked_probe(model: str, env: dict[str, str], cwd: str, out: str, timeout: float) -> None:
    """The forked child: its own session, the workspace's environment and directory."""
    from multiprocessing import forkserver

    os.setsid()
    alive = forkserver._forkserver._forkserver_alive_fd  # noqa: SLF001
    if alive is not None:  # a fork server whose Steward worker is gone need not wait for it
        os.close(alive)
        forkserver._forkserver._forkserver_alive_fd = None  # noqa: SLF001
    os.environ.clear()
    os.environ.update(env)
    os.chdir(cwd)
    _write(out, probe_model(model, timeout))
    os._exit(0)


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _run_probe(model: str, env: dict[str, str], cwd: str, timeout: float) -> dict:
    with tempfile.TemporaryDirectory(prefix="steward-probe-") as scratch:
        out = str(Path(scratch) / "answer.json")
        limit = timeout + GRACE_S
        if forking():
            process = context().Process(
                target=_forked_probe, args=(model, env, cwd, out, timeout), daemon=False
            )
            forkserver_start(process)
            assert process.pid is not None
            process.join(limit)
            _kill_group(process.pid)  # overran, or what it left behind
            process.join(5)
        else:
            command = [sys.executable, "-m", __name__, model, out, str(timeout)]
            try:
                subprocess.run(
                    command,
                    env=env,
                    cwd=cwd,
                    timeout=limit,
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                    start_new_session=True,
                )
            except subprocess.TimeoutExpired:
                pass
        try:
            return json.loads(Path(out).read_text())
        except (OSError, ValueError):
            return {"answered": False, "problem": f"no answer within {limit:g} s"}


def probe_providers_sync(request: ProbeRequest) -> ProbeResult:
    env = workspace_environment(request.workspace)
    result = ProbeResult(answered=True)
    for model in request.models:
        result.endpoints[model] = endpoint_of(model, env)
        answer = _run_probe(model, env, request.workspace, request.timeout)
        if not answer.get("answered"):
            result.answered = False
            result.problems[model] = str(answer.get("problem") or "no answer")
    return result


@activity.defn(name=Activity.PROBE_PROVIDER)
def probe_providers(request: ProbeRequest) -> ProbeResult:
    """Whether every model of `request` answers one cheap request now."""
    return probe_providers_sync(request)


if __name__ == "__main__":  # the fresh-process probe (no warm fork server)
    _model, _out, _timeout = sys.argv[1], sys.argv[2], float(sys.argv[3])
    _write(_out, probe_model(_model, _timeout))
