"""Polling for what another thread or process does."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest


def wait_for(
    condition: Callable[[], object], timeout: float, *, message: str = "", every: float = 0.2
):
    """Poll `condition` until it returns something truthy; fail with `message` on timeout."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(every)
    pytest.fail(f"timed out after {timeout}s: {message}")
