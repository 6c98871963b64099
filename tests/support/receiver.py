"""A real HTTP receiver for alert deliveries (webhooks, Slack), on a free loopback port."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import orjson

from tests.support.net import free_port


class Receiver:
    """An HTTP server on 127.0.0.1 that records POSTs and answers with scripted status codes."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, dict[str, str], bytes]] = []
        self.codes: list[int] = []  # answered in order, then `default_code`
        self.default_code = 200
        self.port = free_port()
        self.server: ThreadingHTTPServer | None = None
        self.lock = threading.Lock()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hook"

    def start(self) -> Receiver:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with receiver.lock:
                    code = receiver.codes.pop(0) if receiver.codes else receiver.default_code
                    if code < 300:
                        receiver.requests.append((self.path, dict(self.headers), body))
                self.send_response(code)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"ok")

            def log_message(self, *args) -> None:
                pass

        ThreadingHTTPServer.allow_reuse_address = True
        self.server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()
            self.server = None

    def bodies(self) -> list[dict]:
        return [orjson.loads(body) for _, _, body in self.requests]
