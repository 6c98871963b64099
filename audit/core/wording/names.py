"""The names people read for finding kinds and Delta operations.

A kind is stored and filtered as its identifier (`never_existed_snapshot`); pages show these
words first and the identifier as a small detail, so a reader can still search the docs, the
API and alert rules for it. Operations are `commitInfo.operation` as a writer spelled it:
known ones get words, any other (a log's own text) is shown as it is.
"""

from __future__ import annotations

from audit.core.vocab import HEALTH_FINDING_PREFIX, FindingKind, Operation

KIND_NAMES: dict[str, str] = {
    FindingKind.MISSED_CONFLICT: "Conflict the writer missed",
    FindingKind.CONCURRENT_METADATA_CHANGE: "Concurrent metadata change",
    FindingKind.WRITE_SERIALIZABLE_REORDER: "WriteSerializable reorder",
    FindingKind.NEVER_EXISTED_SNAPSHOT: "Never-existed snapshot",
    FindingKind.CONFLICT_HOTSPOT: "Conflict hotspot",
    FindingKind.ISOLATION_SETTING_IGNORED: "Isolation setting ignored",
    FindingKind.IDENTITY_COLUMN_CONCURRENCY: "Identity column written concurrently",
    FindingKind.MISSING_READ_VERSION: "Read version not recorded",
    FindingKind.RETRY_STORM: "Retry storm",
    FindingKind.CATALOG_MANAGED_LOG: "Catalog-managed log",
    FindingKind.HISTORY_GAP: "Gap in the history",
    FindingKind.DUPLICATE_ACTIVE_FILE: "File added twice",
    FindingKind.REMOVE_OF_UNKNOWN_FILE: "Remove of an unknown file",
    FindingKind.ROW_COUNT_CHANGED_BY_REWRITE: "Rewrite changed the row count",
    FindingKind.METRICS_MISMATCH: "Metrics disagree with the actions",
    FindingKind.PROTOCOL_VIOLATION: "Protocol violation",
    FindingKind.DV_INTEGRITY: "Deletion vector inconsistent",
    FindingKind.DUPLICATE_KEY: "Duplicate key",
    FindingKind.ORPHAN_FILES: "Orphan data files",
    FindingKind.MISSING_DATA_FILE: "Missing data file",
    FindingKind.VACUUM_BROKE_SNAPSHOT: "Vacuum broke time travel",
    FindingKind.TIMESTAMPS_OUT_OF_ORDER: "Commit times out of order",
    FindingKind.SCHEMA_CHANGE: "Schema change",
    FindingKind.PROTOCOL_CHANGE: "Protocol change",
}

# Health alert findings are named per watched metric (health_<metric>).
_METRIC_NAMES = {
    "small_files": "small files",
    "small_file_ratio": "share of small files",
    "vacuumable_bytes": "vacuumable bytes",
    "checkpoint_lag": "commits since the last checkpoint",
    "publish_lag_versions": "versions not yet published",
    "publish_lag_seconds": "publish delay",
}

OPERATION_NAMES: dict[str, str] = {
    Operation.WRITE: "Write",
    Operation.DELETE: "Delete",
    Operation.UPDATE: "Update",
    Operation.MERGE: "Merge",
    Operation.OPTIMIZE: "Optimize (compaction)",
    Operation.STREAMING_UPDATE: "Streaming update",
    Operation.CREATE_TABLE: "Create table",
    Operation.CREATE_TABLE_AS_SELECT: "Create table as select",
    Operation.REPLACE_TABLE_AS_SELECT: "Replace table as select",
    Operation.CREATE_OR_REPLACE_TABLE_AS_SELECT: "Create or replace table as select",
    Operation.COPY_INTO: "Copy into",
    Operation.RESTORE: "Restore",
    Operation.TRUNCATE: "Truncate",
    Operation.VACUUM_START: "Vacuum started",
    Operation.VACUUM_END: "Vacuum finished",
    "SET TBLPROPERTIES": "Set table properties",
    "UNSET TBLPROPERTIES": "Unset table properties",
    "ADD COLUMNS": "Add columns",
    "CHANGE COLUMN": "Change column",
    "REPLACE COLUMNS": "Replace columns",
    "UPGRADE PROTOCOL": "Upgrade protocol",
    "CLONE": "Clone",
    "FSCK": "Repair (FSCK)",
}


def kind_name(kind: str) -> str:
    """Words for a finding kind; an unknown identifier becomes its words (`a_b` -> "A b")."""
    known = KIND_NAMES.get(kind)
    if known is not None:
        return known
    if kind.startswith(HEALTH_FINDING_PREFIX):
        metric = kind.removeprefix(HEALTH_FINDING_PREFIX)
        return "Health: " + _METRIC_NAMES.get(metric, metric.replace("_", " "))
    return kind.replace("_", " ").capitalize()


def operation_name(operation: str) -> str:
    """Words for a Delta operation; one the product does not know is shown as written."""
    return OPERATION_NAMES.get(operation, operation)
