"""Run a command and write its peak resident memory (bytes) to a file.

    python -m tests.support.peak_rss OUT command [args...]

Why not the test's own `wait4` on the command: a child forked from a large process (pytest,
late in a long run) carries the parent's resident size into its `ru_maxrss` across fork and
exec, so the figure would measure pytest (CI read 1.06 GB for an audit of 370 MB). This small
process forks the command instead, so what the command inherits is this process's few MB. The
command's own VmHWM cannot be read at its exit: `manage.py audit` leaves with `os._exit`.
Limits set on this process (RLIMIT_AS) pass to the command. The exit status is the command's.
"""

from __future__ import annotations

import os
import sys


def main() -> None:
    out, *command = sys.argv[1:]
    pid = os.fork()
    if pid == 0:
        try:
            os.execvp(command[0], command)
        finally:
            os._exit(127)
    _, status, usage = os.wait4(pid, 0)
    with open(out, "w") as fh:
        fh.write(str(usage.ru_maxrss * 1024))  # Linux: KiB
    sys.exit(os.waitstatus_to_exitcode(status))


if __name__ == "__main__":
    main()
