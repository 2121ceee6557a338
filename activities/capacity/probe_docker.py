"""Docker capacity probe and sandbox reaper: plain functions over the official `docker` client.

The probe reads the bound (max_concurrent_sandboxes, SANDBOX_MAX_CONCURRENT, else Inspect's
default of 2 x this host's CPUs) afresh on every call, so a changed bound applies to the next
reading, and counts the Inspect sandbox
containers running now. The reaper force-removes the sandboxes a workspace left behind. Neither
raises when no engine answers: the probe says so in `problem`, the reaper removes nothing.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path

from steward.workflows.policy.capacity import ProbeReading, resolve_docker_bound

# Coupling to Inspect's docker sandbox (inspect_ai/util/_sandbox/docker/util.py): every sample
# runs as a compose project named by `task_project_name`, "inspect-<task[:12]>-i<6 of a uuid>",
# and Inspect's own `inspect sandbox cleanup docker` recognises its projects by this pattern.
# Compose puts the project name on each container as this label. If Inspect renames its
# projects, this count drops to zero (the ledger then counts only its own reservations).
PROJECT_LABEL = "com.docker.compose.project"
INSPECT_PROJECT = re.compile(r"^inspect-[a-z\d\-_]*-i[a-z\d]{6,}$")
# Compose's labels for where a project came from: the directory it ran in and its -f files.
WORKING_DIR_LABEL = "com.docker.compose.project.working_dir"
CONFIG_FILES_LABEL = "com.docker.compose.project.config_files"


def available_cpus() -> int:
    """The CPUs this process may use: a worker pinned with taskset offers what it was given
    (as worker/host_presence.py reports the host)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0)) or 1
    return os.cpu_count() or 1


def docker_reading(
    setting: int | None,
    base_url: str | None = None,
    environ: Mapping[str, str] | None = None,
    timeout: float = 3.0,
    cpus: int | None = None,
) -> ProbeReading:
    """The bound and the running Inspect sandboxes on one Docker engine. Never raises.
    `cpus`: the host's (default: what this worker process may use)."""
    from docker.errors import DockerException

    env = os.environ if environ is None else environ
    bound, source = resolve_docker_bound(
        setting, env.get("SANDBOX_MAX_CONCURRENT"), available_cpus() if cpus is None else cpus
    )
    reading = ProbeReading(backend="docker", limits={"sandboxes": bound}, source=source)
    try:
        client = _client(base_url, env, timeout)
        try:
            running = _list(client, all_=False)
        finally:
            client.close()
    except (DockerException, OSError) as err:
        where = base_url or env.get("DOCKER_HOST") or "the default socket (DOCKER_HOST unset)"
        reading.problem = f"no Docker engine answered at {where}: {_short(err)}"
        return reading
    reading.used = {"sandboxes": len(running)}
    return reading


def reap_sandboxes(paths: list[str], base_url: str | None = None) -> list[str]:
    """Force-remove (kill and remove) the containers, running or not, of Inspect projects
    started from under one of `paths`; returns their names. Nothing when no engine answers."""
    from docker.errors import DockerException, NotFound

    roots = [Path(p).resolve() for p in paths]
    try:
        client = _client(base_url, os.environ, timeout=10.0)
    except (DockerException, OSError):
        return []
    removed = []
    try:
        for container in _list(client, all_=True):
            if not any(_under(place, roots) for place in _origins(container["Labels"])):
                continue
            try:
                # force=True is what `docker rm -f` does: kill if running, then remove.
                client.api.remove_container(container["Id"], force=True)
            except NotFound:  # gone meanwhile (compose down, another reaper): that is fine
                continue
            removed.append(_name(container))
    except (DockerException, OSError):
        pass  # the engine went away mid-way: report what was removed so far
    finally:
        client.close()
    return removed


def _client(base_url: str | None, env: Mapping[str, str], timeout: float):
    """A client to the engine at base_url, else where the environment (DOCKER_HOST) says.
    Raises DockerException/OSError when nobody answers (the client asks for /version)."""
    import docker

    if base_url:
        return docker.DockerClient(base_url=base_url, timeout=timeout)
    return docker.from_env(timeout=timeout, environment=dict(env))


def _list(client, all_: bool) -> list[dict]:
    # The low-level call: one request, no per-container inspect (the summaries have the labels).
    # The engine filters on the label's presence; Inspect's name pattern is checked here.
    filters: dict = {"label": PROJECT_LABEL}
    if not all_:
        filters["status"] = "running"
    summaries = client.api.containers(all=all_, filters=filters)
    return [
        c
        for c in summaries
        if INSPECT_PROJECT.match((c.get("Labels") or {}).get(PROJECT_LABEL, ""))
    ]


def _origins(labels: dict | None) -> list[str]:
    labels = labels or {}
    files = [f for f in (labels.get(CONFIG_FILES_LABEL) or "").split(",") if f.strip()]
    return [p for p in [labels.get(WORKING_DIR_LABEL), *files, *_build_contexts(files)] if p]


def _build_contexts(files: list[str]) -> list[str]:
    """Absolute build contexts named in the compose files. For a task with only a Dockerfile,
    Inspect writes the compose file into its own data dir, and only the build context (made
    absolute) still points at the task's directory."""
    import yaml

    contexts = []
    for file in files:
        try:
            document = yaml.safe_load(Path(file.strip()).read_text()) or {}
        except (OSError, yaml.YAMLError):
            continue
        for service in (document.get("services") or {}).values():
            build = (service or {}).get("build") if isinstance(service, dict) else None
            context = build.get("context") if isinstance(build, dict) else build
            if isinstance(context, str) and os.path.isabs(context):
                contexts.append(context)
    return contexts


def _under(place: str, roots: list[Path]) -> bool:
    path = Path(place.strip()).resolve()
    return any(path.is_relative_to(root) for root in roots)


def _name(container: dict) -> str:
    names = container.get("Names") or []
    return names[0].lstrip("/") if names else container["Id"][:12]


def _short(err: BaseException) -> str:
    """The root cause in a few words: the client's own message nests the whole chain."""
    while err.__cause__ or err.__context__:
        err = err.__cause__ or err.__context__
    text = err.strerror if isinstance(err, OSError) and err.strerror else str(err)
    text = " ".join(str(text).split()) or type(err).__name__
    return text[:200]
