"""The product's one vocabulary: every kind, severity, level and verdict, spelled once.

Core, models (as field choices), API, dashboard, alerting and Spark import these instead of
writing the strings. They are `StrEnum`s, so a member *is* its string: it compares equal to
the text stored in the database, in JSON and in older rows, and serialises as that text.
Adding a member is the one change a new kind needs here; what a kind means lives with the
code that finds it (`conflicts/`, `anomalies/`, `integrity.py`, ...).
"""

from __future__ import annotations

from enum import StrEnum


class Severity(StrEnum):
    INFO = "info"
    WARNING = "warning"
    CRITICAL = "critical"

    @property
    def rank(self) -> int:
        return SEVERITY_ORDER.index(self)


SEVERITY_ORDER: tuple[Severity, ...] = (Severity.INFO, Severity.WARNING, Severity.CRITICAL)
# severity -> rank ({"info": 0, "warning": 1, "critical": 2}): the one table of ranks. A dict
# keyed by text, because stored rows and alert rules hold severities as strings that callers
# test with `in` (an unknown one is not a Severity).
SEVERITY_RANK: dict[str, int] = {severity.value: severity.rank for severity in SEVERITY_ORDER}


class FindingKind(StrEnum):
    """What an audit finding says. Stored as text in Finding.kind; the API filters by it."""

    # Commit-time conflicts (conflicts/): what Serializable would have rejected.
    MISSED_CONFLICT = "missed_conflict"
    CONCURRENT_METADATA_CHANGE = "concurrent_metadata_change"
    # Anomalies (anomalies/): history orders that break serializability.
    WRITE_SERIALIZABLE_REORDER = "write_serializable_reorder"
    NEVER_EXISTED_SNAPSHOT = "never_existed_snapshot"
    CONFLICT_HOTSPOT = "conflict_hotspot"
    # Table-level facts.
    ISOLATION_SETTING_IGNORED = "isolation_setting_ignored"
    IDENTITY_COLUMN_CONCURRENCY = "identity_column_concurrency"
    MISSING_READ_VERSION = "missing_read_version"
    RETRY_STORM = "retry_storm"
    # Logs as found in the wild.
    CATALOG_MANAGED_LOG = "catalog_managed_log"
    HISTORY_GAP = "history_gap"
    # Log integrity (integrity.py).
    DUPLICATE_ACTIVE_FILE = "duplicate_active_file"
    REMOVE_OF_UNKNOWN_FILE = "remove_of_unknown_file"
    ROW_COUNT_CHANGED_BY_REWRITE = "row_count_changed_by_rewrite"
    METRICS_MISMATCH = "metrics_mismatch"
    PROTOCOL_VIOLATION = "protocol_violation"
    # Deletion vectors, decoded (anomalies/dv_integrity.py).
    DV_INTEGRITY = "dv_integrity"
    # Declared key columns held twice by live rows (anomalies/duplicate_keys.py).
    DUPLICATE_KEY = "duplicate_key"
    # Storage scans (orphans.py).
    ORPHAN_FILES = "orphan_files"
    # Time travel (timetravel.py): from the same listing of the data folders.
    MISSING_DATA_FILE = "missing_data_file"
    VACUUM_BROKE_SNAPSHOT = "vacuum_broke_snapshot"
    # Commit times (timestamps.py).
    TIMESTAMPS_OUT_OF_ORDER = "timestamps_out_of_order"
    # Health (raised by the app as it stores commits; health_<metric> kinds are per rule).
    SCHEMA_CHANGE = "schema_change"
    PROTOCOL_CHANGE = "protocol_change"


# Health findings per alert rule metric are named HEALTH_FINDING_PREFIX + metric.
HEALTH_FINDING_PREFIX = "health_"
# The stored health fields an alert rule can watch (AlertRule.health_metric).
HEALTH_METRICS = (
    "small_files",
    "small_file_ratio",
    "vacuumable_bytes",
    "checkpoint_lag",
    "publish_lag_versions",
    "publish_lag_seconds",
)
# Raised by the alerting package, never by the commit-level audit, which leaves them alone.
HEALTH_KINDS = frozenset({FindingKind.SCHEMA_CHANGE, FindingKind.PROTOCOL_CHANGE}) | {
    HEALTH_FINDING_PREFIX + m for m in HEALTH_METRICS
}

