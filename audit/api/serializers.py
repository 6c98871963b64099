"""Serializers: JSON field names follow SPEC §4 where they overlap (version, timestamp,
operation, read_version, isolation_level, blind_append, concurrent_versions, files_added,
files_removed; kind, severity, related_versions, confirmed, summary, witness).

List serializers are deliberately small; details carry the heavy JSON (recheck verdicts,
operation parameters, witnesses).
"""

from __future__ import annotations

import copy
from datetime import timedelta
from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from audit.core.numbers import INT64_MAX, log_int
from audit.core.storage.config import describe_storage
from audit.core.vocab import (
    SEVERITY_ORDER,
    TABLE_ISOLATION_LEVELS,
    IsolationLevel,
    ReadVersionFact,
    Verdict,
    choices,
)
from audit.models import Commit, Finding, Table
from audit.reads.cache import seconds_since
from audit.reads.declared import lists, routes
from audit.reads.timeline.sql import FINDING_FIELDS
from audit.trust.limits import MAX_EXCEPTION_CHARS


class AsciiIntegerField(serializers.IntegerField):
    """An integer query parameter in ASCII digits: DRF's own takes "١٢" (Arabic-Indic) as 12."""

    def to_internal_value(self, data):
        if isinstance(data, str) and log_int(data, signed=True) is None:
            self.fail("invalid")
        return super().to_internal_value(data)


# --------------------------------------------------------------------------- tables


class LagSerializer(serializers.Serializer):
    versions = serializers.IntegerField(
        allow_null=True, help_text="latest_version_in_log - last_seen_version"
    )
    seconds_since_last_commit = serializers.FloatField(allow_null=True)


class SeverityCountsSerializer(serializers.Serializer):
    info = serializers.IntegerField()
    warning = serializers.IntegerField()
    critical = serializers.IntegerField()
    total = serializers.IntegerField()


class BackfillSerializer(serializers.Serializer):
    target_version = serializers.IntegerField()
    done = serializers.IntegerField(help_text="commits stored so far")
    fraction = serializers.FloatField(help_text="0..1")
    remaining = serializers.IntegerField(help_text="commits still to store")
    started_at = serializers.DateTimeField(
        allow_null=True, help_text="when this backfill began (null before its first chunk)"
    )
    commits_per_second = serializers.FloatField(
        allow_null=True, help_text="average rate since the backfill began, restarts included"
    )
    eta_seconds = serializers.FloatField(
        allow_null=True, help_text="estimated seconds left at that rate (null until known)"
    )


class FleetHealthSerializer(serializers.Serializer):
    version = serializers.IntegerField()
    num_files = serializers.IntegerField()
    small_files = serializers.IntegerField()
    small_file_ratio = serializers.FloatField()
    vacuumable_bytes = serializers.IntegerField()
    checkpoint_lag = serializers.IntegerField(help_text="commits since the last checkpoint")


def planned_row(plan: list, instance: Any) -> dict:
    """One row by a serializer's plan of (name, source attributes or None, to_representation):
    DRF's field loop without its per-field wrapper. None for a method field: it reads the
    instance itself. Shared by TableSerializer and the SQL tables list (list_sql.table_rows)."""
    out = {}
    for name, attrs, represent in plan:
        if attrs is None:
            out[name] = represent(instance)
            continue
        value = instance
        for attr in attrs:
            value = getattr(value, attr)
        out[name] = None if value is None else represent(value)
    return out


