"""The demo's writers committing to a table in a background thread, for as long as a block runs."""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from audit import demo


@contextmanager
def demo_rounds_committing(path: Path) -> Iterator[Counter[str]]:
    """Commit `demo.round_partitioned` rounds to `path` until the block ends; yields the
    conflict errors the writers met (counted by exception name)."""
    stop, errors = threading.Event(), Counter()

    def writer() -> None:
        while not stop.is_set():
            demo.round_partitioned(path, errors)
            time.sleep(0.05)

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        yield errors
    finally:
        stop.set()
        thread.join()