# Sets of kinds, by who opens and resolves them.

# Log integrity (integrity/checks.py).
INTEGRITY_KINDS = frozenset(
    {
        FindingKind.DUPLICATE_ACTIVE_FILE,
        FindingKind.REMOVE_OF_UNKNOWN_FILE,
        FindingKind.ROW_COUNT_CHANGED_BY_REWRITE,
        FindingKind.METRICS_MISMATCH,
        FindingKind.PROTOCOL_VIOLATION,
    }
)
# Kinds computed over the whole history (totals, table settings): a windowed re-audit must not
# create or resolve them; the tail recomputes them with a full audit instead.
TABLE_LEVEL_KINDS = (
    frozenset(
        {
            FindingKind.CONFLICT_HOTSPOT,
            FindingKind.ISOLATION_SETTING_IGNORED,
            FindingKind.IDENTITY_COLUMN_CONCURRENCY,
            FindingKind.MISSING_READ_VERSION,
            FindingKind.CATALOG_MANAGED_LOG,
            FindingKind.RETRY_STORM,
            FindingKind.DV_INTEGRITY,
            FindingKind.DUPLICATE_KEY,
        }
    )
    | INTEGRITY_KINDS
)
# Kinds whose finding grows in place: a retry storm gains commits as it goes on, so its
# identity is its kind and first version, never the related versions (which grow with it).
GROWING_KINDS = frozenset({FindingKind.RETRY_STORM})
# Anomaly kinds whose witness carries a dependency cycle (audit/core/cycles.py).
CYCLE_KINDS = frozenset(
    {FindingKind.NEVER_EXISTED_SNAPSHOT, FindingKind.WRITE_SERIALIZABLE_REORDER}
)
# Kinds produced by the scan of the data folders (orphans in data/orphans.py, missing files in
# health/timetravel.py), not by the audit: audits never create or resolve them.
SCAN_KINDS = frozenset(
    {
        FindingKind.ORPHAN_FILES,
        FindingKind.MISSING_DATA_FILE,
        FindingKind.VACUUM_BROKE_SNAPSHOT,
        FindingKind.TIMESTAMPS_OUT_OF_ORDER,
    }
)


class IncidentCause(StrEnum):
    """Why an incident's findings happened: one root cause each (audit/core/incidents/).

    Stored and served as text; the rule and the setting or engine behaviour that let it
    through is the member, the writer, operation and scope complete its key."""

    # A commit from a stale snapshot that WriteSerializable let through (blind appends exempt).
    STALE_WRITE_WRITE_SERIALIZABLE = "stale_write_write_serializable"
    # A commit from a stale snapshot that its engine's own checker let through.
    STALE_WRITE_UNCHECKED = "stale_write_unchecked"
    # A writer that does not parse delta.isolationLevel, and what it let through meanwhile.
    ISOLATION_SETTING_IGNORED = "isolation_setting_ignored"
    # Writers colliding on the same data: hotspots and the retry storms they cause.
    CONTENTION = "contention"
    # Data files gone from under the log (a VACUUM, or a deletion outside Delta).
    FILES_MISSING = "files_missing"
    # A log its writer got wrong (integrity, deletion vectors), per engine and version.
    FAULTY_LOG_WRITER = "faulty_log_writer"
    DUPLICATE_KEYS = "duplicate_keys"
    METADATA_RACE = "metadata_race"
    IDENTITY_COLUMN_RACE = "identity_column_race"
    COMMIT_TIMES = "commit_times"
    ORPHAN_FILES = "orphan_files"
    HISTORY_LOST = "history_lost"
    READ_VERSIONS_UNRECORDED = "read_versions_unrecorded"
    CATALOG_MANAGED = "catalog_managed"
    # Any finding no rule above claims: one incident per kind and scope.
    OTHER = "other"


class IncidentStatus(StrEnum):
    OPEN = "open"
    GROWING = "growing"  # new occurrences since it was acknowledged
    QUIET = "quiet"  # no recurrence for the declared period
    RESOLVED = "resolved"  # the cause is gone, or quiet for the longer declared period


