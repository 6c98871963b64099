"""When the one-shot command forks a second summarising process (audit.core.history.parallel.spare_core)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from audit.core.history import parallel
from audit.core.history.parallel import busy_cores, spare_core
from audit.core.history.summary import load_history


def test_it_counts_busy_cores_from_two_readings():
    # 2 cores, 100 jiffies passed over both, 150 of them busy: 1.5 cores in use.
    assert busy_cores((1000, 5000), (1150, 5100), 2) == pytest.approx(3.0)
    assert busy_cores((1000, 5000), (1075, 5100), 2) == pytest.approx(1.5)
    assert busy_cores((1000, 5000), (1000, 5000), 2) == 0.0  # no time passed


def test_it_reads_the_kernels_counters():
    before = parallel._cpu_times()
    if before is None:
        pytest.skip("no /proc/stat here")
    time.sleep(0.05)
    after = parallel._cpu_times()
    assert after is not None and after[1] > before[1] and after[0] >= before[0]


def test_it_never_forks_on_one_core(monkeypatch):
    monkeypatch.setattr(os, "cpu_count", lambda: 1)
    assert spare_core() is False


def test_it_does_not_fork_when_every_core_is_busy():
    # Real load, not a mocked counter: one spinning process per core.
    if parallel._cpu_times() is None:
        pytest.skip("no /proc/stat here")
    cores = min(os.cpu_count() or 1, 16)
    spinners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(cores)]
    try:
        time.sleep(0.3)  # let them get scheduled
        assert spare_core(sample_seconds=0.3) is False
    finally:
        for proc in spinners:
            proc.kill()
            proc.wait()


def test_it_asks_whether_to_fork_only_for_a_log_long_enough_to_split():
    # The 0.1 s CPU sample is not paid by a short log: the check is never called.
    tables = Path(__file__).resolve().parents[1] / "data" / "delta-tables" / "golden"
    short = tables / "time-travel-schema-changes-a"

    def never() -> bool:
        raise AssertionError("asked whether to fork a log too short to split")

    history = load_history(str(short), parallel=never)
    assert history.summaries == load_history(str(short)).summaries