class TableSerializer(serializers.ModelSerializer):
    version = serializers.IntegerField(
        source="last_seen_version", read_only=True, allow_null=True,
        help_text="the last version stored (audited)",
    )  # fmt: skip
    lag = serializers.SerializerMethodField()
    open_findings = serializers.SerializerMethodField(
        help_text="findings the audit has not resolved, acknowledged or not"
    )
    attention_findings = serializers.SerializerMethodField(
        help_text="open findings nobody has acknowledged (the dashboard's counts)"
    )
    backfill = serializers.SerializerMethodField()
    storage = serializers.SerializerMethodField(
        help_text="storage root and credential name the table is read with (never a secret)"
    )
    health = serializers.SerializerMethodField()

    def get_fields(self):
        # ModelSerializer builds its fields from the model for every instance, a fifth of a
        # cold tables list: built once per class here, each instance gets fresh copies (DRF
        # copies its declared fields the same way).
        cls = type(self)
        prototype = cls.__dict__.get("_fields_prototype")
        if prototype is None:
            prototype = super().get_fields()
            cls._fields_prototype = prototype
        return copy.deepcopy(prototype)

    # Every field is an attribute the instance has, or a method: DRF's SkipField handling of
    # missing attributes is not needed (a subclass with a field set later says False).
    plain_rows = True

    def to_representation(self, instance: Table) -> dict:
        # DRF's loop, without its per-field get_attribute wrapper (exception translation for
        # dotted and callable sources, which no field here has): a third of the serializer's
        # cost in a cold tables list. The same fields, order and values (None stays None).
        if not self.plain_rows:
            return super().to_representation(instance)
        plan = self.__dict__.get("_plan")
        if plan is None:
            plan = self._plan = [
                (name, None if f.source == "*" else f.source_attrs, f.to_representation)
                for name, f in self.fields.items()
                if not f.write_only
            ]
        return planned_row(plan, instance)

    class Meta:
        model = Table
        fields = [
            "id", "uri", "name", "status", "last_error", "error_cause", "storage", "risk", "version",
            "last_seen_version", "latest_version_in_log", "first_available_version", "lag",
            "open_findings", "attention_findings", "backfill", "last_commit_at", "last_tail_at", "created_at",
            "health",
        ]  # fmt: skip
        read_only_fields = fields

    def get_storage(self, table: Table) -> str:
        return describe_storage(table.uri)

    @extend_schema_field(LagSerializer)
    def get_lag(self, table: Table) -> dict:
        versions = None
        if table.latest_version_in_log is not None:
            versions = max(table.latest_version_in_log - (table.last_seen_version or -1), 0)
        seconds = None
        if table.last_commit_at is not None:
            # A cached tables list holds a mark instead, filled in per request (audit/reads/cache.py).
            seconds = self.context.get("seconds_since", seconds_since)(table.last_commit_at)
        return {"versions": versions, "seconds_since_last_commit": seconds}

    @extend_schema_field(SeverityCountsSerializer)
    def get_open_findings(self, table: Table) -> dict:
        return _severity_counts(table, "open")

    @extend_schema_field(SeverityCountsSerializer)
    def get_attention_findings(self, table: Table) -> dict:
        return _severity_counts(table, "attention")

    @extend_schema_field(FleetHealthSerializer(allow_null=True))
    def get_health(self, table: Table) -> dict | None:
        from audit.health.models import TableHealth

        try:
            h = table.health
        except TableHealth.DoesNotExist:
            return None
        return {
            "version": h.version,
            "num_files": h.num_files,
            "small_files": h.small_files,
            "small_file_ratio": round(h.small_file_ratio, 4),
            "vacuumable_bytes": h.vacuumable_bytes,
            "checkpoint_lag": h.checkpoint_lag,
        }

    @extend_schema_field(BackfillSerializer(allow_null=True))
    def get_backfill(self, table: Table) -> dict | None:
        fraction = table.backfill_fraction
        if fraction is None:
            return None
        return {
            "target_version": table.backfill_target_version,
            "done": table.backfill_done,
            "fraction": round(fraction, 4),
            "remaining": table.backfill_remaining,
            "started_at": (
                _DATETIME.to_representation(table.backfill_started_at)
                if table.backfill_started_at
                else None
            ),
            "commits_per_second": _rounded(table.backfill_rate, 1),
            "eta_seconds": _rounded(table.backfill_eta_seconds, 1),
        }


# What the tables list shows of a table: declared with the list (audit/reads/declared/lists.py).
TABLE_LIST_COLUMNS = lists.TABLE_LIST_COLUMNS


def _severity_counts(table: Table, prefix: str) -> dict:
    """{info, warning, critical, total} from the `<prefix>_<severity>` annotations of
    `Table.objects.with_open_counts()`."""
    counts = {str(s): getattr(table, f"{prefix}_{s}", 0) or 0 for s in SEVERITY_ORDER}
    return {**counts, "total": sum(counts.values())}


