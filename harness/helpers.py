"""Test helpers: run the real `steward` CLI, write workspaces, wait for conditions."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil

from harness import cli_zygote

STEWARD = str(Path(sys.executable).parent / "steward")


# Ports handed to a server that binds them later, and binds them again after a kill -9 (a
# Temporal dev server a test restarts). They come from below the kernel's ephemeral range
# (32768-60999), so no outgoing connection and no server's port-0 listener can take one
# meanwhile (a port from that range was: `server start` found it "taken by another program"),
# and from a block of their own for each pytest-xdist process, so two never pick the same one.
HANDED_PORTS = range(20000, 32000)
PORTS_PER_PROCESS = 1000
_handed: set[int] = set()


def free_port() -> int:
    """A port on 127.0.0.1 nothing holds now and this process has not handed out before."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")  # "gw0", "gw1", ...
    block = int(worker[2:]) + 1 if worker[2:].isdigit() else 0
    first = HANDED_PORTS.start + (block * PORTS_PER_PROCESS) % len(HANDED_PORTS)
    offset = os.getpid() % PORTS_PER_PROCESS  # two processes outside xdist start apart
    for step in range(PORTS_PER_PROCESS):
        port = first + (offset + step) % PORTS_PER_PROCESS
        if port in _handed:
            continue
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                continue
        _handed.add(port)
        return port
    raise RuntimeError(f"no free port left in {first}-{first + PORTS_PER_PROCESS - 1}")


def session_env(data_dir: Path, **extra: str) -> dict[str, str]:
    """The environment of a Steward of its own for tests and benchmarks: this process's, less
    any STEWARD_* or Inspect selection, with a private data dir and free ports."""
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("STEWARD_", "INSPECT_EVAL_SET"))
    }
    env.update(
        STEWARD_DATA_DIR=str(data_dir),
        STEWARD_TEMPORAL_PORT=str(free_port()),
        STEWARD_TEMPORAL_UI_PORT=str(free_port()),
        PYTHONUNBUFFERED="1",
        # Launch smokes by default; tests that are about the smoke turn it back on.
        STEWARD_SMOKE="false",
        **extra,
    )
    return env


def reap_leftovers(data_dir: Path | str) -> None:
    """Kill any process left behind that still uses `data_dir` (a Steward's task workers after
    a failed test), never this one."""
    me = os.getpid()
    for process in psutil.process_iter(["pid", "environ"]):
        try:
            if process.pid != me and (process.info["environ"] or {}).get("STEWARD_DATA_DIR") == str(
                data_dir
            ):
                os.kill(process.pid, 9)
        except (psutil.Error, OSError):
            pass


@contextmanager
def own_services(
    prefix: str,
    env: Callable[[Path], dict[str, str]] = lambda data_dir: {},
    wrap: Callable[[dict[str, str]], dict[str, str]] = lambda env: env,
) -> Iterator[Steward]:
    """A Temporal server and Steward worker of a test module's own, in a fresh data dir (`env`
    adds to the environment, given that dir; `wrap` may change the whole of it), stopped and
    reaped afterwards however the block ends."""
    data_dir = Path(tempfile.mkdtemp(prefix=prefix))
    runner = Steward(wrap(session_env(data_dir, **env(data_dir))))
    try:
        runner.ok("server", "start")
        runner.ok("worker", "start")
        yield runner
    finally:
        runner("worker", "stop")
        runner("server", "stop")
        reap_leftovers(data_dir)  # task workers left by a failure
        shutil.rmtree(data_dir, ignore_errors=True)


def private_steward(steward: Steward, tmp_path: Path, **env: str) -> Steward:
    """A Steward beside the session's, with its own data dir and ports (so nothing it starts or
    stops touches the session's services)."""
    data = tmp_path / "data"
    data.mkdir()
    return Steward(
        {
            **steward.env,
            "STEWARD_DATA_DIR": str(data),
            "STEWARD_TEMPORAL_PORT": str(free_port()),
            "STEWARD_TEMPORAL_UI_PORT": str(free_port()),
            **env,
        }
    )


@dataclass
class Result:
    code: int
    stdout: str
    stderr: str

    @property
    def json(self) -> Any:
        return json.loads(self.stdout)