class StatementEngine(StrEnum):
    """Who runs an incident's statements: deltalake (Python) or Spark SQL."""

    DELTALAKE = "deltalake"
    SPARK_SQL = "spark-sql"


class IsolationLevel(StrEnum):
    """Delta's isolation levels as the log records them (`commitInfo.isolationLevel`)."""

    SERIALIZABLE = "Serializable"
    WRITE_SERIALIZABLE = "WriteSerializable"
    # OPTIMIZE's own level in Delta; never a table setting.
    SNAPSHOT_ISOLATION = "SnapshotIsolation"


# The levels a table can be set to (`delta.isolationLevel`), strictest first.
TABLE_ISOLATION_LEVELS: tuple[IsolationLevel, ...] = (
    IsolationLevel.SERIALIZABLE,
    IsolationLevel.WRITE_SERIALIZABLE,
)


class ConflictException(StrEnum):
    """The exceptions Delta's conflict checker raises, named as Delta names them."""

    PROTOCOL_CHANGED = "ProtocolChangedException"
    METADATA_CHANGED = "MetadataChangedException"
    CONCURRENT_TRANSACTION = "ConcurrentTransactionException"
    CONCURRENT_APPEND = "ConcurrentAppendException"
    CONCURRENT_DELETE_READ = "ConcurrentDeleteReadException"
    CONCURRENT_DELETE_DELETE = "ConcurrentDeleteDeleteException"
    # The generic one, which the others specialise.
    CONCURRENT_WRITE = "ConcurrentWriteException"


class OperationClass(StrEnum):
    """The operation classes of Delta's write-conflict matrix (reference, 'Write conflicts')."""

    INSERT = "INSERT"
    UDM = "UPDATE/DELETE/MERGE"
    OPTIMIZE = "OPTIMIZE"


class Operation(StrEnum):
    """Delta operation names (`commitInfo.operation`) the audit treats specially.

    Logs hold many more (see matrix.classify_operation); these are the ones code branches on.
    """

    WRITE = "WRITE"
    DELETE = "DELETE"
    UPDATE = "UPDATE"
    MERGE = "MERGE"
    OPTIMIZE = "OPTIMIZE"
    STREAMING_UPDATE = "STREAMING UPDATE"
    CREATE_TABLE = "CREATE TABLE"
    CREATE_TABLE_AS_SELECT = "CREATE TABLE AS SELECT"
    REPLACE_TABLE_AS_SELECT = "REPLACE TABLE AS SELECT"
    CREATE_OR_REPLACE_TABLE_AS_SELECT = "CREATE OR REPLACE TABLE AS SELECT"
    COPY_INTO = "COPY INTO"
    RESTORE = "RESTORE"
    TRUNCATE = "TRUNCATE"
    VACUUM_START = "VACUUM START"
    VACUUM_END = "VACUUM END"


class Verdict(StrEnum):
    """Whether two operation classes can conflict (the matrix's cells)."""

    CANNOT_CONFLICT = "cannot_conflict"
    CAN_CONFLICT = "can_conflict"
    CAN_CONFLICT_SAME_ROW = "can_conflict_same_row"


class ReadVersionFact(StrEnum):
    """Where a commit's read version came from."""

    RECORDED = "recorded"  # commitInfo.readVersion
    DERIVED = "derived"  # inferred by the audit from what the commit removed
    UNKNOWN = "unknown"


class Engine(StrEnum):
    SPARK = "spark"
    DATABRICKS = "databricks"
    DELTA_RS = "delta-rs"
    OTHER = "other"
    UNKNOWN = "unknown"


class StorageCause(StrEnum):
    """Why a table could not be read (DeltaAuditError.cause; Table.error_cause)."""

    ACCESS_DENIED = "access_denied"
    NOT_FOUND = "not_found"
    UNREACHABLE = "unreachable"
    OTHER = "other"


def choices(enum: type[StrEnum]) -> list[tuple[str, str]]:
    """Django field choices for an enum: (value, value) pairs in declaration order."""
    return [(member.value, member.value) for member in enum]