class TableDetailSerializer(TableSerializer):
    class Meta(TableSerializer.Meta):
        fields = [*TableSerializer.Meta.fields, "settings_snapshot", "key_columns"]
        read_only_fields = fields


class TableCreateSerializer(serializers.Serializer):
    uri = serializers.CharField(max_length=1900, help_text="table root under AUDIT_ALLOWED_ROOTS")
    name = serializers.CharField(max_length=200, required=False, allow_blank=True)
    project = serializers.CharField(
        max_length=200,
        required=False,
        help_text="name of the project to register into (default: the project named "
        '"default"); owners of the project and administrators may register',
    )
    key_columns = serializers.ListField(
        child=serializers.CharField(max_length=200),
        required=False,
        max_length=32,
        help_text="the table's key: live rows sharing it are duplicate_key findings",
    )


class TableSettingsSerializer(serializers.Serializer):
    key_columns = serializers.ListField(
        child=serializers.CharField(max_length=200),
        max_length=32,
        help_text="the table's key: live rows sharing it are duplicate_key findings ([] = none)",
    )


class TableCreatedSerializer(TableDetailSerializer):
    plain_rows = False  # `tail_queued` is set after serializing: DRF skips the missing field
    tail_queued = serializers.BooleanField(
        read_only=True,
        help_text="false when the broker was unreachable; the beat schedule picks it up later",
    )

    class Meta(TableDetailSerializer.Meta):
        fields = [*TableDetailSerializer.Meta.fields, "tail_queued"]
        read_only_fields = fields


# --------------------------------------------------------------------------- commits

COMMIT_LIST_FIELDS = lists.COMMITS.fields


class CommitListSerializer(serializers.Serializer):
    """Documents the list rows; the view returns `.values(*COMMIT_LIST_FIELDS)` as they are."""

    version = serializers.IntegerField()
    timestamp = serializers.IntegerField(allow_null=True, help_text="ms since the epoch")
    operation = serializers.CharField()
    read_version = serializers.IntegerField(allow_null=True)
    isolation_level = serializers.CharField(allow_null=True)
    blind_append = serializers.BooleanField(allow_null=True)
    concurrent_versions = serializers.ListField(child=serializers.IntegerField())
    concurrent_count = serializers.IntegerField()
    files_added = serializers.IntegerField()
    files_removed = serializers.IntegerField()
    engine = serializers.CharField()


class PredicateSerializer(serializers.Serializer):
    raw = serializers.CharField(help_text="as written in the log (untrusted text)")
    sql = serializers.CharField(allow_null=True, help_text="normalised SQL, null if unparsable")


class FindingRefSerializer(serializers.ModelSerializer):
    related_versions = serializers.ListField(child=serializers.IntegerField(), read_only=True)

    class Meta:
        model = Finding
        fields = [
            "id", "kind", "severity", "version", "related_versions", "confirmed", "summary",
            "status",
        ]  # fmt: skip


def _fact_field() -> serializers.CharField:
    # Plain text in the schema, as before the model had choices: three fields sharing one
    # enum would need ENUM_NAME_OVERRIDES, and "" (not recorded) is a value too.
    return serializers.CharField(
        read_only=True, help_text=f"how it was obtained: {', '.join(ReadVersionFact)}, or empty"
    )


class CommitDetailSerializer(serializers.ModelSerializer):
    predicate = serializers.SerializerMethodField()
    findings = serializers.SerializerMethodField()
    read_version_fact = _fact_field()
    isolation_level_fact = _fact_field()
    blind_append_fact = _fact_field()

    class Meta:
        model = Commit
        fields = [
            *COMMIT_LIST_FIELDS, "read_version_fact", "isolation_level_fact",
            "blind_append_fact", "facts", "engine_info", "txn_id", "user_id", "user_name",
            "bytes_added", "bytes_removed", "predicate", "operation_parameters",
            "operation_metrics", "partitions", "app_ids", "metadata_changed",
            "protocol_changed", "recheck", "provenance", "findings",
        ]  # fmt: skip
        read_only_fields = fields

    @extend_schema_field(PredicateSerializer(allow_null=True))
    def get_predicate(self, commit: Commit) -> dict | None:
        if not commit.predicate_raw:
            return None
        return {"raw": commit.predicate_raw, "sql": commit.predicate_sql or None}

    @extend_schema_field(FindingRefSerializer(many=True))
    def get_findings(self, commit: Commit) -> list:
        return FindingRefSerializer(self.context.get("findings", []), many=True).data


