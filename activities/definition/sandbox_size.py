"""Size a task's sandbox (what one sample starts) from its config, at capture time.

Capacity admission needs a run's footprint before anything spawns, so the size comes from the
files a sandbox would be built from, never from a running one:

- Docker (and Docker-compatible providers): the compose file, one sandbox per service, each
  sized by `deploy.resources.reservations`, else `deploy.resources.limits`, else the
  `cpus` / `mem_reservation` / `mem_limit` shortcuts. With no config, the task's directory is
  searched the way Inspect's docker sandbox does (a compose file, else a `Dockerfile`).
- Kubernetes (`k8s`): the Helm values file, one sandbox per entry of `services`, each sized by
  `resources.requests`, else `resources.limits`. With no config, `values.yaml` /
  `helm-values.yaml` in the task's directory.

Undeclared requests take a default; each sandbox is clamped to a ceiling. A file that cannot be
read never raises: the size falls back to the default and `source` says why.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import yaml

from steward.workflows.policy.capacity import SandboxSize

GI = 1024**3
DEFAULT_CPU = 0.5  # cores per sandbox when nothing is declared
DEFAULT_MEMORY_GI = 1.0  # GiB per sandbox when nothing is declared (Docker)
# inspect_k8s_sandbox's agent-env chart gives a service without `resources` 500m / 2Gi.
K8S_DEFAULT_MEMORY_GI = 2.0
DEFAULT_CEILING = SandboxSize(cpu=4.0, memory_gi=16.0)  # per sandbox

DOCKER_TYPES = ("docker", "compose")
K8S_TYPES = ("k8s", "kubernetes")
# The names Inspect's docker sandbox looks for (inspect_ai.util._sandbox.compose), in order.
COMPOSE_FILES = ("compose.yaml", "compose.yml", "docker-compose.yaml", "docker-compose.yml")
DOCKERFILE = "Dockerfile"
# The names inspect_k8s_sandbox looks for (K8sSandboxEnvironment.config_files), in order.
HELM_VALUES_FILES = ("values.yaml", "helm-values.yaml")

_COMPOSE_NAME = re.compile(r"(^|[-.])compose\.ya?ml$", re.IGNORECASE)
# Docker's byte strings (go-units RAMInBytes): binary multiples, optional "i" and "b".
_DOCKER_BYTES = re.compile(r"^\s*(\d+(?:\.\d+)?|\.\d+)\s*([kmgtp])?i?b?\s*$", re.IGNORECASE)
_DOCKER_MULTIPLIER = {None: 1, "k": 1024, "m": 1024**2, "g": 1024**3, "t": 1024**4, "p": 1024**5}
# Kubernetes quantities: a number, an optional exponent, an optional suffix.
_K8S_QUANTITY = re.compile(
    r"^\s*([+-]?(?:\d+(?:\.\d*)?|\.\d+))(?:[eE]([+-]?\d+))?(Ki|Mi|Gi|Ti|Pi|Ei|m|k|M|G|T|P|E)?\s*$"
)
_K8S_MULTIPLIER = {
    None: 1,
    "m": 1e-3,
    "k": 1e3,
    "M": 1e6,
    "G": 1e9,
    "T": 1e12,
    "P": 1e15,
    "E": 1e18,
    "Ki": 1024,
    "Mi": 1024**2,
    "Gi": 1024**3,
    "Ti": 1024**4,
    "Pi": 1024**5,
    "Ei": 1024**6,
}


class _Unsized(Exception):
    """The config cannot be sized; the message (short) says why."""


# ---------------------------------------------------------------- quantities
def parse_docker_bytes(value: Any) -> float | None:
    """A Docker memory value ("512m", "2g", "1.5G", "1024k", 1073741824) in bytes, or None."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | float):
        return float(value) if math.isfinite(value) and value > 0 else None
    match = _DOCKER_BYTES.match(str(value))
    if not match:
        return None
    unit = match.group(2).lower() if match.group(2) else None
    number = float(match.group(1)) * _DOCKER_MULTIPLIER[unit]
    return number if number > 0 else None


