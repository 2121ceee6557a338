"""Bad input gets one clear sentence, a non-zero exit code, no traceback, nothing half-written."""

from __future__ import annotations

import json

import pytest

from harness.helpers import make_workspace, write_definition


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
    _refused(
        steward("init", str(other), "--type", "bogus"), 2, "--type must be one of evalset, flow"
    )
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
    workspace = workspace_root / "ws"
    steward.ok("init", str(workspace))
    (workspace / "evalset.py").unlink()
    (workspace / "hawk.yaml").write_text("eval_set_id: demo\ntasks: []\n")
    for command in ("launch", "tasks"):
        _refused(
            steward(command, cwd=workspace),
            2,
            "hawk.yaml is a Hawk configuration",
            "Python newer than 3.11",
        )
    named = steward("launch", "hawk.yaml", cwd=workspace)
    _refused(named, 2, "not supported here")
    assert not (workspace / "status.md").read_text().count("Run status: running")
