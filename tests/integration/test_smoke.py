"""The pre-launch smoke run: real definition processes on the offline model, classified
(the classification itself, without a process, is in tests/unit/test_smoke_classify.py)."""

from __future__ import annotations

from pathlib import Path

import psutil
import pytest

from harness.helpers import write_definition
from steward.activities.definition.capture import capture_definition_sync
from steward.activities.definition.smoke import SmokeResult, describe, run_smoke, waived

# Nothing from the outer environment steers the offline model or Inspect's driven modes.
pytestmark = pytest.mark.usefixtures("no_offline_knobs")


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
    write_definition(ws, tasks, model=model, markers=marker, eval_set_args=', log_dir="logs"')
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
