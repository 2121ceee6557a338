"""A small fake Docker Engine API on a Unix socket, enough for the real `docker` client:
/version (API negotiation), /v*/info with chosen default-address-pools, and a mutable list of
containers that can be listed (with `all` and `filters`), inspected, stopped, killed and removed.
"""

from __future__ import annotations

import json
import re
import socketserver
import threading
import uuid
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from urllib.parse import parse_qs, urlsplit


@dataclass
class FakeContainer:
    name: str
    labels: dict[str, str] = field(default_factory=dict)
    state: str = "running"  # or "exited"
    id: str = field(default_factory=lambda: uuid.uuid4().hex + uuid.uuid4().hex)
    image: str = "python:3.12-bookworm"

    def summary(self) -> dict:
        """The shape of one entry of GET /containers/json."""
        return {
            "Id": self.id,
            "Names": [f"/{self.name}"],
            "Image": self.image,
            "ImageID": "sha256:" + "0" * 64,
            "Command": "tail -f /dev/null",
            "Created": 1700000000,
            "Labels": dict(self.labels),
            "State": self.state,
            "Status": "Up 5 minutes" if self.state == "running" else "Exited (0) 1 minute ago",
            "Ports": [],
            "Mounts": [],
        }

    def inspect(self) -> dict:
        """The shape of GET /containers/{id}/json (what non-sparse `containers.list()` reads)."""
        return {
            "Id": self.id,
            "Name": f"/{self.name}",
            "Image": "sha256:" + "0" * 64,
            "Config": {"Image": self.image, "Labels": dict(self.labels)},
            "State": {"Status": self.state, "Running": self.state == "running"},
        }


def _matches(container: FakeContainer, filters: dict, all_: bool) -> bool:
    # The engine accepts both {"label": ["k=v"]} and the older {"label": {"k=v": true}}.
    def values(key: str) -> list[str]:
        value = filters.get(key) or []
        return list(value) if isinstance(value, (list, dict)) else [value]

    # Like the engine, a status filter replaces the "running only unless all" default.
    statuses = values("status")
    if statuses and container.state not in statuses:
        return False
    if not statuses and not all_ and container.state != "running":
        return False
    for label in values("label"):  # every label filter must hold
        key, eq, value = label.partition("=")
        if key not in container.labels or (eq and container.labels[key] != value):
            return False
    return True


class _Server(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True
    pools: list[dict] | None = None
    containers: list[FakeContainer]


class _Handler(BaseHTTPRequestHandler):
    def address_string(self) -> str:  # a Unix socket has no client address
        return "fake-docker"

    def log_message(self, *args) -> None:
        pass

    def _send(self, document: dict | list | None, status: int = 200) -> None:
        body = b"" if document is None else json.dumps(document).encode()
        self.send_response(status)
        if document is not None:
            self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _request(self) -> tuple[str, dict[str, str]]:
        """The path without its /v1.xx prefix, and the query's (last) values."""
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(length)  # not used, but read so the connection stays sane
        parts = urlsplit(self.path)
        query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
        return re.sub(r"^/v[0-9.]+", "", parts.path), query

    def _find(self, ref: str) -> FakeContainer | None:
        # The engine takes a full id, a unique id prefix or a name.
        for container in self.server.containers:
            if ref in (container.id, container.name) or container.id.startswith(ref):
                return container
        self._send({"message": f"No such container: {ref}"}, status=404)
        return None

    def do_GET(self) -> None:
        path, query = self._request()
        if path == "/version":
            self._send({"ApiVersion": "1.43", "Version": "24.0.0", "MinAPIVersion": "1.12"})
        elif path == "/info":
            info = {"ID": "fake", "Name": "fake-docker", "NCPU": 2}
            if self.server.pools is not None:
                info["DefaultAddressPools"] = self.server.pools
            self._send(info)
        elif path == "/containers/json":
            filters = json.loads(query.get("filters") or "{}")
            all_ = query.get("all", "0") not in ("0", "false", "False")
            self._send([c.summary() for c in self.server.containers if _matches(c, filters, all_)])
        elif m := re.fullmatch(r"/containers/([^/]+)/json", path):
            if container := self._find(m[1]):
                self._send(container.inspect())
        else:
            self._send({"message": f"page not found: {self.path}"}, status=404)

    def do_POST(self) -> None:
        path, _ = self._request()
        if m := re.fullmatch(r"/containers/([^/]+)/(stop|kill)", path):
            if container := self._find(m[1]):
                container.state = "exited"
                self._send(None, status=204)
        else:
            self._send({"message": f"page not found: {self.path}"}, status=404)

    def do_DELETE(self) -> None:
        path, query = self._request()
        if m := re.fullmatch(r"/containers/([^/]+)", path):
            if container := self._find(m[1]):
                force = query.get("force", "0") not in ("0", "false", "False")
                if container.state == "running" and not force:
                    message = f"cannot remove container {container.name}: container is running"
                    self._send({"message": message}, status=409)
                else:
                    self.server.containers.remove(container)
                    self._send(None, status=204)
        else:
            self._send({"message": f"page not found: {self.path}"}, status=404)


class FakeDocker:
    def __init__(
        self,
        socket_path: Path,
        pools: list[dict] | None = None,
        containers: list[FakeContainer] | None = None,
    ) -> None:
        self.server = _Server(str(socket_path), _Handler)
        self.server.pools = pools
        self.server.containers = list(containers or [])
        self.url = f"unix://{socket_path}"
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self.thread.start()

    @property
    def containers(self) -> list[FakeContainer]:
        """The engine's containers, live: tests may change, append to or replace the list."""
        return self.server.containers

    @containers.setter
    def containers(self, containers: list[FakeContainer]) -> None:
        self.server.containers = list(containers)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