def parse_k8s_quantity(value: Any) -> float | None:
    """A Kubernetes quantity ("500m", "2Gi", "1G", "1e3", 2) as a float, or None."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | float):
        return float(value) if math.isfinite(value) and value > 0 else None
    match = _K8S_QUANTITY.match(str(value))
    if not match:
        return None
    number = float(match.group(1)) * 10 ** int(match.group(2) or 0)
    number *= _K8S_MULTIPLIER[match.group(3)]
    return number if math.isfinite(number) and number > 0 else None


def parse_cpus(value: Any) -> float | None:
    """A Docker cpus value (1, "0.5") in cores, or None (0 means "no limit" to Docker)."""
    if isinstance(value, bool) or value is None:
        return None
    try:
        cores = float(str(value).strip())
    except ValueError:
        return None
    return cores if math.isfinite(cores) and cores > 0 else None


def _first(*values: float | None) -> float | None:
    return next((v for v in values if v is not None), None)


def _get(mapping: Any, *keys: str) -> Any:
    for key in keys:
        if not isinstance(mapping, dict):
            return None
        mapping = mapping.get(key)
    return mapping


# ---------------------------------------------------------------- per service
def _compose_service(service: Any) -> tuple[float | None, float | None, int]:
    """(cores, GiB, containers) a compose service declares; None where it declares nothing."""
    if not isinstance(service, dict):
        return None, None, 1
    resources = _get(service, "deploy", "resources")
    cpu = _first(
        parse_cpus(_get(resources, "reservations", "cpus")),
        parse_cpus(_get(resources, "limits", "cpus")),
        parse_cpus(service.get("cpus")),
    )
    memory = _first(
        parse_docker_bytes(_get(resources, "reservations", "memory")),
        parse_docker_bytes(_get(resources, "limits", "memory")),
        parse_docker_bytes(service.get("mem_reservation")),
        parse_docker_bytes(service.get("mem_limit")),
    )
    replicas = _get(service, "deploy", "replicas")
    containers = replicas if isinstance(replicas, int) and not isinstance(replicas, bool) else 1
    if service.get("profiles"):  # started only when its profile is enabled; Inspect enables none
        containers = 0
    return cpu, (memory / GI if memory is not None else None), max(0, containers)


def _helm_service(service: Any) -> tuple[float | None, float | None, int]:
    """(cores, GiB, pods) a Helm values service requests; None where it requests nothing."""
    resources = _get(service, "resources")
    cpu = _first(
        parse_k8s_quantity(_get(resources, "requests", "cpu")),
        parse_k8s_quantity(_get(resources, "limits", "cpu")),
    )
    memory = _first(
        parse_k8s_quantity(_get(resources, "requests", "memory")),
        parse_k8s_quantity(_get(resources, "limits", "memory")),
    )
    return cpu, (memory / GI if memory is not None else None), 1


# ---------------------------------------------------------------- sizing
def _total(
    services: list[tuple[float | None, float | None, int]],
    default_memory_gi: float,
    ceiling: SandboxSize,
    source: str,
) -> SandboxSize:
    count, cpu_sum, memory_sum, clamped = 0, 0.0, 0.0, False
    for cpu, memory, containers in services:
        if containers <= 0:
            continue
        cpu = DEFAULT_CPU if cpu is None else cpu
        memory = default_memory_gi if memory is None else memory
        if cpu > ceiling.cpu or memory > ceiling.memory_gi:
            clamped = True
            cpu, memory = min(cpu, ceiling.cpu), min(memory, ceiling.memory_gi)
        count += containers
        cpu_sum += containers * cpu
        memory_sum += containers * memory
    if count == 0:
        raise _Unsized(f"no services in {source}")
    return SandboxSize(
        sandboxes=count,
        cpu=round(cpu_sum, 6),
        memory_gi=round(memory_sum, 6),
        clamped=clamped,
        source=source,
    )


def _default(ceiling: SandboxSize, memory_gi: float, reason: str | None = None) -> SandboxSize:
    return SandboxSize(
        sandboxes=1,
        cpu=min(DEFAULT_CPU, ceiling.cpu),
        memory_gi=min(memory_gi, ceiling.memory_gi),
        source=f"default ({reason})" if reason else "default",
    )


def _load(path: Path) -> dict:
    try:
        document = yaml.safe_load(path.read_text())
    except FileNotFoundError as err:
        raise _Unsized(f"{path} not found") from err
    except (OSError, UnicodeDecodeError) as err:
        raise _Unsized(f"{path} unreadable: {type(err).__name__}") from err
    except yaml.YAMLError as err:
        raise _Unsized(f"{path} is not valid YAML") from err
    if not isinstance(document, dict):
        raise _Unsized(f"{path} is not a YAML mapping")
    return document


def _compose_size(document: dict, ceiling: SandboxSize, source: str) -> SandboxSize:
    services = document.get("services")
    if not isinstance(services, dict) or not services:
        raise _Unsized(f"no services in {source}")
    return _total(
        [_compose_service(s) for s in services.values()], DEFAULT_MEMORY_GI, ceiling, source
    )


def _helm_size(document: dict, ceiling: SandboxSize, source: str) -> SandboxSize:
    services = document.get("services")
    if not isinstance(services, dict) or not services:  # the chart's single `default` service
        services = {"default": {}}
    return _total(
        [_helm_service(s) for s in services.values()], K8S_DEFAULT_MEMORY_GI, ceiling, source
    )


def _is_dockerfile(name: str) -> bool:
    path = Path(name)
    return path.stem == DOCKERFILE or path.suffix == f".{DOCKERFILE}"


def _discover(task_dir: str | None, names: tuple[str, ...]) -> Path | None:
    if not task_dir:
        return None
    for name in names:
        candidate = Path(task_dir) / name
        if candidate.is_file():
            return candidate
    return None


def sandbox_size(
    sandbox_type: str | None,
    config: str | dict | None,
    task_dir: str | None,
    ceiling: SandboxSize | None = None,
) -> SandboxSize | None:
    """What one sample of a task with this sandbox starts; None when there is no sandbox.

    `config` is the sandbox's config file (relative to `task_dir` unless absolute), an inline
    compose config as a mapping (a dumped ComposeConfig), or None (then the task's directory is
    searched as the provider would). `ceiling` bounds each sandbox's cpu and memory_gi
    (default 4 cores, 16 GiB). Never raises: anything unreadable gives the default size.
    """
    if not sandbox_type:
        return None
    ceiling = ceiling or DEFAULT_CEILING
    kind = sandbox_type.lower()
    default_memory = K8S_DEFAULT_MEMORY_GI if kind in K8S_TYPES else DEFAULT_MEMORY_GI
    try:
        return _size(kind, config, task_dir, ceiling)
    except _Unsized as err:
        return _default(ceiling, default_memory, str(err))
    except Exception as err:  # a malformed file must never break capture
        return _default(ceiling, default_memory, f"{type(err).__name__} while sizing")


def _size(
    kind: str, config: str | dict | None, task_dir: str | None, ceiling: SandboxSize
) -> SandboxSize:
    helm = kind in K8S_TYPES
    default_memory = K8S_DEFAULT_MEMORY_GI if helm else DEFAULT_MEMORY_GI
    if isinstance(config, dict):  # a dumped ComposeConfig
        return _compose_size(config, ceiling, "inline compose config")
    if config is None or not str(config).strip():
        if helm:
            found = _discover(task_dir, HELM_VALUES_FILES)
        elif kind in DOCKER_TYPES:
            found = _discover(task_dir, (*COMPOSE_FILES, DOCKERFILE))
        else:
            found = None
        if found is None:
            return _default(ceiling, default_memory)
        path = found
    else:
        path = Path(str(config)).expanduser()
        if task_dir and not path.is_absolute():
            path = Path(task_dir) / path
    if _is_dockerfile(path.name):
        return _default(ceiling, default_memory)  # one service, nothing declared
    document = _load(path)
    source = str(path)
    if helm and not _COMPOSE_NAME.search(path.name):  # k8s also takes a compose file
        return _helm_size(document, ceiling, source)
    return _compose_size(document, ceiling, source)
