"""Reading a Delta table's `_delta_log`: listing, commits, checkpoints and log replay.

The pieces, in the order a reader meets them (one module each):

- `listing`: `list_log` reconciles what `_delta_log` holds (commits, classic / multi-part /
  V2 checkpoints, compaction files, `_last_checkpoint`) into a `LogListing`, including the
  earliest version whose state can still be rebuilt (`first_available_version`).
- `commits`: `parse_commit` turns one commit file's bytes into a `Commit` (orjson, one line
  per action); `actions` turns each action's object into its model object.
- `reading`: `iter_commits` streams commits in version order, reading files ahead on a
  thread pool while the main thread parses (file reads release the GIL).
- `checkpoints`: `read_checkpoint` reads a complete checkpoint (parquet, JSON, sidecars).
- `replay`: `replay_log` starts from the latest usable checkpoint and applies later commits
  to produce a `TableState`. A checkpoint that cannot be read is skipped for an older one.
- `table`: `DeltaLog` / `open_log`, a table's log opened once.

All strings from the log are untrusted: malformed input raises `DeltaAuditError` with one
line naming the version and file, and any other value of an unexpected type is ignored.

This package hands on the names callers outside it use; the few private helpers that
tombstones, incremental and parallel build on are imported from their own modules.
"""

from audit.core.log.checkpoints import read_checkpoint
from audit.core.log.commits import parse_commit
from audit.core.log.layout import LOG_DIR, commit_file_name
from audit.core.log.listing import list_log
from audit.core.log.reading import iter_commit_files, iter_commits, read_commit, set_file_time
from audit.core.log.replay import apply_commit, empty_state, initial_state, replay_log
from audit.core.log.table import DeltaLog, open_log

__all__ = [
    "LOG_DIR",
    "DeltaLog",
    "apply_commit",
    "commit_file_name",
    "empty_state",
    "initial_state",
    "iter_commit_files",
    "iter_commits",
    "list_log",
    "open_log",
    "parse_commit",
    "read_checkpoint",
    "read_commit",
    "replay_log",
    "set_file_time",
]
