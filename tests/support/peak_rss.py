"""Run a Python script and write its own peak resident memory (bytes) to a file at exit.

    python -m tests.support.peak_rss OUT script.py [args...]

Why not the parent's `wait4` rusage: a child forked from a large process (pytest, late in a
long run) carries the parent's resident size into its `ru_maxrss` across fork and exec, so
the figure measures pytest, not the child. /proc's VmHWM belongs to the address space made
at exec, so the child's own peak is read from there, just before it exits.
"""

from __future__ import annotations

import atexit
import runpy
import sys


def _vm_hwm_bytes() -> int:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmHWM in /proc/self/status")


def main() -> None:
    out, script, *args = sys.argv[1:]
    atexit.register(lambda: open(out, "w").write(str(_vm_hwm_bytes())))
    sys.argv = [script, *args]
    runpy.run_path(script, run_name="__main__")


if __name__ == "__main__":
    main()