class Steward:
    """Runs the real CLI against this test session's embedded Temporal and worker: each call
    a process of its own, forked from one that has imported the CLI (harness/cli_zygote.py)."""

    def __init__(self, env: dict[str, str]) -> None:
        self.env = env

    def __call__(
        self, *args: str, cwd: Path | None = None, timeout: float = 180, env: dict | None = None
    ) -> Result:
        environment = {**self.env, **(env or {})}
        if not os.environ.get("STEWARD_TEST_SUBPROCESS"):
            return Result(*cli_zygote.run(list(args), cwd, environment, timeout))
        done = subprocess.run(
            [STEWARD, *args],
            cwd=cwd,
            env=environment,
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )
        return Result(done.returncode, done.stdout, done.stderr)

    def ok(self, *args: str, cwd: Path | None = None, **kw: Any) -> Any:
        result = self(*args, "--json", cwd=cwd, **kw)
        assert result.code == 0, (
            f"steward {' '.join(args)} exited {result.code}: {result.stdout}{result.stderr}"
        )
        return result.json

    def status(self, cwd: Path) -> dict:
        """`steward status --json --full`: the agent view (steward.status/1) and, beside it,
        the run's internal state under "state" (what most tests read)."""
        return self.ok("status", "--full", cwd=cwd)

    def wait_phase(
        self, cwd: Path, phases: set[str], timeout: float = 360, tend: bool = False
    ) -> dict:
        """Wait until the run's phase is one of `phases` and return its status.

        Each `steward` call is a new Python process (about a CPU-second), so the wait costs few:
        for settled phases without tending, one `steward status --wait` polls the run in-process;
        when tending, each round is one `steward tend` (its summary names the phase); otherwise
        `state` polls. `steward status` is read once the phase is reached, and returned."""
        from steward.workflows.contracts import SETTLED_PHASES

        if not tend and phases <= SETTLED_PHASES:
            try:
                result = self("status", "--wait", "--json", "--full", cwd=cwd, timeout=timeout)
            except subprocess.TimeoutExpired:
                result = None
            if result is not None and result.code == 0 and result.json["state"]["phase"] in phases:
                return result.json
            raise AssertionError(f"run never reached {phases}: {self._state_text(cwd)}")
        deadline = time.monotonic() + timeout
        while True:
            if tend:
                summary = self("tend", "--json", cwd=cwd)
                reached = summary.code != 0 or summary.json["phase"] in phases
            else:
                reached = self.state(cwd)["phase"] in phases
            if reached:
                status = self.status(cwd)
                if status["state"]["phase"] in phases:
                    return status
            if time.monotonic() > deadline:
                raise AssertionError(f"run never reached {phases}: {self._state_text(cwd)}")
            time.sleep(0.5)

    def _state_text(self, cwd: Path) -> str:
        result = self("status", "--json", "--full", cwd=cwd)
        if result.code != 0:
            return result.stdout + result.stderr
        return json.dumps(result.json["state"], indent=1)[:3000]

    def state(self, cwd: Path) -> dict:
        """The run's state, as `steward status --json` holds it under "state", read in this
        process with one Temporal query. For polling: a CLI process per look costs about a
        CPU-second, taken from the run being watched. Commands, and what a test says about
        `steward status` itself, go through the CLI."""
        import asyncio

        from temporalio.client import Client
        from temporalio.contrib.pydantic import pydantic_data_converter

        from steward.activities.workspace.workspace import find_workspace, workflow_id_for
        from steward.workflows.run.eval_run import EvalRun

        workflow_id = workflow_id_for(find_workspace(Path(cwd).resolve()))

        async def ask() -> Any:
            client = await Client.connect(
                f"127.0.0.1:{self.env['STEWARD_TEMPORAL_PORT']}",
                data_converter=pydantic_data_converter,
            )
            handle = client.get_workflow_handle_for(EvalRun.run, workflow_id)
            return await handle.query(EvalRun.status)

        return asyncio.run(ask()).state.model_dump(mode="json")

    def task(self, cwd: Path, name: str) -> dict:
        """One task's state, by task name (read as `state` reads it)."""
        return next(t for t in self.state(cwd)["tasks"] if t["spec"]["name"] == name)

    def data_dir(self) -> Path:
        return Path(self.env["STEWARD_DATA_DIR"])

    def service_pid(self, name: str) -> int:
        return json.loads((self.data_dir() / f"{name}.pid").read_text())["pid"]


