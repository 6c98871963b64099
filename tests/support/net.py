"""Loopback ports for the servers the tests start (receivers, moto, Azurite, Spark, run.sh)."""

from __future__ import annotations

import socket


def free_port() -> int:
    """A port free on 127.0.0.1 right now (the OS picks it; the caller binds it next)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]