# --------------------------------------------------------------------------- findings


class FindingSerializer(serializers.ModelSerializer):
    acknowledged = serializers.SerializerMethodField()
    acknowledged_by = serializers.SlugRelatedField(
        slug_field="username", read_only=True, allow_null=True
    )

    class Meta:
        model = Finding
        fields = [
            "id", "table", "kind", "severity", "version", "related_versions", "confirmed",
            "summary", "status", "acknowledged", "acknowledged_by", "acknowledged_at",
            "first_seen", "last_seen", "resolved_at",
        ]  # fmt: skip
        read_only_fields = fields

    def get_acknowledged(self, finding: Finding) -> bool:
        return finding.acknowledged_at is not None


FINDING_LIST_FIELDS = lists.FINDINGS.fields
_DATETIME = serializers.DateTimeField()
_ZERO = timedelta(0)


def finding_list_row(row: dict) -> dict:
    """A `.values(*FINDING_LIST_FIELDS)` row in FindingSerializer's shape, without its cost."""
    acknowledged_at = row["acknowledged_at"]
    return {
        "id": row["id"],
        "table": row["table_id"],
        "kind": row["kind"],
        "severity": row["severity"],
        "version": row["version"],
        "related_versions": row["related_versions"],
        "confirmed": row["confirmed"],
        "summary": row["summary"],
        "status": row["status"],
        "acknowledged": acknowledged_at is not None,
        "acknowledged_by": row["acknowledged_by__username"],
        "acknowledged_at": _when(acknowledged_at),
        "first_seen": _when(row["first_seen"]),
        "last_seen": _when(row["last_seen"]),
        "resolved_at": _when(row["resolved_at"]),
    }


def _when(value):
    """DateTimeField.to_representation without its per-call cost for UTC values (what the
    database hands back with USE_TZ): the same ISO 8601 text, with "Z" for UTC."""
    if value is None:
        return None
    if value.utcoffset() == _ZERO:
        text = value.isoformat()
        return text[:-6] + "Z" if text.endswith("+00:00") else text
    return _DATETIME.to_representation(value)


class FindingDetailSerializer(FindingSerializer):
    class Meta(FindingSerializer.Meta):
        fields = [*FindingSerializer.Meta.fields, "explanation", "witness", "details"]
        read_only_fields = fields


# --------------------------------------------------------------------------- query params


class TimelineQuerySerializer(serializers.Serializer):
    from_version = AsciiIntegerField(required=False, min_value=0, max_value=INT64_MAX)
    to_version = AsciiIntegerField(required=False, min_value=0, max_value=INT64_MAX)
    max_points = AsciiIntegerField(
        required=False, min_value=routes.TIMELINE_MAX_POINTS[0],
        max_value=routes.TIMELINE_MAX_POINTS[1], default=routes.TIMELINE_POINTS,
        help_text="rows when the window holds at most this many commits, else ~max_points/2 buckets",
    )  # fmt: skip

    def validate(self, attrs):
        lo, hi = attrs.get("from_version"), attrs.get("to_version")
        if lo is not None and hi is not None and lo > hi:
            raise serializers.ValidationError({"from_version": "must not exceed to_version"})
        return attrs


class ConflictMatrixQuerySerializer(serializers.Serializer):
    isolation_level = serializers.CharField(
        required=False, default=IsolationLevel.WRITE_SERIALIZABLE, max_length=60,
        help_text=" or ".join(TABLE_ISOLATION_LEVELS),
    )  # fmt: skip
    row_level_concurrency = serializers.BooleanField(required=False, default=False)
    deletion_vectors = serializers.BooleanField(required=False, default=False)
    zorder = serializers.BooleanField(required=False, default=False)


