"""A writer SIGKILLed after writing its data files and before committing them: the origin of
orphan files, for the orphan tests of the core and the app."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

# A writer that writes its data files where delta-rs would, says so, then waits to commit.
KILLED_WRITER = textwrap.dedent(
    """
    import sys, time, uuid
    import pyarrow as pa, pyarrow.parquet as pq
    root = sys.argv[1]
    for i in range(3):
        table = pa.table({"id": list(range(i * 1000, (i + 1) * 1000)), "amount": [7] * 1000})
        pq.write_table(table, f"{root}/day=2024-01-01/part-{i:05d}-killed-{uuid.uuid4()}-c000.snappy.parquet")
    print("written", flush=True)
    time.sleep(600)  # the commit that never comes
    """
)


def kill_a_writer(path: Path) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-c", KILLED_WRITER, str(path)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout.readline().strip() == "written"
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL
