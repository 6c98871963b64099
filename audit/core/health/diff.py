"""What changed between two versions of a table, from the log alone.

Files added and removed are the difference of the two live-file sets (so a file added and
removed in between counts for neither); rows come from the files' `numRecords` statistics.
"""

from __future__ import annotations

from typing import Any

from audit.core.errors import DeltaAuditError
from audit.core.health.changes import (
    clustering_change,
    metadata_changes,
    protocol_change,
    protocol_dict,
)
from audit.core.health.file_totals import deleted_rows, num_records
from audit.core.history.commit_summary import summarize_commit
from audit.core.log import DeltaLog, apply_commit
from audit.core.model import AddFile, TableState, partition_key

MAX_COMMITS_LISTED = 500


def diff_versions(log: DeltaLog, version_from: int, version_to: int) -> dict[str, Any]:
    """Diff of `version_from` -> `version_to` (from < to): files, rows, schema, properties."""
    if version_from >= version_to:
        raise DeltaAuditError(f"'from' ({version_from}) must be lower than 'to' ({version_to})")
    state = log.snapshot(version_from)
    before_files = dict(state.files)
    before_meta, before_proto = state.metadata, state.protocol
    before_clustering = list(state.clustering_columns)
    commits: list[dict[str, Any]] = []
    count = 0
    for commit in log.iter_commits(version_from + 1, version_to):
        apply_commit(state, commit)
        count += 1
        if len(commits) < MAX_COMMITS_LISTED:
            s = summarize_commit(commit, state.properties)
            commits.append(
                {
                    "version": s.version,
                    "timestamp": s.timestamp,
                    "operation": s.operation,
                    "files_added": s.files_added,
                    "files_removed": s.files_removed,
                }
            )
    state.version = version_to
    return diff_states(
        before_files, before_meta, before_proto, before_clustering, state, commits, count
    ) | {"from": version_from, "to": version_to}


def _side(files: list[AddFile]) -> dict[str, Any]:
    rows, _ = num_records(files)
    return {
        "count": len(files),
        "bytes": sum(f.size or 0 for f in files),
        "rows": rows,
        "partitions": [
            dict(k)
            for k in sorted({partition_key(f.partition_values) for f in files}, key=_key_order)
        ][:100],
    }


def _key_order(key: tuple[tuple[str, str | None], ...]) -> tuple[tuple[str, bool, str], ...]:
    # A null partition value (None) sorts first; None and text do not compare by themselves.
    return tuple((column, value is not None, value or "") for column, value in key)


def diff_states(
    before_files: dict[str, AddFile],
    before_meta: Any,
    before_proto: Any,
    before_clustering: list[str],
    after: TableState,
    commits: list[dict[str, Any]],
    commit_count: int,
) -> dict[str, Any]:
    added = [
        f for p, f in after.files.items() if before_files.get(p) is not f and p not in before_files
    ]
    removed = [f for p, f in before_files.items() if p not in after.files]
    # A file whose deletion vector changed is the same path with a new add: its rows changed.
    redv = [f for p, f in after.files.items() if p in before_files and before_files[p] is not f]
    changes: list[dict[str, Any]] = []
    if after.metadata is not None and before_meta is not after.metadata:
        changes.extend(metadata_changes(after.version, None, before_meta, after.metadata))
    if after.protocol is not None and protocol_dict(before_proto) != protocol_dict(after.protocol):
        change = protocol_change(after.version, None, before_proto, after.protocol)
        if change:
            changes.append(change)
    clustering = clustering_change(
        after.version, None, before_clustering, list(after.clustering_columns)
    )
    if clustering:
        changes.append(clustering)
    added_side, removed_side = _side(added), _side(removed)
    dv_rows = sum(deleted_rows(f) - deleted_rows(before_files[f.path]) for f in redv)
    return {
        "files_added": added_side,
        "files_removed": removed_side,
        "rows_added": added_side["rows"],
        "rows_removed": (
            None if removed_side["rows"] is None else removed_side["rows"] + max(dv_rows, 0)
        ),
        "files_with_new_deletion_vectors": len(redv),
        "changes": [
            {k: v for k, v in c.items() if k not in ("version", "timestamp")} for c in changes
        ],
        "commits": commits,
        "commit_count": commit_count,
    }
