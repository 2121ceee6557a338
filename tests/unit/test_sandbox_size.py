"""Sizing a task's sandbox from its config at capture time (activities/definition/sandbox_size.py)."""

from __future__ import annotations

import pytest

from harness.sandboxes import TWO_SERVICES
from harness.sandboxes import write_dedented as _write
from steward.activities.definition.sandbox_size import (
    COMPOSE_FILES,
    DOCKERFILE,
    parse_docker_bytes,
    parse_k8s_quantity,
    sandbox_size,
)
from steward.workflows.policy.capacity import GI, SandboxSize


def test_compose_two_services_sized_by_their_reservations(tmp_path):
    compose = _write(tmp_path / "compose.yaml", TWO_SERVICES)
    size = sandbox_size("docker", str(compose), str(tmp_path))
    assert size == SandboxSize(sandboxes=2, cpu=1.75, memory_gi=2.5, source=str(compose))


def test_compose_limits_when_nothing_is_reserved(tmp_path):
    _write(
        tmp_path / "compose.yaml",
        """\
        services:
          default:
            image: x
            deploy:
              resources:
                limits: {cpus: "2", memory: 3G}
        """,
    )
    size = sandbox_size("docker", "compose.yaml", str(tmp_path))  # relative to the task dir
    assert (size.sandboxes, size.cpu, size.memory_gi) == (1, 2.0, 3.0)
    assert size.source == str(tmp_path / "compose.yaml")


def test_compose_shortcut_fields_and_defaults(tmp_path):
    _write(
        tmp_path / "compose.yaml",
        """\
        services:
          a: {image: x, cpus: 1, mem_limit: 768m}
          b: {image: x, cpus: "0.5", mem_reservation: 256m, mem_limit: 8g}
          c: {image: x}
        """,
    )
    size = sandbox_size("docker", str(tmp_path / "compose.yaml"), None)
    # a: 1 core, 0.75 GiB; b: 0.5 core, mem_reservation before mem_limit; c: the defaults
    assert size.sandboxes == 3
    assert size.cpu == pytest.approx(1 + 0.5 + 0.5)
    assert size.memory_gi == pytest.approx(0.75 + 0.25 + 1.0)
    assert not size.clamped


def test_compose_profiles_and_replicas(tmp_path):
    _write(
        tmp_path / "compose.yaml",
        """\
        services:
          default: {image: x, deploy: {replicas: 2}}
          debug: {image: x, profiles: [debug]}
        """,
    )
    size = sandbox_size("docker", str(tmp_path / "compose.yaml"), None)
    assert (size.sandboxes, size.cpu, size.memory_gi) == (2, 1.0, 2.0)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("512m", 512 * 1024**2),
        ("2g", 2 * GI),
        ("1.5G", 1.5 * GI),
        ("1024k", 1024 * 1024),
        ("1073741824", GI),
        (1073741824, GI),
        ("2gb", 2 * GI),
        ("300MiB", 300 * 1024**2),
        ("100b", 100),
        ("lots", None),
        ("${MEM:-1g}", None),
        ("0", None),
        (None, None),
    ],
)
def test_docker_byte_strings(text, expected):
    assert parse_docker_bytes(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("500m", 0.5),
        ("2", 2.0),
        (1.5, 1.5),
        ("2Gi", 2 * GI),
        ("1G", 1e9),
        ("128974848", 128974848),
        ("129M", 129e6),
        ("1e3", 1000),
        ("1Ki", 1024),
        ("abc", None),
    ],
)
def test_kubernetes_quantities(text, expected):
    result = parse_k8s_quantity(text)
    assert result is None if expected is None else result == pytest.approx(expected)


def test_dockerfile_only_is_one_default_sandbox(tmp_path):
    (tmp_path / DOCKERFILE).write_text("FROM python:3.12\n")
    assert sandbox_size("docker", None, str(tmp_path)) == SandboxSize()
    assert sandbox_size("docker", str(tmp_path / DOCKERFILE), None) == SandboxSize()


def test_discovery_prefers_a_compose_file_over_the_dockerfile(tmp_path):
    (tmp_path / DOCKERFILE).write_text("FROM python:3.12\n")
    compose = _write(tmp_path / "docker-compose.yml", TWO_SERVICES)
    size = sandbox_size("docker", None, str(tmp_path))
    assert size.sandboxes == 2 and size.source == str(compose)


def test_compose_file_names_match_inspects():
    from inspect_ai.util._sandbox.compose import COMPOSE_FILES as INSPECT_COMPOSE_FILES
    from inspect_ai.util._sandbox.compose import DOCKERFILE as INSPECT_DOCKERFILE

    assert list(COMPOSE_FILES) == INSPECT_COMPOSE_FILES and DOCKERFILE == INSPECT_DOCKERFILE