class ExplainRequestSerializer(serializers.Serializer):
    text = serializers.CharField(
        max_length=MAX_EXCEPTION_CHARS, trim_whitespace=False,
        help_text=f"the exception text (Spark, Databricks or delta-rs wording); at most "
        f"{MAX_EXCEPTION_CHARS:,} characters, and the whole request body at most "
        "DATA_UPLOAD_MAX_MEMORY_SIZE bytes (2.5 MiB by default; over it: 413)",
    )  # fmt: skip
    table = serializers.IntegerField(
        required=False, allow_null=True, min_value=1, max_value=INT64_MAX,
        help_text="id of a registered table to locate the conflicting commit in",
    )  # fmt: skip


# --------------------------------------------------------------------------- responses


class MatrixCellSerializer(serializers.Serializer):
    a = serializers.CharField()
    b = serializers.CharField()
    verdict = serializers.ChoiceField(choices=choices(Verdict))
    note = serializers.CharField()


class ConflictMatrixSerializer(serializers.Serializer):
    cells = MatrixCellSerializer(many=True)


class TimelineFindingSerializer(FindingRefSerializer):
    """The open findings of a timeline window (audit.reads.timeline.window.FINDING_FIELDS)."""

    class Meta(FindingRefSerializer.Meta):
        fields = list(FINDING_FIELDS)


class TimelineSerializer(serializers.Serializer):
    table = serializers.IntegerField()
    first_version = serializers.IntegerField(allow_null=True)
    latest_version = serializers.IntegerField(allow_null=True)
    from_version = serializers.IntegerField(allow_null=True)
    to_version = serializers.IntegerField(allow_null=True)
    mode = serializers.ChoiceField(choices=["rows", "buckets"])
    operations = serializers.ListField(child=serializers.CharField())
    columns = serializers.ListField(child=serializers.CharField())
    rows = serializers.ListField(
        child=serializers.ListField(child=serializers.JSONField()),
        help_text="[version, read_version|null, timestamp_ms|null, op_index, blind_append|null, "
        "concurrent_count]",
    )
    buckets = serializers.ListField(
        child=serializers.ListField(child=serializers.IntegerField()),
        help_text="[from_version, to_version, commits, max_concurrent, open_findings]",
    )
    findings = TimelineFindingSerializer(many=True)


class AnalysisSerializer(serializers.Serializer):
    table = serializers.IntegerField()
    version = serializers.IntegerField(help_text="the stored version the analysis covers")
    computed_at = serializers.IntegerField(help_text="ms since the epoch")


class HotspotsSerializer(AnalysisSerializer):
    hotspots = serializers.ListField(child=serializers.DictField())


class OrphansSerializer(serializers.Serializer):
    table = serializers.IntegerField()
    latest = serializers.DictField(
        allow_null=True,
        help_text="the latest successful scan: files, bytes, oldest/newest (ms), "
        "in_flight_files, listed_files, listed_dirs, truncated, sample",
    )
    hours = serializers.ListField(
        child=serializers.DictField(),
        help_text="per hour of orphan modification times: files, bytes, commits, "
        "concurrent_commits of the same hour",
    )
    over_time = serializers.ListField(child=serializers.DictField())
    last_error = serializers.CharField(allow_null=True)


class WritersSerializer(AnalysisSerializer):
    writers = serializers.DictField(
        help_text="`writers` (per writer: commits, operations, read_version_distance buckets, "
        "recorded_retries, first/last version and timestamp), `pairs` (earlier writer, later "
        "writer, concurrent_commits, conflicting_commits), `txn_anomalies` (appId txn versions "
        "that repeat or go backwards)"
    )


class IsolationSettingsSerializer(AnalysisSerializer):
    isolation_settings = serializers.DictField(
        help_text="effective level per engine, deletion vectors, partitioning, clustering, "
        "identity columns, row-level concurrency, and `matrix` with observed pair counts"
    )


class RecommendationsSerializer(AnalysisSerializer):
    recommendations = serializers.DictField(
        help_text="candidates, cardinality, what-if replay, warnings, row-level route, "
        "MERGE rewrites"
    )


class ExplainResponseSerializer(serializers.Serializer):
    exception = serializers.CharField(allow_null=True)
    conflicting_version = serializers.IntegerField(allow_null=True)
    explanation = serializers.CharField()
    fixes = serializers.ListField(child=serializers.CharField())


def _rounded(value: float | None, digits: int) -> float | None:
    return None if value is None else round(value, digits)
