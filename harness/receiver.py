"""An HTTP receiver on 127.0.0.1 for Apprise's json:// notifications (real delivery)."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Receiver:
    def __init__(self) -> None:
        self.messages: list[dict] = []
        self.refuse = False  # answer 503, as a receiver that is down would fail delivery
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if receiver.refuse:
                    self.send_response(503)
                    self.end_headers()
                    return
                receiver.messages.append(json.loads(body or b"{}"))
                self.send_response(200)
                self.end_headers()

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    @property
    def url(self) -> str:
        return f"json://127.0.0.1:{self.server.server_address[1]}/notify"

    def __enter__(self) -> Receiver:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()

    def titles(self) -> list[str]:
        return [m.get("title", "") for m in self.messages]

    def text(self) -> str:
        return "\n".join(f"{m.get('title')}\n{m.get('message')}" for m in self.messages)
