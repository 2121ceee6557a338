"""A small fake Kubernetes API server on 127.0.0.1, enough for the real `kubernetes` client's
`list_namespaced_resource_quota`: ResourceQuotaLists per namespace (changeable while it
runs), a 404 Status for anything else, and a mode that answers 403 like RBAC would."""

from __future__ import annotations

import json
import re
import socketserver
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import yaml

TOKEN = "fake-token"


class _Server(socketserver.ThreadingMixIn, HTTPServer):
    daemon_threads = True
    fake: FakeKubernetes


def _status(code: int, reason: str, message: str) -> dict:
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }


class _Handler(BaseHTTPRequestHandler):
    def log_message(self, *args) -> None:
        pass

    def _send(self, document: dict, status: int = 200) -> None:
        body = json.dumps(document).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        fake = self.server.fake
        fake.requests.append((self.path, self.headers.get("Authorization")))
        match = re.fullmatch(r"/api/v1/namespaces/([^/]+)/resourcequotas", self.path.split("?")[0])
        if match is None:
            self._send(
                _status(404, "NotFound", "the server could not find the requested resource"), 404
            )
            return
        namespace = match.group(1)
        if fake.forbidden:
            message = (
                f'resourcequotas is forbidden: User "system:serviceaccount:{namespace}:steward" '
                f'cannot list resource "resourcequotas" in API group "" in the namespace "{namespace}"'
            )
            self._send(_status(403, "Forbidden", message), 403)
            return
        self._send(fake.quota_list(namespace))


class FakeKubernetes:
    """Quotas are `{namespace: {name: {"hard": {...}, "used": {...}}}}`; edit them any time."""

    def __init__(self) -> None:
        self.quotas: dict[str, dict[str, dict]] = {}
        self.forbidden = False
        self.requests: list[tuple[str, str | None]] = []  # (path, Authorization header)
        self._lock = threading.Lock()
        self.server = _Server(("127.0.0.1", 0), _Handler)
        self.server.fake = self
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        # a short poll keeps shutdown() quick (it waits out one poll interval)
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self.thread.start()

    def set_quota(self, namespace: str, name: str, hard: dict, used: dict | None = None) -> None:
        with self._lock:
            self.quotas.setdefault(namespace, {})[name] = {"hard": hard, "used": used or {}}

    def clear(self, namespace: str) -> None:
        with self._lock:
            self.quotas.pop(namespace, None)

    def quota_list(self, namespace: str) -> dict:
        with self._lock:
            quotas = dict(self.quotas.get(namespace, {}))
        items = [
            {
                "metadata": {"name": name, "namespace": namespace, "uid": f"uid-{name}"},
                "spec": {"hard": dict(q["hard"])},
                "status": {"hard": dict(q["hard"]), "used": dict(q["used"])},
            }
            for name, q in sorted(quotas.items())
        ]
        return {
            "apiVersion": "v1",
            "kind": "ResourceQuotaList",
            "metadata": {"resourceVersion": "1"},
            "items": items,
        }

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def write_kubeconfig(path: Path, server: str, namespace: str | None = "default") -> Path:
    """A kubeconfig with one cluster (plain HTTP, TLS checks off), a token user, and a
    current context in `namespace` (None: the context names no namespace)."""
    context = {"cluster": "fake", "user": "steward"}
    if namespace is not None:
        context["namespace"] = namespace
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {"name": "fake", "cluster": {"server": server, "insecure-skip-tls-verify": True}}
        ],
        "users": [{"name": "steward", "user": {"token": TOKEN}}],
        "contexts": [{"name": "fake", "context": context}],
        "current-context": "fake",
    }
    path.write_text(yaml.safe_dump(config))
    return path
