"""The pre-launch smoke run: real definition processes on the offline model, classified."""

from __future__ import annotations

from pathlib import Path

import psutil
import pytest

from activities.capture import capture_definition_sync
from activities.smoke import (
    SmokeCheck,
    SmokeResult,
    _stderr_error,
    classify,
    describe,
    run_smoke,
    waived,
)

HEAD = """from inspect_ai import Task, eval_set, task
from inspect_ai.dataset import Sample
from inspect_ai.scorer import match
from inspect_ai.solver import generate


def samples(prefix, count, marker=""):
    return [
        Sample(id=i, input=f"Reply with: {prefix}-{i}{marker}", target=f"{prefix}-{i}{marker}")
        for i in range(1, count + 1)
    ]
"""

TASK = """
@task
def {name}():
    return Task(dataset=samples("{name}", {count}, {marker!r}), solver=generate(), scorer=match())
"""


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Nothing from the outer environment steers the offline model or Inspect's driven modes."""
    for name in (
        "STEWARD_OFFLINE_DELAY",
        "STEWARD_OFFLINE_HOLD",
        "STEWARD_OFFLINE_FAIL",
        "STEWARD_OFFLINE_CRASH",
        "STEWARD_OFFLINE_RATE_LIMIT",
        "INSPECT_EVAL_SET_SELECTION",
        "INSPECT_EVAL_SET_CAPTURE",
        "INSPECT_EVAL_SET_OVERRIDES",
    ):
        monkeypatch.delenv(name, raising=False)


def workspace(
    root: Path,
    tasks: dict[str, int],
    *,
    model: str = "steward/offline",
    dotenv: str = "",
    marker: dict[str, str] | None = None,
) -> Path:
    ws = root / "ws"
    ws.mkdir()
    body = HEAD
    for name, count in tasks.items():
        body += TASK.format(name=name, count=count, marker=(marker or {}).get(name, ""))
    calls = ", ".join(f"{name}()" for name in tasks)
    body += f'\n\neval_set(tasks=[{calls}], model={model!r}, log_dir="logs")\n'
    (ws / "evalset.py").write_text(body)
    if dotenv:
        (ws / ".env").write_text(dotenv)
    return ws


def smoke_processes(result: SmokeResult) -> list[psutil.Process]:
    """Live processes started for this smoke (their selection lies in its directory)."""
    found = []
    for process in psutil.process_iter(["pid"]):
        try:
            selection = process.environ().get("INSPECT_EVAL_SET_SELECTION", "")
            if selection.startswith(result.log_dir) and process.status() != psutil.STATUS_ZOMBIE:
                found.append(process)
        except (psutil.Error, OSError):
            continue
    return found


def test_healthy_task_runs_limit_samples_apart_from_the_run(tmp_path: Path) -> None:
    from inspect_ai.log import list_eval_logs, read_eval_log

    ws = workspace(tmp_path, {"healthy": 10})
    tasks = capture_definition_sync(str(ws), "evalset.py").tasks
    assert tasks[0].samples == 10

    result = run_smoke(str(ws), "evalset.py", tasks, limit=2)

    assert result.ok, describe(result)
    assert result.checks == []
    assert result.tasks == ["healthy"]
    assert result.samples == 2
    log_dir = Path(result.log_dir)
    assert log_dir.parent == ws / ".steward" / "smoke"
    logs = list_eval_logs(str(log_dir), recursive=False)
    assert len(logs) == 1
    log = read_eval_log(logs[0].name)
    assert log.status == "success"
    assert len(log.samples or []) == 2
    assert not (ws / "logs").exists()
    assert describe(result) == ""
    assert not smoke_processes(result)


def test_failing_samples_are_a_task_check_and_can_be_waived(tmp_path: Path) -> None:
    ws = workspace(
        tmp_path,
        {"fine": 5, "broken": 5},
        dotenv="STEWARD_OFFLINE_FAIL=BOOM\n",
        marker={"broken": " BOOM"},
    )
    tasks = capture_definition_sync(str(ws), "evalset.py").tasks

    result = run_smoke(str(ws), "evalset.py", tasks, limit=2)

    assert not result.ok
    assert [(c.task, c.check) for c in result.checks] == [("broken", "task")], describe(result)
    assert "offline model told to fail" in result.checks[0].message
    assert result.samples == 2  # fine's two; broken's errored
    assert describe(result).startswith("broken (steward/offline): task — sample ")
    assert waived(result, ["task"]) == []
    assert waived(result, ["broken"]) == []
    assert waived(result, ["broken:task"]) == []
    assert waived(result, ["bro*"]) == []
    assert waived(result, ["*:task"]) == []
    assert waived(result, ["model", "fine", "broken:sandbox"]) == result.checks
    assert not (ws / "logs").exists()


