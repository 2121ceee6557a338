"""Bad input refused before anything is committed, each with one sentence: a `.env` python-dotenv
cannot read, a notification Apprise cannot send to, `eval_set()` given no tasks, a directory
that cannot be written, a steering signal to a run that runs nothing, a usage error under
--json. (The CLI's own refusals end to end: tests/e2e/test_bad_input.py.)"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from steward.activities.definition.capture import runner_refusal
from steward.activities.logs.paths import unwritable
from steward.activities.processes.runner_launch import REFUSAL_MARK
from steward.activities.workspace.dotenv_files import dotenv_problem
from steward.activities.workspace.options import OptionsError, load_options
from steward.cli.output import unexpected
from steward.cli.run_calls import steering_refusal
from steward.workflows.contracts import RunState
from steward.workflows.run.eval_run import EvalRun

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch):
    for key in [k for k in os.environ if k.startswith("STEWARD_")]:
        monkeypatch.delenv(key)


# ---------------------------------------------------------------- .env
@pytest.mark.parametrize(
    "text, needles",
    [
        ("A=1\nJUSTAWORD\n", ["line 2", "names JUSTAWORD without a value", "JUSTAWORD=value"]),
        ('A=1\n\nB="never closed\n', ["line 3", "is not a NAME=value line", "fix it or remove it"]),
        ("A=1\nnot a line at all\n", ["line 2", "is not a NAME=value line"]),
    ],
)
def test_a_dotenv_that_does_not_parse_is_refused_naming_file_and_line(tmp_path, text, needles):
    (tmp_path / ".env").write_text(text)
    with pytest.raises(OptionsError) as refused:
        load_options(tmp_path)
    message = str(refused.value)
    assert str(tmp_path / ".env") in message and "\n" not in message
    for needle in needles:
        assert needle in message, message
    assert "never closed" not in message  # the line itself is not echoed: it may be a secret


def test_a_parents_dotenv_is_refused_too(tmp_path):
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (tmp_path / ".env").write_text("export = = =\n")
    (workspace / ".env").write_text("STEWARD_STALL_AFTER=3\n")
    with pytest.raises(OptionsError, match=f"{tmp_path / '.env'} line 1"):
        load_options(workspace)


def test_a_good_dotenv_passes(tmp_path):
    text = '# a comment\n\nexport STEWARD_STALL_AFTER=4\nKEY="quoted # not a comment"\nEMPTY=\n'
    (tmp_path / ".env").write_text(text)
    assert dotenv_problem(tmp_path / ".env") is None
    assert load_options(tmp_path).stall_after == 4


def test_the_definition_runner_refuses_a_dotenv_it_cannot_read(tmp_path):
    (tmp_path / ".env").write_text("JUSTAWORD\n")
    done = subprocess.run(
        [sys.executable, "-m", "steward.worker.definition_runner", "evalset.py"],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert runner_refusal(done.stderr) == (
        f"{tmp_path / '.env'} line 1 names JUSTAWORD without a value; "
        "write JUSTAWORD=value, or remove the line."
    )


# ---------------------------------------------------------------- notification
SECRET_URL = "bogus://sekrit-token@example.invalid/x"


@pytest.mark.parametrize(
    "yaml_text, which",
    [
        (f"notification: {SECRET_URL}\n", "its value"),
        (f"notification: [json://127.0.0.1:9/ok, '{SECRET_URL}']\n", "entry 2 of 2"),
        ("notification: [no-such-config.yml]\n", "its value"),
    ],
)
def test_a_notification_apprise_cannot_send_to_is_refused_without_echoing_it(
    tmp_path, yaml_text, which
):
    (tmp_path / "_steward.yaml").write_text(yaml_text)
    with pytest.raises(OptionsError) as refused:
        load_options(tmp_path)
    message = str(refused.value)
    assert message.startswith("Option 'notification' in ") and "_steward.yaml" in message
    assert which in message and "neither an Apprise URL nor an Apprise config file" in message
    assert "sekrit" not in message and "bogus" not in message and "no-such" not in message


def test_a_notification_from_the_environment_names_the_variable(tmp_path, monkeypatch):
    monkeypatch.setenv("STEWARD_NOTIFICATION", SECRET_URL)
    with pytest.raises(OptionsError, match="environment variable STEWARD_NOTIFICATION"):
        load_options(tmp_path)


def test_apprise_urls_and_a_relative_config_file_pass(tmp_path):
    (tmp_path / "apprise.yml").write_text("urls:\n  - json://127.0.0.1:9/ok\n")
    (tmp_path / "_steward.yaml").write_text(
        "notification: [json://127.0.0.1:9/ok, 'mailto://u:p@example.com', apprise.yml]\n"
    )
    options = load_options(tmp_path)
    # The config file is the workspace's wherever the worker runs, as log locations are.
    assert options.notification[2] == str(tmp_path.resolve() / "apprise.yml")


# ---------------------------------------------------------------- eval_set() without tasks
@pytest.mark.parametrize("call", ["eval_set([])", "eval_set(tasks=[], log_dir='x')"])
def test_eval_set_with_an_empty_task_list_is_refused_before_inspect_sees_it(monkeypatch, call):
    import inspect_ai
    from inspect_ai._eval import evalset

    from steward.worker.definition_runner import refuse_empty_task_list

    monkeypatch.setattr(inspect_ai, "eval_set", inspect_ai.eval_set)  # restored afterwards
    monkeypatch.setattr(evalset, "eval_set", evalset.eval_set)
    refuse_empty_task_list(Path("evalset.py"))
    with pytest.raises(SystemExit) as refused:
        eval(call, {"eval_set": inspect_ai.eval_set})
    sentence = (
        "The definition evalset.py passes eval_set() an empty task list; give it at least one task."
    )
    assert refused.value.code == REFUSAL_MARK + sentence
    assert runner_refusal(f"noise\n{refused.value.code}\n") == sentence
    assert evalset.eval_set is inspect_ai.eval_set  # both names Inspect's callers use


# ---------------------------------------------------------------- directories
def test_a_directory_even_root_cannot_create_is_unwritable():
    assert unwritable("/proc/forbidden/logs") == "No such file or directory"
    assert not Path("/proc/forbidden").exists()


def test_the_probe_leaves_nothing_behind(tmp_path):
    assert unwritable(str(tmp_path / "a" / "b" / "logs")) is None
    assert list(tmp_path.iterdir()) == []
    assert unwritable(str(tmp_path)) is None and list(tmp_path.iterdir()) == []
    assert unwritable("s3://bucket/logs") is None  # remote stores are not probed


def test_an_immutable_directory_is_unwritable_even_for_root(tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir()
    if not shutil.which("chattr") or subprocess.run(["chattr", "+i", str(locked)]).returncode:
        pytest.skip("chattr +i is not available here")
    try:
        assert unwritable(str(locked)) == "Operation not permitted"
        assert unwritable(str(locked / "logs")) == "Operation not permitted"
    finally:
        subprocess.run(["chattr", "-i", str(locked)], check=True)
    assert list(locked.iterdir()) == []


# ---------------------------------------------------------------- steering a run
WORKSPACE = SimpleNamespace(workspace=Path("/ws"))


@pytest.mark.parametrize("signal", [EvalRun.pause, EvalRun.resume, EvalRun.ramp_hold])
def test_steering_a_finished_run_is_refused(signal):
    refusal = steering_refusal(WORKSPACE, signal, RunState(phase="finished"))
    assert refusal.startswith("The run of /ws is finished and waits for signoff, so there is")
    assert "steward signoff --by NAME" in refusal
    assert "cancelling, so there is" in steering_refusal(
        WORKSPACE, signal, RunState(phase="cancelling")
    )


@pytest.mark.parametrize("phase", ["capturing", "queued", "running", "stalled"])
@pytest.mark.parametrize("signal", [EvalRun.pause, EvalRun.resume, EvalRun.ramp_hold])
def test_steering_a_running_run_is_allowed(signal, phase):
    assert steering_refusal(WORKSPACE, signal, RunState(phase=phase)) == ""


def test_a_pause_can_always_be_undone_and_other_signals_are_not_steering():
    paused = RunState(phase="finished", paused=True)
    assert steering_refusal(WORKSPACE, EvalRun.resume, paused) == ""
    assert steering_refusal(WORKSPACE, EvalRun.pause, paused) != ""
    assert steering_refusal(WORKSPACE, EvalRun.ramp_resume, RunState(phase="finished")) == ""
    assert steering_refusal(WORKSPACE, None, RunState(phase="finished")) == ""


# ---------------------------------------------------------------- usage errors
def _steward(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(Path(sys.executable).parent / "steward"), *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_a_usage_error_with_json_prints_the_json_error_document_too():
    done = _steward("rule", "d-2", "--json")
    assert done.returncode == 2 and "Traceback" not in done.stdout + done.stderr
    assert json.loads(done.stdout) == {
        "ok": False,
        "error": "steward rule: Missing argument 'verdict'; see `steward rule --help`.",
        "exit_code": 2,
    }
    assert "Missing argument 'verdict'" in done.stderr  # the usual message stays


def test_a_usage_error_without_json_prints_only_the_usual_message():
    done = _steward("rule", "d-2")
    assert done.returncode == 2 and done.stdout == "" and "Missing argument" in done.stderr
    assert _steward("--help").returncode == 0


def test_a_file_no_step_foresaw_is_named_with_what_to_check():
    denied = PermissionError(13, "Permission denied", "/ws/_steward.yaml")
    assert unexpected(denied) == (
        "Cannot use /ws/_steward.yaml (Permission denied); check that it exists and that this "
        "user may read and write it, then run the command again."
    )
    assert unexpected(RuntimeError("boom")) == (
        "unexpected RuntimeError: boom (set STEWARD_DEBUG=1 for details)"
    )
