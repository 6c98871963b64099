"""scripts/run.sh announces only its own server: with its port taken by another program
(here one that answers every path, /login/ and /healthz included, as a dashboard would) it
stops at once with a clear message instead of announcing someone else's server."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from tests.support.paths import ROOT


class Impostor(BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802 - http.server's name
        body = b'{"ok": true, "run": "not-yours"}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def taken_port():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Impostor)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


def test_run_sh_refuses_a_port_another_program_answers_on(tmp_path, taken_port):
    env = {
        **os.environ,
        "AUDIT_RUN_SKIP_INSTALL": "1",
        "AUDIT_PORT": str(taken_port),
        "AUDIT_VAR_DIR": str(tmp_path / "var"),
        "AUDIT_DEMO_DIR": str(tmp_path / "demo"),
        "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}",
        "CELERY_BROKER_URL": f"sqla+sqlite:///{tmp_path / 'broker.sqlite'}",
    }
    env.pop("WEB_BIND", None)
    env.pop("AUDIT_ALLOWED_ROOTS", None)
    process = subprocess.Popen(
        ["bash", "scripts/run.sh"],
        cwd=ROOT,
        env=env,
        start_new_session=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        output, _ = process.communicate(timeout=60)
    except subprocess.TimeoutExpired:  # it went on as if the server were its own
        os.killpg(process.pid, signal.SIGTERM)
        output, _ = process.communicate(timeout=30)
    text = output.decode(errors="replace")
    assert "dashboard on" not in text, text[-2000:]
    assert process.returncode == 1, text[-2000:]
    assert f"127.0.0.1:{taken_port} is already in use by another program" in text
    assert not (tmp_path / "demo").exists()  # refused before doing anything