def wait_for(
    predicate: Callable[[], Any],
    timeout: float = 120,
    interval: float = 0.3,
    what: str = "condition",
    describe: Callable[[], Any] | None = None,
) -> Any:
    """Poll until `predicate` is truthy; on timeout, `describe` (if given) says what was seen."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            seen = f"; last seen: {describe()}" if describe else ""
            raise AssertionError(f"timed out waiting for {what}{seen}")
        time.sleep(interval)


def pid_alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


TASK_TEMPLATE = """
@task
def {name}():
    return Task(
        dataset=samples("{name}", {samples}, {marker!r}), solver=generate(), scorer=match(){extra}
    )
"""

DEFINITION_HEAD = """from inspect_ai import Task, eval_set, task
from inspect_ai.dataset import Sample
from inspect_ai.scorer import match
from inspect_ai.solver import generate


def samples(prefix, count, marker=""):
    return [
        Sample(id=i, input=f"Reply with: {prefix}-{i}{marker}", target=f"{prefix}-{i}{marker}")
        for i in range(1, count + 1)
    ]
"""


def write_definition(
    workspace: Path,
    tasks: dict[str, int],
    *,
    crash: set[str] = frozenset(),
    markers: dict[str, str] | None = None,
    sandbox: dict[str, str] | None = None,
    epochs: int = 1,
    model: str = "steward/offline",
    eval_set_args: str = "",
    name: str = "evalset.py",
) -> Path:
    """A definition of `tasks` (name -> sample count) on `model` (the offline one by default).
    Tasks in `crash` carry the CRASH marker in every input (with STEWARD_OFFLINE_CRASH=CRASH they
    kill their worker); `markers` appends other text to a task's inputs and targets (e.g. " BOOM"
    for STEWARD_OFFLINE_FAIL=BOOM); `sandbox` gives tasks a sandbox type; `eval_set_args` is
    appended to the eval_set() call (e.g. ", max_samples=8")."""
    body = DEFINITION_HEAD
    for task_name, count in tasks.items():
        marker = " CRASH" if task_name in crash else (markers or {}).get(task_name, "")
        kind = (sandbox or {}).get(task_name)
        extra = f", sandbox={kind!r}" if kind else ""
        body += TASK_TEMPLATE.format(name=task_name, samples=count, marker=marker, extra=extra)
    calls = ", ".join(f"{t}()" for t in tasks)
    body += f"\n\neval_set(tasks=[{calls}], model={model!r}, epochs={epochs}{eval_set_args})\n"
    path = workspace / name
    path.write_text(body)
    return path


def make_workspace(
    steward: Steward,
    root: Path,
    tasks: dict[str, int] | None = None,
    *,
    definition_text: str | None = None,
    tend_interval: str = "2s",
    options: str = "",
    dotenv: str = "",
    holds: Iterable[str] = (),
    **definition: Any,
) -> Path:
    """A workspace `steward init` makes in root/ws. Its evalset.py is made from `tasks` by
    write_definition (given `definition` as keywords), or is `definition_text` as written.
    _steward.yaml gets `tend_interval` (a long one, such as 1h, leaves the tending to events
    and `steward tend`) and `options`; `dotenv` becomes its .env. Each of `holds` is a file
    the definition waits on while it exists: the test removes it to let the run go on."""
    if (tasks is None) == (definition_text is None) or (definition_text and definition):
        raise ValueError("give either tasks (and write_definition's keywords) or definition_text")
    workspace = root / "ws"
    steward.ok("init", str(workspace))
    if definition_text is None:
        write_definition(workspace, tasks or {}, **definition)
    else:
        (workspace / "evalset.py").write_text(definition_text)
    with open(workspace / "_steward.yaml", "a") as handle:
        handle.write(f"\ntend_interval: {tend_interval}\n" + options)
    if dotenv:
        (workspace / ".env").write_text(dotenv)
    for hold in holds:
        (workspace / hold).write_text("held by the test\n")
    return workspace


def read_logs(log_dir: Path) -> dict[str, list[tuple[Any, int]]]:
    """task name -> [(sample id, epoch)] over every .eval file in the log dir; also asserts success."""
    from inspect_ai.log import read_eval_log

    found: dict[str, list[tuple[Any, int]]] = {}
    for path in sorted(log_dir.glob("*.eval")):
        log = read_eval_log(str(path))
        assert log.status == "success", f"{path.name} is {log.status}"
        found.setdefault(log.eval.task, []).extend((s.id, s.epoch) for s in log.samples or [])
    return found


def assert_each_sample_once(workspace: Path, expected: dict[str, int]) -> None:
    """One success log per task, holding each of its samples exactly once."""
    samples = read_logs(workspace / "logs")
    assert {task: len(ids) for task, ids in samples.items()} == expected
    for task, ids in samples.items():
        assert len(set(ids)) == len(ids), f"{task} has a sample twice"
    assert len(list((workspace / "logs").glob("*.eval"))) == len(expected)


HISTORIES = Path(__file__).resolve().parent.parent / "tests" / "histories"


def replay(history: Any, record_as: str | None = None) -> None:
    """Replay a workflow history against today's EvalRun (a non-determinism error fails);
    with STEWARD_RECORD_HISTORY=1, also keep it in tests/histories as `record_as`."""
    import asyncio
    import os

    from temporalio.contrib.pydantic import pydantic_data_converter
    from temporalio.worker import Replayer

    from steward.worker.temporal_worker import WORKFLOWS, workflow_runner

    replayer = Replayer(
        workflows=WORKFLOWS,
        data_converter=pydantic_data_converter,
        workflow_runner=workflow_runner(),
    )
    asyncio.run(replayer.replay_workflow(history))
    if record_as and os.environ.get("STEWARD_RECORD_HISTORY"):
        (HISTORIES / f"{record_as}.json").write_text(history.to_json())


def temporal_client(steward: Steward):
    """A client (awaitable) of the session's Temporal server, speaking pydantic like Steward."""
    from temporalio.client import Client
    from temporalio.contrib.pydantic import pydantic_data_converter

    return Client.connect(
        f"127.0.0.1:{steward.env['STEWARD_TEMPORAL_PORT']}",
        data_converter=pydantic_data_converter,
    )


