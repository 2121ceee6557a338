"""Bad input gets one clear sentence, a non-zero exit code, no traceback, nothing half-written."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from harness.helpers import make_workspace, read_journal, write_definition


def _refused(result, code: int, *needles: str) -> str:
    assert result.code == code, (result.code, result.stdout, result.stderr)
    text = result.stdout + result.stderr
    assert "Traceback" not in text
    for needle in needles:
        assert needle in text, text
    return text


@pytest.mark.parametrize(
    "yaml_text, needles",
    [
        (
            "tend_intervl: 10m\n",
            ["Unknown option 'tend_intervl'", "_steward.yaml", "tend_interval"],
        ),
        ("tend_interval: 10\n", ["tend_interval", "_steward.yaml", "with a unit"]),
        ("stall_after: often\n", ["stall_after", "_steward.yaml", "integer"]),
        ("samples_ramp: [300, 40]\n", ["samples_ramp", "low <= high"]),
        ("tend_interval: [\n", ["not valid YAML", "_steward.yaml"]),
        # Crossed before anything is spent: the run would start and pause at once.
        ("cost_cap: {usd: -1}\n", ["_steward.yaml", "cost_cap.usd above 0", "no cap"]),
    ],
)
def test_bad_options_are_refused_with_one_sentence(steward, tmp_path, yaml_text, needles):
    workspace = tmp_path / "ws"
    steward.ok("init", str(workspace))
    (workspace / "_steward.yaml").write_text(yaml_text)
    for command in (["launch"], ["status"], ["tasks"]):
        result = steward(*command, cwd=workspace)
        text = _refused(result, 2, *needles)
        assert len(text.strip().splitlines()) <= 3  # one sentence (Rich may wrap it)
    assert (workspace / "journal.jsonl").read_text() == ""  # nothing was started or written


def test_bad_environment_option_names_the_variable(steward, tmp_path):
    workspace = tmp_path / "ws"
    steward.ok("init", str(workspace))
    result = steward("tasks", cwd=workspace, env={"STEWARD_STALL_AFTER": "-1"})
    _refused(result, 2, "STEWARD_STALL_AFTER", "greater than or equal to 0")
    (workspace / ".env").write_text("STEWARD_HEARTBEAT=soon\n")
    result = steward("tasks", cwd=workspace)
    _refused(result, 2, "STEWARD_HEARTBEAT", ".env")


def test_init_never_overwrites_without_force(steward, tmp_path):
    workspace = tmp_path / "ws"
    steward.ok("init", str(workspace))
    (workspace / "evalset.py").write_text("# mine\n")
    _refused(steward("init", str(workspace)), 2, "already holds a workspace", "--force")
    assert (workspace / "evalset.py").read_text() == "# mine\n"
    steward.ok("init", str(workspace), "--force")
    assert "eval_set(" in (workspace / "evalset.py").read_text()
    other = tmp_path / "other"
    _refused(steward("init", str(other), "--type", "bogus"), 2, "'bogus' is not one of", "'flow'")
    assert not other.exists()  # nothing half-written


def test_init_writes_every_option_commented_with_its_default(steward, tmp_path):
    workspace = tmp_path / "ws"
    files = steward.ok("init", str(workspace))["files"]
    for name in [
        "_steward.yaml",
        "AGENTS.md",
        "CLAUDE.md",
        "evalset.py",
        "journal.jsonl",
        "status.md",
        ".gitignore",
    ]:
        assert name in files and (workspace / name).is_file()
    text = (workspace / "_steward.yaml").read_text()
    for option, default in [
        ("log_root", "null"),
        ("log_store", "null"),
        ("sync", "null"),
        ("tend_interval", "10m"),
        ("notification", "null"),
        ("heartbeat", "1h"),
        ("samples_ramp", "[50, 200]"),
        ("max_workers", "null"),
        ("stall_after", "2"),
        ("stuck_after", "5h"),
        ("preauthorized", "null"),
        ("stuck_cancel", "null"),
        ("policies", "null"),
        ("scan_model", "null"),
        ("scanners", "null"),
    ]:
        assert f"# {option}: {default}\n" in text
    gitignore = (workspace / ".gitignore").read_text()
    assert "logs/" in gitignore and ".env" in gitignore and ".steward/" in gitignore


def test_tasks_lists_the_definition(steward, tmp_path):
    workspace = tmp_path / "ws"
    steward.ok("init", str(workspace))
    listed = steward.ok("tasks", cwd=workspace)["tasks"]
    assert [(t["name"], t["model"], t["samples"], t["epochs"]) for t in listed] == [
        ("echo_words", "steward/offline", 12, 1),
        ("echo_numbers", "steward/offline", 10, 1),
        ("echo_codes", "steward/offline", 8, 1),
    ]
    assert all(t["identifier"].startswith("evalset.py@") for t in listed)
    write_definition(workspace, {"a": 3}, epochs=2, name="other.py")
    other = steward.ok("tasks", "other.py", cwd=workspace)["tasks"]
    assert [(t["name"], t["samples"], t["epochs"]) for t in other] == [("a", 3, 2)]
    human = steward("tasks", cwd=workspace)
    assert human.code == 0 and "echo_words" in human.stdout


@pytest.mark.parametrize(
    "source, needles",
    [
        (
            "raise RuntimeError('no API key for the grader')\n",
            ["evalset.py", "RuntimeError: no API key for the grader"],
        ),
        ("x = 1\n", ["evalset.py", "without calling eval_set()"]),
    ],
)
def test_definition_that_raises_or_never_calls_eval_set(steward, tmp_path, source, needles):
    workspace = tmp_path / "ws"
    steward.ok("init", str(workspace))
    (workspace / "evalset.py").write_text(source)
    _refused(steward("tasks", cwd=workspace), 2, *needles)
    launch = steward("launch", cwd=workspace)
    _refused(launch, 2, *needles)


def test_missing_definition(steward, tmp_path):
    workspace = tmp_path / "ws"
    steward.ok("init", str(workspace))
    _refused(steward("tasks", "nope.py", cwd=workspace), 2, "nope.py", "does not exist")
    _refused(steward("launch", "nope.py", cwd=workspace), 2, "nope.py", "does not exist")


def test_outside_a_workspace(steward, tmp_path):
    for command in (["launch"], ["status"], ["tend"], ["pause"], ["cancel"], ["tasks"]):
        _refused(
            steward(*command, cwd=tmp_path), 2, "not inside a Steward workspace", "steward init"
        )


def test_status_of_a_workspace_never_launched(steward, tmp_path):
    workspace = tmp_path / "ws"
    steward.ok("init", str(workspace))
    for command in (["status"], ["tend"], ["pause"], ["resume"], ["cancel"]):
        result = steward(*command, "--json", cwd=workspace)
        _refused(result, 2, "No run has been launched", "steward launch")
        assert json.loads(result.stdout)["ok"] is False


def test_second_launch_while_live_changes_nothing(steward, workspace_root):
    """Launching again is how an edit reaches a live run; without an edit it starts no second
    run and commits nothing."""
    workspace = make_workspace(
        steward,
        workspace_root,
        {"slow": 20},
        options="samples_ramp: [1, 1]\n",
        dotenv="STEWARD_OFFLINE_DELAY=1\n",
    )
    first = steward.ok("launch", cwd=workspace)
    again = steward.ok("launch", cwd=workspace)
    assert again["workflow_id"] == first["workflow_id"] and again["amended"] is None
    assert [r["kind"] for r in again["delta"]] == ["unchanged"]
    runs = [r for r in steward.ok("runs")["runs"] if r["workflow_id"] == first["workflow_id"]]
    assert len(runs) == 1
    steward.ok("cancel", cwd=workspace)


def test_unknown_flag_is_bad_input(steward, tmp_path):
    result = steward("status", "--colour", cwd=tmp_path)
    assert result.code == 2 and "Traceback" not in result.stderr


def test_hawk_configuration_is_refused_naming_the_requirement(steward, workspace_root):
    """Where Hawk cannot be imported (before Python 3.13, or without the hawk extra) a
    hawk.yaml is refused naming what it needs; where it can (tests/e2e/test_hawk.py runs one),
    a config without tasks is still refused in one sentence."""
    import sys

    from steward.worker import hawk_config

    workspace = workspace_root / "ws"
    steward.ok("init", str(workspace))
    (workspace / "evalset.py").unlink()
    (workspace / "hawk.yaml").write_text("eval_set_id: demo\ntasks: []\n")
    if hawk_config.unavailable_reason() is None:
        _refused(steward("tasks", cwd=workspace), 2, "hawk.yaml lists no tasks")
        return
    needed = "Python 3.13 or newer" if sys.version_info < (3, 13) else "steward-evals[hawk]"
    for command in ("launch", "tasks"):
        _refused(
            steward(command, cwd=workspace),
            2,
            "hawk.yaml is a Hawk configuration, which cannot run here",
            needed,
        )
    named = steward("launch", "hawk.yaml", cwd=workspace)
    _refused(named, 2, "cannot run here", needed)
    assert not (workspace / "status.md").read_text().count("Run status: running")


def _nothing_started(steward, workspace) -> None:
    """No workflow started and nothing written: the journal `init` made is still empty."""
    assert (workspace / "journal.jsonl").read_text() == ""
    _refused(steward("status", cwd=workspace), 2, "No run has been launched")


@pytest.mark.parametrize(
    "where, text, needles",
    [
        ("ws", "STEWARD_STALL_AFTER=3\nJUSTAWORD\n", ["line 2", "JUSTAWORD without a value"]),
        ("parent", 'A=1\n\nB="never closed\n', ["line 3", "is not a NAME=value line"]),
    ],
)
def test_a_dotenv_that_does_not_parse_is_refused(steward, tmp_path, where, text, needles):
    workspace = tmp_path / "ws"
    steward.ok("init", str(workspace))
    env_file = (workspace if where == "ws" else tmp_path) / ".env"
    env_file.write_text(text)
    for command in ("launch", "tasks"):
        shown = _refused(steward(command, cwd=workspace), 2, f"{env_file} ", *needles)
        assert "never closed" not in shown and len(shown.strip().splitlines()) <= 3
    env_file.unlink()
    _nothing_started(steward, workspace)


def test_a_notification_apprise_cannot_send_to_is_refused_without_echoing_it(steward, tmp_path):
    workspace = tmp_path / "ws"
    steward.ok("init", str(workspace))
    secret = "bogus://sekrit-token@example.invalid/hook"
    with open(workspace / "_steward.yaml", "a") as handle:
        handle.write(f"notification: [json://127.0.0.1:9/ok, '{secret}']\n")
    for args in (["launch"], ["launch", "--json"], ["status"]):
        shown = _refused(
            steward(*args, cwd=workspace),
            2,
            "Option 'notification'",
            "_steward.yaml",
            "entry 2 of 2",
            "neither an Apprise URL nor an Apprise config file",
        )
        assert "sekrit" not in shown and "bogus" not in shown
    (workspace / "_steward.yaml").write_text("")
    _nothing_started(steward, workspace)


def test_eval_set_with_an_empty_task_list_is_refused(steward, tmp_path):
    workspace = tmp_path / "ws"
    steward.ok("init", str(workspace))
    (workspace / "evalset.py").write_text("from inspect_ai import eval_set\n\neval_set(tasks=[])\n")
    sentence = (
        "The definition evalset.py passes eval_set() an empty task list; give it at least one task."
    )
    for command in ("launch", "tasks"):
        shown = _refused(steward(command, cwd=workspace), 2, sentence)
        assert "RecursionError" not in shown
    _nothing_started(steward, workspace)


@pytest.mark.parametrize(
    "options, eval_set_args, needles",
    [
        ("log_root: /proc/forbidden\n", "", ["The log_root directory /proc/forbidden", "log_root"]),
        ("sync: /proc/forbidden/mirror\n", "", ["The sync directory /proc/forbidden/mirror"]),
        (
            "",
            ", log_dir='/proc/forbidden/logs'",
            ["The run's log dir /proc/forbidden/logs", "pass eval_set() another log_dir"],
        ),
    ],
)
def test_a_directory_that_cannot_be_written_is_refused_at_launch(
    steward, tmp_path, options, eval_set_args, needles
):
    # /proc takes no new directory, even from root (which chmod would not stop).
    workspace = make_workspace(
        steward, tmp_path, {"a": 2}, options=options, eval_set_args=eval_set_args
    )
    for args in (["launch"], ["launch", "--dry-run"]):
        _refused(steward(*args, cwd=workspace), 2, *needles, "cannot be created or written")
    assert not Path("/proc/forbidden").exists()
    _nothing_started(steward, workspace)


def test_a_workspace_that_cannot_be_written_is_refused_at_launch(steward, tmp_path):
    workspace = make_workspace(steward, tmp_path, {"a": 2})
    # Root ignores chmod; an immutable directory refuses even root.
    if not shutil.which("chattr") or subprocess.run(["chattr", "+i", str(workspace)]).returncode:
        pytest.skip("chattr +i is not available here")
    try:
        _refused(
            steward("launch", cwd=workspace),
            2,
            f"The workspace {workspace} cannot be written (Operation not permitted)",
        )
    finally:
        subprocess.run(["chattr", "-i", str(workspace)], check=True)
    assert not (workspace / "logs").exists()
    _nothing_started(steward, workspace)


def test_a_workspace_without_its_id_that_cannot_be_written_is_refused(steward, tmp_path):
    # A workspace made by hand (or copied without .steward/): its id is made on first use,
    # which is where an unwritable one failed with "unexpected PermissionError".
    workspace = make_workspace(steward, tmp_path, {"a": 2})
    shutil.rmtree(workspace / ".steward")
    if not shutil.which("chattr") or subprocess.run(["chattr", "+i", str(workspace)]).returncode:
        pytest.skip("chattr +i is not available here")
    try:
        for command in (["launch"], ["status"], ["cancel"]):
            text = _refused(
                steward(*command, cwd=workspace),
                2,
                f"The workspace {workspace} cannot be written (Operation not permitted: "
                f"{workspace / '.steward'}); make it writable",
            )
            assert "unexpected" not in text and "STEWARD_DEBUG" not in text
    finally:
        subprocess.run(["chattr", "-i", str(workspace)], check=True)
    assert not (workspace / ".steward").exists() and not (workspace / "logs").exists()


def test_steering_a_run_that_runs_nothing_is_refused(steward, tmp_path):
    workspace = make_workspace(steward, tmp_path, {"quick": 2})
    steward.ok("launch", cwd=workspace)
    steward.wait_phase(workspace, {"finished"})
    finished = "is finished and waits for signoff, so there is"
    for args, lacking in (
        (["pause", "--reason", "late"], "nothing to pause"),
        (["resume"], "nothing to resume"),
        (["ramp", "hold"], "no ramp to hold"),
    ):
        _refused(steward(*args, cwd=workspace), 2, finished, lacking, "steward signoff --by NAME")
        refused = steward(*args, "--json", cwd=workspace)
        assert refused.code == 2 and lacking in refused.json["error"]
    state = steward.status(workspace)["state"]
    assert state["phase"] == "finished" and not state["paused"] and not state["ramp_hold"]
    recorded = {e["event"] for e in read_journal(workspace)}
    assert not recorded & {"paused", "resumed", "ramp hold"}  # nothing reached the run
    steward.ok("signoff", "--by", "norah", cwd=workspace)
    for args in (["pause"], ["resume"], ["ramp", "hold"]):
        _refused(steward(*args, cwd=workspace), 2, "is already signed_off")


@pytest.mark.parametrize(
    "args, message",
    [
        (["rule", "d-2", "--json"], "steward rule: Missing argument 'verdict'"),
        (["--json", "rule", "d-2"], "steward: No such option: --json"),
        (["status", "--colour", "--json"], "steward status: No such option: --colour"),
    ],
)
def test_a_usage_error_with_json_answers_in_json_too(steward, tmp_path, args, message):
    result = steward(*args, cwd=tmp_path)
    _refused(result, 2)
    document = result.json
    assert document["ok"] is False and document["exit_code"] == 2
    assert document["error"].startswith(message)
    assert message.split(": ", 1)[1] in result.stderr  # Typer's usual message stays
