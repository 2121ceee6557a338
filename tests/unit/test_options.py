"""Options: _steward.yaml > STEWARD_<OPTION> > .env (workspace or a parent) > default."""

from __future__ import annotations

from pathlib import Path

import pytest

from steward.activities.workspace.options import (
    OptionsError,
    load_connection_options,
    load_options,
)
from steward.workflows.options import StewardOptions, format_duration, parse_duration


def test_defaults_are_the_seeds():
    options = StewardOptions()
    assert (
        options.tend_interval == 600
        and options.heartbeat == 3600
        and options.stuck_after == 5 * 3600
    )
    assert (
        options.samples_ramp == (50, 200)
        and options.stall_after == 2
        and options.max_workers is None
    )


@pytest.mark.parametrize(
    "text, seconds", [("30s", 30), ("10m", 600), ("1h", 3600), ("2d", 172800), ("1.5h", 5400)]
)
def test_durations_need_a_unit(text, seconds):
    assert parse_duration(text) == seconds
    assert parse_duration(format_duration(seconds)) == seconds


@pytest.mark.parametrize("bad", ["10", 10, "10 minutes", "", "m"])
def test_durations_without_unit_are_refused(bad):
    with pytest.raises(ValueError):
        parse_duration(bad)


@pytest.fixture
def environ(monkeypatch):
    """A clean STEWARD_* environment, set through the returned function."""
    import os

    for key in [k for k in os.environ if k.startswith("STEWARD_")]:
        monkeypatch.delenv(key)

    def set_env(values: dict[str, str]) -> None:
        for key, value in values.items():
            monkeypatch.setenv(key, value)

    return set_env


def test_precedence(tmp_path: Path, environ):
    parent, workspace = tmp_path, tmp_path / "ws"
    workspace.mkdir()
    (parent / ".env").write_text(
        "STEWARD_STALL_AFTER=5\nSTEWARD_MAX_WORKERS=3\nSTEWARD_STUCK_AFTER=2h\n"
    )
    (workspace / ".env").write_text("STEWARD_STALL_AFTER=6\n")
    (workspace / "_steward.yaml").write_text("tend_interval: 5m\n")
    environ({"STEWARD_TEND_INTERVAL": "7m", "STEWARD_MAX_WORKERS": "4"})
    options = load_options(workspace)
    assert options.tend_interval == 300  # the file beats the environment
    assert options.max_workers == 4  # the environment beats .env
    assert options.stall_after == 6  # the workspace's .env beats its parent's
    assert options.stuck_after == 7200  # a parent's .env beats the default
    assert options.heartbeat == 3600


def test_environment_values_parse(tmp_path: Path, environ):
    environ(
        {
            "STEWARD_SAMPLES_RAMP": "[40, 300]",
            "STEWARD_HEARTBEAT": "false",
            "STEWARD_PREAUTHORIZED": '{"ProviderTimeout*": "rerun"}',
            "STEWARD_SCANNERS": "a,b",
        }
    )
    options = load_options(tmp_path)
    assert options.samples_ramp == (40, 300) and options.heartbeat is False
    assert options.preauthorized == {"ProviderTimeout*": "rerun"} and options.scanners == ["a", "b"]
    environ({"STEWARD_SAMPLES_RAMP": "false"})
    assert load_options(tmp_path).samples_ramp is False


@pytest.mark.parametrize(
    "yaml_text, needle",
    [
        ("bogus: 1\n", "Unknown option 'bogus'"),
        ("tend_interval: 600\n", "with a unit"),
        ("max_workers: 0\n", "greater than or equal to 1"),
        ("preauthorized: {'X*': nuke}\n", "'rerun', 'exclude', 'zero' or 'score'"),
        ("samples_ramp: [0, 10]\n", "1 <= low <= high"),
        ("- a list\n", "must be a mapping"),
        ("hosts: [a, b]\n", "set shared_storage: true"),
        ("shared_storage: true\nhosts: [a, 3]\n", "'hosts'"),
        ("host_timeout: 120\n", "with a unit"),
        # A cap at or below zero is crossed at once: the run would start and pause.
        ("cost_cap: {usd: -1}\n", "expected cost_cap.usd above 0 (such as {usd: 5}), not -1"),
        ("cost_cap: {usd: 0}\n", "cost_cap.usd above 0"),
        ("cost_cap: {usd: 5, tokens: -10}\n", "cost_cap.tokens above 0"),
    ],
)
def test_refusals_name_key_file_and_what_is_allowed(tmp_path: Path, environ, yaml_text, needle):
    (tmp_path / "_steward.yaml").write_text(yaml_text)
    with pytest.raises(OptionsError) as refused:
        load_options(tmp_path)
    message = str(refused.value)
    assert needle in message and "_steward.yaml" in message and "\n" not in message


def test_relative_locations_are_the_workspaces(tmp_path: Path, environ):
    # The CLI runs in the workspace and the worker elsewhere: both must mean the same place.
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "_steward.yaml").write_text(
        "log_store: flow:../store\nlog_root: s3://bucket/logs\nsync: mirror\n"
    )
    options = load_options(workspace)
    assert options.log_store == f"flow:{workspace.resolve()}/../store"
    assert options.log_root == "s3://bucket/logs" and options.sync == str(
        workspace.resolve() / "mirror"
    )
    (workspace / "_steward.yaml").write_text("log_store: flow:auto\nsync: /abs/mirror\n")
    assert load_options(workspace).log_store == "flow:auto"
    assert load_options(workspace).sync == "/abs/mirror"


def test_hosts_are_a_list_or_any_once_storage_is_shared(tmp_path: Path, environ):
    (tmp_path / "_steward.yaml").write_text("shared_storage: true\nhosts: any\n")
    assert load_options(tmp_path).hosts == "any"
    (tmp_path / "_steward.yaml").write_text("log_root: s3://bucket/logs\nhost_timeout: 3m\n")
    environ({"STEWARD_HOSTS": "a,b"})  # a URL log root is storage every host reaches
    options = load_options(tmp_path)
    assert options.hosts == ["a", "b"] and options.host_timeout == 180
    assert StewardOptions().hosts is None and StewardOptions().host_timeout == 120


@pytest.mark.parametrize(
    "yaml_text",
    [
        "tend_interval: [\ntemporal_port: 7999\n",  # not YAML: the file gives nothing
        "stall_after: often\ntemporal_port: 7999\nbogus: 1\n",  # bad or unknown: not read
    ],
)
def test_connection_options_are_read_whatever_else_is_wrong(tmp_path: Path, environ, yaml_text):
    # What `cancel` finds the run with while the other options cannot be read.
    (tmp_path / "_steward.yaml").write_text(yaml_text)
    (tmp_path / ".env").write_text("STEWARD_TEMPORAL_NAMESPACE=evals\nSTEWARD_HEARTBEAT=soon\n")
    environ({"STEWARD_STALL_AFTER": "-1"})
    with pytest.raises(OptionsError):
        load_options(tmp_path)
    options = load_connection_options(tmp_path)
    from_file = 7999 if yaml_text.startswith("stall_after") else 7233
    assert (options.temporal_port, options.temporal_namespace) == (from_file, "evals")
    assert options.tend_interval == 600.0 and options.stall_after == 2  # the defaults


def test_a_bad_connection_option_still_refuses(tmp_path: Path, environ):
    (tmp_path / "_steward.yaml").write_text("temporal_port: many\n")
    with pytest.raises(OptionsError, match="'temporal_port' in .*_steward.yaml"):
        load_connection_options(tmp_path)