def test_missing_provider_credentials_are_a_model_check(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = workspace(tmp_path, {"remote": 3}, model="openai/gpt-4o-mini")
    # Capture resolves the model too: it needs some key, then the smoke runs without one.
    monkeypatch.setenv("OPENAI_API_KEY", "sk-not-a-real-key")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")  # never the internet
    tasks = capture_definition_sync(str(ws), "evalset.py").tasks
    for name in ("OPENAI_API_KEY", "AZUREAI_OPENAI_API_KEY", "AZURE_OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)

    result = run_smoke(str(ws), "evalset.py", tasks, limit=2)

    assert not result.ok
    assert [(c.task, c.model, c.check) for c in result.checks] == [
        ("remote", "openai/gpt-4o-mini", "model")
    ], describe(result)
    assert "OPENAI_API_KEY" in result.checks[0].message
    assert "[bold]" not in result.checks[0].message
    assert result.samples == 0
    assert waived(result, ["remote:model"]) == []
    assert waived(result, ["task", "sandbox"]) == result.checks


def test_time_cap_kills_the_run_and_reports_a_timeout(tmp_path: Path) -> None:
    ws = workspace(tmp_path, {"slow": 4}, dotenv="STEWARD_OFFLINE_DELAY=30\n")
    tasks = capture_definition_sync(str(ws), "evalset.py").tasks

    result = run_smoke(str(ws), "evalset.py", tasks, limit=2, time_cap=8)

    assert not result.ok
    assert [(c.task, c.check) for c in result.checks] == [("slow", "timeout")], describe(result)
    assert "8 s" in result.checks[0].message
    assert result.seconds < 25
    assert result.samples == 0
    assert not smoke_processes(result)


# ---------- classification, without a process ----------
@pytest.mark.parametrize(
    ("message", "traceback", "kind"),
    [
        ("Error code: 401 - {'error': {'message': 'Incorrect API key provided'}}", "", "model"),
        ("AuthenticationError('invalid x-api-key')", "", "model"),
        ("APIConnectionError('Connection error.')", "", "model"),
        ("[Errno 111] Connection refused", "", "model"),
        ("Model API nosuchprovider of model 'nosuchprovider/x' not recognized.", "", "model"),
        ("PermissionDeniedError: Error code: 403", "", "model"),
        (
            "RuntimeError('boom')",
            'File "/x/inspect_ai/util/_sandbox/docker/docker.py", line 1, in exec\n'
            "RuntimeError: boom",
            "sandbox",
        ),
        ("Docker daemon: permission denied while trying to connect", "", "sandbox"),
        ("Error response from compose: service default failed to start", "", "sandbox"),
        ("ValueError('could not parse the answer')", "", "task"),
        ("OfflineSampleFailure(\"offline model told to fail on 'X'\")", "", "task"),
    ],
)
def test_classify(message: str, traceback: str, kind: str) -> None:
    assert classify(message, traceback) == kind


def test_stderr_error_keeps_a_multiline_message_without_markup() -> None:
    stderr = (
        "Traceback (most recent call last):\n"
        '  File "/v/inspect_ai/model/_providers/openai.py", line 258, in __init__\n'
        "    raise environment_prerequisite_error(\n"
        "inspect_ai._util.error.PrerequisiteError: ERROR: Unable to initialise OpenAI client\n"
        "\n"
        "No [bold][blue]OPENAI_API_KEY[/blue][/bold] defined in the environment.\n"
    )
    message, traceback = _stderr_error(stderr)
    assert message == (
        "PrerequisiteError: Unable to initialise OpenAI client "
        "No OPENAI_API_KEY defined in the environment."
    )
    assert classify(message, traceback) == "model"
    assert _stderr_error("") == ("", "")
    assert _stderr_error("just a line\n") == ("just a line", "")


def test_waived_and_describe() -> None:
    checks = [
        SmokeCheck(task="a", model="m1", check="model", message="no key"),
        SmokeCheck(task="b_x", model="m2", check="sandbox", message="no docker"),
    ]
    result = SmokeResult(
        ok=False, checks=checks, tasks=["a", "b_x"], log_dir="d", seconds=1, samples=0
    )
    assert waived(result, []) == checks
    assert waived(result, ["model"]) == [checks[1]]
    assert waived(result, ["b_*:sandbox"]) == [checks[0]]
    assert waived(result, ["b_*:model"]) == checks
    assert waived(result, ["a", "sandbox"]) == []
    assert waived(result, ["*"]) == []
    assert describe(result) == "a (m1): model — no key\nb_x (m2): sandbox — no docker"
