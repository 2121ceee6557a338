"""A small fake Docker Engine API on a Unix socket, enough for the real `docker` client's
`info()`: /version (API negotiation) and /v*/info with chosen default-address-pools."""

from __future__ import annotations

import json
import re
import socketserver
import threading
from http.server import BaseHTTPRequestHandler
from pathlib import Path


class _Server(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True
    pools: list[dict] | None = None


class _Handler(BaseHTTPRequestHandler):
    def address_string(self) -> str:  # a Unix socket has no client address
        return "fake-docker"

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
        path = re.sub(r"^/v[0-9.]+", "", self.path.split("?")[0])
        if path == "/version":
            self._send({"ApiVersion": "1.43", "Version": "24.0.0", "MinAPIVersion": "1.12"})
        elif path == "/info":
            info = {"ID": "fake", "Name": "fake-docker", "NCPU": 2}
            if self.server.pools is not None:
                info["DefaultAddressPools"] = self.server.pools
            self._send(info)
        else:
            self._send({"message": f"page not found: {self.path}"}, status=404)


class FakeDocker:
    def __init__(self, socket_path: Path, pools: list[dict] | None = None) -> None:
        self.server = _Server(str(socket_path), _Handler)
        self.server.pools = pools
        self.url = f"unix://{socket_path}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
