"""The Docker capacity probe and sandbox reaper, through the real `docker` client against a fake
Engine API on a Unix socket."""

from __future__ import annotations

import os

import pytest

from harness.fake_docker import FakeContainer
from steward.activities.capacity.probe_docker import docker_reading, reap_sandboxes


def sandbox(name: str, project: str, state: str = "running", where: str = "/tasks/swe"):
    """A container as `docker compose` labels it for one of Inspect's sample projects."""
    return FakeContainer(
        name=name,
        state=state,
        labels={
            "com.docker.compose.project": project,
            "com.docker.compose.service": "default",
            "com.docker.compose.project.working_dir": where,
            "com.docker.compose.project.config_files": f"{where}/compose.yaml",
        },
    )


DEFAULT = "2 x 3 CPUs (Inspect's default)"  # on a host with 3 CPUs


@pytest.mark.parametrize(
    ("setting", "env", "limit", "source"),
    [
        (4, {"SANDBOX_MAX_CONCURRENT": "3"}, 4, "max_concurrent_sandboxes=4"),
        (0, {"SANDBOX_MAX_CONCURRENT": "3"}, None, "max_concurrent_sandboxes=0"),
        (None, {"SANDBOX_MAX_CONCURRENT": "3"}, 3, "SANDBOX_MAX_CONCURRENT=3"),
        (None, {"SANDBOX_MAX_CONCURRENT": "0"}, None, "SANDBOX_MAX_CONCURRENT=0"),
        (None, {"SANDBOX_MAX_CONCURRENT": "many"}, 6, DEFAULT),
        (None, {"SANDBOX_MAX_CONCURRENT": "-1"}, 6, DEFAULT),
        (None, {"SANDBOX_MAX_CONCURRENT": " "}, 6, DEFAULT),
        (None, {}, 6, DEFAULT),
    ],
)
def test_the_bound_and_where_it_came_from(daemon, setting, env, limit, source):
    reading = docker_reading(setting, daemon.url, environ=env, cpus=3)
    assert reading.backend == "docker" and reading.problem is None
    assert reading.limits == {"sandboxes": limit} and reading.source == source


def test_counts_only_running_inspect_sandboxes(daemon):
    daemon.containers = [
        sandbox("inspect-swe-ia1b2c3-default-1", "inspect-swe-ia1b2c3"),
        sandbox("inspect-swe-ia1b2c3-db-1", "inspect-swe-ia1b2c3"),
        sandbox("inspect-swe-id4e5f6-default-1", "inspect-swe-id4e5f6"),
        sandbox("inspect-swe-i778899-default-1", "inspect-swe-i778899", state="exited"),
        sandbox("web-1", "myapp"),  # someone's own compose project
        sandbox("inspector-1", "inspector"),  # a prefix alone is not Inspect's name
        FakeContainer(name="loose", labels={}),  # not compose at all
    ]
    reading = docker_reading(None, daemon.url, environ={})
    assert reading.used == {"sandboxes": 3} and reading.problem is None


def test_a_changed_bound_and_changed_containers_show_in_the_next_reading(daemon):
    daemon.containers = [sandbox("inspect-a-i000001-default-1", "inspect-a-i000001")]
    first = docker_reading(None, daemon.url, environ={"SANDBOX_MAX_CONCURRENT": "5"})
    assert (first.limits, first.used, first.source) == (
        {"sandboxes": 5},
        {"sandboxes": 1},
        "SANDBOX_MAX_CONCURRENT=5",
    )

    daemon.containers.append(sandbox("inspect-b-i000002-default-1", "inspect-b-i000002"))
    daemon.containers.append(sandbox("inspect-c-i000003-default-1", "inspect-c-i000003"))
    second = docker_reading(None, daemon.url, environ={"SANDBOX_MAX_CONCURRENT": "8"})
    assert (second.limits, second.used) == ({"sandboxes": 8}, {"sandboxes": 3})

    daemon.containers[0].state = "exited"
    third = docker_reading(6, daemon.url, environ={"SANDBOX_MAX_CONCURRENT": "8"})
    assert (third.limits, third.used, third.source) == (
        {"sandboxes": 6},
        {"sandboxes": 2},
        "max_concurrent_sandboxes=6",
    )


def test_no_engine_is_a_problem_not_an_exception(tmp_path):
    url = f"unix://{tmp_path / 'nothing.sock'}"
    reading = docker_reading(3, url, environ={}, timeout=1)
    assert reading.limits == {"sandboxes": 3} and reading.source == "max_concurrent_sandboxes=3"
    assert reading.used == {}
    assert reading.problem.startswith(f"no Docker engine answered at {url}: ")
    assert "\n" not in reading.problem and len(reading.problem) < 300


