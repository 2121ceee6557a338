"""The Kubernetes capacity probe: what a namespace's ResourceQuotas leave free.

Plain functions (the activity wrapper lives elsewhere). A reading is taken through the
official `kubernetes` client with a private `Configuration`, so probing one cluster never
changes the process-wide default another probe or library relies on. A probe never raises:
whatever fails becomes the reading's `problem`, and the ledger keeps its last bound.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from steward.workflows.policy.capacity import ProbeReading

KEYS = ("pods", "requests.cpu", "requests.memory")
# A quota's bare `cpu`/`memory` are the same bound as `requests.cpu`/`requests.memory`.
ALIASES = {"cpu": "requests.cpu", "memory": "requests.memory"}
SERVICE_ACCOUNT_NAMESPACE = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")


def parse_quantity(text: str | int | float) -> float:
    """A Kubernetes quantity ("500m", "8Gi", "1e3", ...) as a float (cores, bytes, counts)."""
    from kubernetes.utils import parse_quantity as parse

    return float(parse(text))


def kubernetes_reading(
    namespace: str | None = None,
    kubeconfig: str | None = None,
    context: str | None = None,
    timeout: float = 5.0,
) -> ProbeReading:
    """The tightest room the namespace's ResourceQuotas leave on pods, CPU and memory requests.

    No quota means the namespace is unbounded (`limits={}`); failures give `problem`."""
    from kubernetes.client import ApiClient, CoreV1Api
    from kubernetes.client.exceptions import ApiException

    where = f"namespace {namespace}" if namespace else "the current context's namespace"
    api_client = None
    try:
        configuration, namespace = _configure(namespace, kubeconfig, context)
        where = f"namespace {namespace}"
        api_client = ApiClient(configuration)
        quotas = (
            CoreV1Api(api_client)
            .list_namespaced_resource_quota(namespace, _request_timeout=timeout)
            .items
        )
        return _tightest(quotas, namespace)  # inside: a malformed quantity is a problem too
    except ApiException as error:
        return _problem(
            f"the Kubernetes API refused to list ResourceQuotas in {where} "
            f"({error.status} {error.reason}{_status_message(error)})"
        )
    except Exception as error:  # a probe never raises: config, network, TLS, anything
        return _problem(f"could not list ResourceQuotas in {where}: {_short(error)}")
    finally:
        if api_client is not None:
            api_client.close()


def quota_event(reading: ProbeReading, wanted: dict[str, float]) -> dict | None:
    """Why a run must wait (the first key, in sorted order, whose wish exceeds the free room),
    as a structured event; None when it fits. Queued runs wait here instead of starting pods
    that the quota admission controller would reject over and over."""
    for key in sorted(wanted):
        hard = reading.limits.get(key)
        if hard is None or wanted[key] <= 0:
            continue
        free = max(0.0, hard - reading.used.get(key, 0.0))
        if wanted[key] > free:
            return {
                "event": "quota exceeded",
                "namespace": _namespace_of(reading),
                "key": key,
                "wanted": wanted[key],
                "free": free,
                "hard": hard,
            }
    return None


# ---------------------------------------------------------------- internals
def _configure(namespace: str | None, kubeconfig: str | None, context: str | None):
    """A private client Configuration and the namespace to probe (argument, else the
    context's, else the pod's service account's when in a cluster, else "default")."""
    from kubernetes.client import Configuration
    from kubernetes.config import ConfigException, kube_config, load_incluster_config

    configuration = Configuration()
    # KUBECONFIG is read now, not at import (the client's own default is frozen at import).
    path = kubeconfig or os.environ.get("KUBECONFIG") or os.path.expanduser("~/.kube/config")
    if kubeconfig or any(Path(p).exists() for p in path.split(os.pathsep) if p):
        kube_config.load_kube_config(
            config_file=path,
            context=context,
            client_configuration=configuration,
            persist_config=False,  # never write refreshed tokens back into the user's file
        )
        if namespace is None:
            contexts, active = kube_config.list_kube_config_contexts(path)
            chosen = (
                next((c for c in contexts if c["name"] == context), active) if context else active
            )
            namespace = ((chosen or {}).get("context") or {}).get("namespace")
    else:
        try:
            load_incluster_config(client_configuration=configuration)
        except ConfigException as error:
            raise ConfigException(
                f"no kubeconfig at {path} and not inside a cluster ({error})"
            ) from error
        if namespace is None and SERVICE_ACCOUNT_NAMESPACE.exists():
            namespace = SERVICE_ACCOUNT_NAMESPACE.read_text().strip()
    return configuration, namespace or "default"


def _tightest(quotas: list, namespace: str) -> ProbeReading:
    """Per key, the quota with the least free room bounds it (every quota must admit a pod)."""
    limits: dict[str, float | None] = {}
    used: dict[str, float] = {}
    bounding: dict[str, str] = {}  # key -> the quota that bounds it
    for quota in quotas:
        status = quota.status
        # A quota the controller has not reconciled yet has no status: its spec still binds.
        hard = (status and status.hard) or (quota.spec and quota.spec.hard) or {}
        in_use = (status and status.used) or {}
        for raw, value in hard.items():
            key = ALIASES.get(raw, raw)
            if key not in KEYS:
                continue
            limit = parse_quantity(value)
            taken = parse_quantity(in_use.get(raw, "0"))
            if key not in limits or limit - taken < limits[key] - used[key]:
                limits[key], used[key] = limit, taken
                bounding[key] = quota.metadata.name
    if not quotas:
        source = f"no ResourceQuota in namespace {namespace}"
    elif not bounding:
        names = ", ".join(q.metadata.name for q in quotas)
        source = (
            f"ResourceQuota {names} in namespace {namespace} (bounds none of {', '.join(KEYS)})"
        )
    else:
        names = sorted(set(bounding.values()))
        noun = "ResourceQuota" if len(names) == 1 else "ResourceQuotas"
        source = f"{noun} {', '.join(names)} in namespace {namespace}"
    return ProbeReading(backend="kubernetes", limits=limits, used=used, source=source)


def _problem(text: str) -> ProbeReading:
    """One sentence: parser errors span lines and many messages end in their own period."""
    text = " ".join(text.split()).rstrip(".")
    return ProbeReading(backend="kubernetes", problem=text[0].upper() + text[1:] + ".")


def _status_message(error) -> str:
    """The API server's own explanation, from the Status object in the error body."""
    try:
        message = json.loads(error.body or "{}").get("message")
    except (ValueError, AttributeError):
        message = None
    return f": {message}" if message else ""


def _short(error: Exception) -> str:
    """One line on what failed; urllib3 buries the cause under retries and object reprs."""
    reason = getattr(error, "reason", None)  # MaxRetryError wraps the real failure
    if reason is not None and not isinstance(reason, str):
        error = reason
    text = str(error).split(": ", 1)[-1] if " object at 0x" in str(error) else str(error)
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def _namespace_of(reading: ProbeReading) -> str | None:
    """The namespace a reading was taken in (its source names it)."""
    match = re.search(r"in namespace (\S+)", reading.source)
    return match.group(1) if match else None
