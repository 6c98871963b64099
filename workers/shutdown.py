"""A pool process told to stop (SIGTERM) unwinds instead of dying on the spot.

Celery resets SIGTERM to its default action in prefork children, so a cold shutdown (or a
SIGTERM to the worker's process group, as scripts/run.sh sends after its grace period) killed a
tail step mid-way: its transaction was rolled back by the database, but its table lock stayed
held until it expired (AUDIT_LOCK_SECONDS), delaying the redo. Raising SystemExit instead runs
the task's `finally` (lease.release()) and rolls the open transaction back, so the next tick
redoes the step at once.
"""

from __future__ import annotations

import signal
from typing import Any

from celery.signals import worker_process_init


def _exit(signum: int, _frame: Any) -> None:
    raise SystemExit(128 + signum)


@worker_process_init.connect
def unwind_on_sigterm(**_kwargs: Any) -> None:
    signal.signal(signal.SIGTERM, _exit)