def test_missing_or_bad_file_falls_back_to_the_default_saying_why(tmp_path):
    missing = sandbox_size("docker", str(tmp_path / "compose.yaml"), None)
    assert (missing.sandboxes, missing.cpu, missing.memory_gi) == (1, 0.5, 1.0)
    assert missing.source.startswith("default") and "not found" in missing.source

    bad = _write(tmp_path / "bad-compose.yaml", "services: [unclosed\n")
    assert "not valid YAML" in sandbox_size("docker", str(bad), None).source
    empty = _write(tmp_path / "empty-compose.yaml", "services: {}\n")
    assert "no services" in sandbox_size("docker", str(empty), None).source
    odd = _write(tmp_path / "odd-compose.yaml", "services: {a: {cpus: [1], mem_limit: {}}}\n")
    assert sandbox_size("docker", str(odd), None) == SandboxSize(source=str(odd))
    assert sandbox_size("docker", str(tmp_path), None).source.startswith("default")  # a dir


def test_helm_values_sized_by_requests_then_limits(tmp_path):
    values = _write(
        tmp_path / "helm-values.yaml",
        """\
        services:
          default:
            image: python:3.12
            resources:
              requests: {cpu: 500m, memory: 2Gi}
              limits: {cpu: "2", memory: 4Gi}
          db:
            image: postgres
            resources:
              limits: {cpu: "1", memory: 1G}
        """,
    )
    size = sandbox_size("k8s", None, str(tmp_path))  # discovered, as inspect_k8s_sandbox does
    assert size.sandboxes == 2 and size.source == str(values)
    assert size.cpu == pytest.approx(1.5)
    assert size.memory_gi == pytest.approx(2 + 1e9 / GI)


def test_helm_values_without_services_or_resources_use_the_chart_default(tmp_path):
    values = _write(tmp_path / "values.yaml", "allowDomains: [pypi.org]\n")
    size = sandbox_size("k8s", str(values), None)
    assert (size.sandboxes, size.cpu, size.memory_gi) == (1, 0.5, 2.0)
    assert sandbox_size("k8s", None, None) == SandboxSize(memory_gi=2.0)


def test_each_sandbox_is_clamped_to_the_ceiling(tmp_path):
    _write(
        tmp_path / "compose.yaml",
        """\
        services:
          big: {image: x, deploy: {resources: {reservations: {cpus: "64", memory: 512g}}}}
          small: {image: x, cpus: 1, mem_limit: 1g}
        """,
    )
    size = sandbox_size("docker", "compose.yaml", str(tmp_path))
    assert size.clamped and (size.cpu, size.memory_gi) == (4 + 1, 16 + 1)
    tight = sandbox_size(
        "docker", "compose.yaml", str(tmp_path), ceiling=SandboxSize(cpu=1, memory_gi=2)
    )
    assert tight.clamped and (tight.cpu, tight.memory_gi) == (2, 3)
    roomy = sandbox_size(
        "docker", "compose.yaml", str(tmp_path), ceiling=SandboxSize(cpu=64, memory_gi=512)
    )
    assert not roomy.clamped and roomy.cpu == 65


def test_no_sandbox_is_none(tmp_path):
    assert sandbox_size(None, None, str(tmp_path)) is None
    assert sandbox_size("", None, None) is None


def test_inline_compose_config():
    size = sandbox_size("docker", {"services": {"a": {"image": "x", "cpus": "2"}}}, None)
    assert size == SandboxSize(cpu=2.0, source="inline compose config")


def test_runner_records_string_tuple_spec_and_inline_configs(tmp_path):
    """The runner's record of a resolved task's sandbox, for each way a spec can be given."""
    from types import SimpleNamespace

    from inspect_ai.util import SandboxEnvironmentSpec
    from inspect_ai.util._sandbox.compose import ComposeConfig

    from steward.activities.definition.capture import sandbox_of
    from steward.worker.definition_runner import sandbox_type

    def resolved(sandbox, *sample_sandboxes):
        task = SimpleNamespace(dataset=[SimpleNamespace(sandbox=s) for s in sample_sandboxes])
        task.__task_run_dir__ = str(tmp_path)
        return SimpleNamespace(sandbox=sandbox, task=task, task_file=None)

    here = str(tmp_path.resolve())
    assert sandbox_type(resolved(None, None)) is None
    assert sandbox_type(resolved(None, None, "docker")) == {
        "type": "docker",
        "config": None,
        "task_dir": here,
    }
    assert sandbox_type(resolved(None, ("k8s", "values.yaml")))["config"] == str(
        tmp_path.resolve() / "values.yaml"
    )
    # a sample's own config of the task's type is what its sample runs with
    spec = SandboxEnvironmentSpec("docker", "compose.yaml")
    sample = SandboxEnvironmentSpec("docker", "/abs/compose.yaml")
    assert sandbox_type(resolved(spec, None, sample))["config"] == "/abs/compose.yaml"
    inline = SandboxEnvironmentSpec(
        "docker", ComposeConfig.model_validate({"services": {"a": {"image": "x", "cpus": 2}}})
    )
    entry = sandbox_type(resolved(inline))
    assert entry["config"]["services"]["a"]["image"] == "x"
    assert sandbox_of(entry, str(tmp_path))[1].cpu == 2.0
    # the bare type older runners recorded still reads
    assert sandbox_of("docker", str(tmp_path)) == ("docker", SandboxSize())
    assert sandbox_of(None, str(tmp_path)) == (None, None)