def fetch_history(steward: Steward, workflow_id: str, run_id: str | None = None) -> Any:
    import asyncio

    from temporalio.client import Client

    async def go() -> Any:
        client = await Client.connect(f"127.0.0.1:{steward.env['STEWARD_TEMPORAL_PORT']}")
        return await client.get_workflow_handle(workflow_id, run_id=run_id).fetch_history()

    return asyncio.run(go())


def history_plaintext(history: Any) -> str:
    """A workflow history as text with every payload decoded (JSON histories carry payloads
    base64-encoded, so a plain search would miss a value inside them)."""
    import base64

    decoded: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if "metadata" in node and isinstance(node.get("data"), str):
                decoded.append(base64.b64decode(node["data"]).decode("utf-8", "replace"))
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    raw = history.to_json()
    walk(json.loads(raw))
    return raw + "\n" + "\n".join(decoded)


# A ramp step needs a worker started and two tends' windows of it; under the whole suite's load on
# two slow cores that has taken over two minutes, so a ramp test waits this long for each step.
RAMP_STEP_TIMEOUT_S = 300


def ramp_seen(steward: Steward, workspace: Path, name: str) -> str:
    """What a ramp test saw of one task when its wait ran out: the setpoint, the worker's last
    concurrency reading, the attempts, and the run's last journal events."""
    task = steward.task(workspace, name)
    reading = task.get("ramp_baseline") or {}
    told = ("previous", "setpoint", "reason", "limit", "connections")
    tail = [
        (e["event"], {k: v for k, v in e.get("data", e).items() if k in told})
        for e in read_journal(workspace)
        if e["event"] != "tend"
    ][-8:]
    return (
        f"max_samples={task['max_samples']} attempts={task['attempts']} phase={task['phase']} "
        f"in_flight={reading.get('in_flight')} setpoint={reading.get('setpoint')} "
        f"counters={reading.get('counters')} progress={task['progress']} journal tail={tail}"
    )


def read_journal(workspace: Path) -> list[dict]:
    """The events the run has written to the workspace's journal.jsonl, in order (events it
    still holds until its next write are in `steward collect`)."""
    return [json.loads(line) for line in (workspace / "journal.jsonl").read_text().splitlines()]


def tasks_by_name(status: dict) -> dict[str, dict]:
    """A `steward status --json` answer's task states by task name."""
    return {t["spec"]["name"]: t for t in status["state"]["tasks"]}


def fake_worker(worker_id: str, identifiers: list[str], socket: str):
    """A WorkerProcess record for pure-policy tests (no process behind it)."""
    from datetime import UTC, datetime

    from steward.workflows.contracts import WorkerProcess

    return WorkerProcess(
        worker_id=worker_id,
        tasks=identifiers,
        pid=1,
        create_time=0.0,
        socket=socket,
        output="o",
        started_at=datetime.now(UTC),
    )