def test_no_engine_at_docker_host_names_it(tmp_path):
    url = f"unix://{tmp_path / 'nothing.sock'}"
    reading = docker_reading(None, environ={"DOCKER_HOST": url}, timeout=1)
    cpus = len(os.sched_getaffinity(0))  # this process's, as the worker's own
    assert reading.limits == {"sandboxes": 2 * cpus} and reading.used == {}
    assert reading.source == f"2 x {cpus} CPUs (Inspect's default)"
    assert reading.problem.startswith(f"no Docker engine answered at {url}: ")


def test_reap_removes_only_the_sandboxes_under_the_paths(daemon, tmp_path):
    mine, other = tmp_path / "ws" / "mine", tmp_path / "ws" / "mine-too-similar"
    config_only = sandbox("inspect-c-i000003-default-1", "inspect-c-i000003", where="/elsewhere")
    config_only.labels["com.docker.compose.project.config_files"] = (
        f"/elsewhere/base.yaml,{mine}/tasks/c/../c/compose.yaml"
    )
    daemon.containers = [
        sandbox("inspect-a-i000001-default-1", "inspect-a-i000001", where=f"{mine}/tasks/a"),
        sandbox("inspect-a-i000001-db-1", "inspect-a-i000001", "exited", f"{mine}/tasks/a"),
        config_only,
        sandbox("inspect-b-i000002-default-1", "inspect-b-i000002", where=str(other)),
        sandbox("inspect-d-i000004-default-1", "inspect-d-i000004", where="/tasks/d"),
        sandbox("web-1", "myapp", where=f"{mine}/tasks/a"),  # not Inspect's: left alone
    ]
    removed = reap_sandboxes([str(mine / "." / "tasks" / "..")], daemon.url)
    assert sorted(removed) == [
        "inspect-a-i000001-db-1",
        "inspect-a-i000001-default-1",
        "inspect-c-i000003-default-1",
    ]
    assert sorted(c.name for c in daemon.containers) == [
        "inspect-b-i000002-default-1",
        "inspect-d-i000004-default-1",
        "web-1",
    ]
    assert reap_sandboxes([str(mine)], daemon.url) == []


def test_reap_without_an_engine_removes_nothing(tmp_path):
    assert reap_sandboxes([str(tmp_path)], f"unix://{tmp_path / 'nothing.sock'}") == []


def test_the_fake_answers_the_high_level_client_too(daemon):
    """The fake's list, inspect and force-remove follow the Engine API the client expects."""
    import docker

    daemon.containers = [
        sandbox("inspect-a-i000001-default-1", "inspect-a-i000001"),
        sandbox("inspect-a-i000001-db-1", "inspect-a-i000001", state="exited"),
    ]
    client = docker.DockerClient(base_url=daemon.url, timeout=3)
    try:
        running = client.containers.list(filters={"label": "com.docker.compose.project"})
        assert [(c.name, c.status) for c in running] == [("inspect-a-i000001-default-1", "running")]
        assert running[0].labels["com.docker.compose.project"] == "inspect-a-i000001"
        assert len(client.containers.list(all=True)) == 2
        assert client.containers.list(filters={"status": "exited"})[0].name.endswith("db-1")
        with pytest.raises(docker.errors.APIError):
            running[0].remove()  # running, not forced: refused like the engine does
        running[0].stop()
        running[0].remove()
        assert [c.name for c in daemon.containers] == ["inspect-a-i000001-db-1"]
    finally:
        client.close()


def test_reap_finds_dockerfile_only_sandboxes_by_their_build_context(daemon, tmp_path):
    """A Dockerfile-only task's compose file lives in Inspect's data dir; its build context
    (absolute) still names the task's directory under the workspace."""
    workspace, data_dir = tmp_path / "ws", tmp_path / "inspect-data"
    data_dir.mkdir()
    generated = data_dir / "inspect-e-i000005.yaml"
    generated.write_text(
        f"services:\n  default:\n    build:\n      context: {workspace}/tasks/e\n"
        "      dockerfile: Dockerfile\n"
    )
    elsewhere = data_dir / "inspect-f-i000006.yaml"
    elsewhere.write_text("services:\n  default:\n    build: /other/tasks/f\n")
    daemon.containers = [
        sandbox("inspect-e-i000005-default-1", "inspect-e-i000005", where=str(data_dir)),
        sandbox("inspect-f-i000006-default-1", "inspect-f-i000006", where=str(data_dir)),
    ]
    daemon.containers[0].labels["com.docker.compose.project.config_files"] = str(generated)
    daemon.containers[1].labels["com.docker.compose.project.config_files"] = str(elsewhere)
    assert reap_sandboxes([str(workspace)], daemon.url) == ["inspect-e-i000005-default-1"]
