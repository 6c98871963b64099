"""Registered tables, their ingested commits and the audit's findings.

Rows are written only by `audit.ingest` (the single writer of Commit/Finding rows); the web,
API and admin read them, and only record who acknowledged a finding (`Finding.acknowledge`).
What they ask of these rows is asked through `audit/reads/queries.py`. JSON field names follow
SPEC §4 where they overlap.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.conf import settings
from django.db import models, transaction
from django.db.models import F, IntegerField, Q, signals
from django.db.models.expressions import RawSQL
from django.utils import timezone

from audit.core.vocab import (
    SEVERITY_ORDER,
    Engine,
    IsolationLevel,
    ReadVersionFact,
    Severity,
    StorageCause,
    choices,
)

# A finding is *open* until the audit resolves it; acknowledging it only takes it off the
# "needs attention" lists (docs/api.md, "Open, acknowledged, needs attention").
OPEN = Q(status="open")
NEEDS_ATTENTION = Q(status="open", acknowledged_at__isnull=True)


def _count_per_table(severity: Severity, attention: bool) -> RawSQL:
    # The table's stored count (FindingCounts, kept by triggers), 0 when it has never had a
    # finding. Counting the findings per request (a correlated COUNT per severity on the
    # (table, status, severity) index) cost ~7.6 ms of PostgreSQL CPU per list of 21 tables
    # over 5,000 findings and capped the list under a writer (docs/performance.md). Written as
    # SQL because the ORM spent ~3 ms per Subquery building them: the list is cold whenever
    # any table is tailed. Same rows as OPEN and NEEDS_ATTENTION above.
    counts, table = FindingCounts._meta.db_table, Table._meta.db_table  # defined below
    column = f"{'attention' if attention else 'open'}_{severity}"
    sql = (
        f'COALESCE((SELECT "{counts}"."{column}" FROM "{counts}"'
        f' WHERE "{counts}"."table_id" = "{table}"."id"), 0)'
    )
    return RawSQL(sql, (), output_field=IntegerField())


class Project(models.Model):
    """A team's set of tables: who may see a table is decided by its project (audit/trust/access.py)."""

    name = models.CharField(max_length=200, unique=True)
    slug = models.SlugField(max_length=200, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    # Locations besides each table's own that its tables' logs may make the witness read
    # (shallow clones within the project): normalised URIs under AUDIT_ALLOWED_ROOTS, set by
    # staff (`manage.py project_roots`, the admin); audit/trust/paths.py read_scope_of.
    read_roots = models.JSONField(default=list, blank=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


# Tables registered without a project (and every table from before projects) go here.
DEFAULT_PROJECT = "default"


def project_named(name: str) -> Project:
    """The project called `name`, created when missing (its slug derived from the name)."""
    from django.utils.text import slugify

    project, _ = Project.objects.get_or_create(
        name=name, defaults={"slug": slugify(name)[:200] or f"project-{abs(hash(name))}"}
    )
    return project


def default_project_id() -> int:
    """The default project's id: Table.project's default, so code that registers a table
    without naming a project still gives it one. Reads the id alone: migration 0009 calls
    this default with today's model on the schema of its time (columns added later absent)."""
    found = Project.objects.filter(name=DEFAULT_PROJECT).values_list("pk", flat=True).first()
    return found if found is not None else project_named(DEFAULT_PROJECT).pk


class Membership(models.Model):
    class Role(models.TextChoices):
        # viewer reads; member also acknowledges and re-opens findings; owner also manages
        # the project's tables and members (audit/trust/access.py).
        VIEWER = "viewer"
        MEMBER = "member"
        OWNER = "owner"

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships"
    )
    role = models.CharField(max_length=10, choices=Role.choices, default=Role.VIEWER)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["project", "user"], name="audit_membership_unique")
        ]
        indexes = [models.Index(fields=["user", "project"], name="audit_membership_user")]

    def __str__(self) -> str:
        return f"{self.user_id} in {self.project_id} ({self.role})"


class ApiToken(models.Model):
    """Our side of a DRF token: whether it may only read (unsafe methods answer 403)."""

    token = models.OneToOneField(
        "authtoken.Token", on_delete=models.CASCADE, primary_key=True, related_name="audit"
    )
    read_only = models.BooleanField(default=False)

    def __str__(self) -> str:
        return f"token of user {self.token.user_id} ({'read-only' if self.read_only else 'rw'})"


class TableQuerySet(models.QuerySet):
    def with_open_counts(self) -> TableQuerySet:
        """Annotate `open_<severity>` (open findings, acknowledged or not) and
        `attention_<severity>` (open and not acknowledged) for every severity, and `lag`."""
        counts: dict[str, Any] = {}
        for severity in SEVERITY_ORDER:
            counts[f"open_{severity}"] = _count_per_table(severity, attention=False)
            counts[f"attention_{severity}"] = _count_per_table(severity, attention=True)
        return self.annotate(**counts, lag=F("latest_version_in_log") - F("last_seen_version"))


class Table(models.Model):
    class Status(models.TextChoices):
        OK = "ok"
        INGESTING = "ingesting"
        BACKFILLING = "backfilling"
        ERROR = "error"
        PAUSED = "paused"
        # Its _delta_log vanished from a discovered root: kept with its history, not tailed.
        GONE = "gone"

    uri = models.CharField(max_length=2000, unique=True)
    name = models.CharField(max_length=200, blank=True)
    # Who may see the table: members of its project (and staff).
    project = models.ForeignKey(
        Project, on_delete=models.PROTECT, related_name="tables", default=default_project_id
    )
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.INGESTING)
    last_error = models.TextField(blank=True)
    # Why the last read failed: access_denied / not_found / unreachable / other ("" when OK).
    error_cause = models.CharField(max_length=20, blank=True, choices=choices(StorageCause))
    # Highest version stored in Commit rows; advances only in the transaction that stores them.
    last_seen_version = models.BigIntegerField(null=True, blank=True)
    first_available_version = models.BigIntegerField(null=True, blank=True)
    latest_version_in_log = models.BigIntegerField(null=True, blank=True)
    # Backfill progress, for the UI: commits stored so far out of the target version.
    backfill_target_version = models.BigIntegerField(null=True, blank=True)
    backfill_done = models.BigIntegerField(default=0)
    # When the current backfill began, how much was stored then, and its average rate since
    # (commits/s, stored with each chunk): the page and the API derive the time left from them.
    backfill_started_at = models.DateTimeField(null=True, blank=True)
    backfill_start_done = models.BigIntegerField(default=0)
    backfill_rate = models.FloatField(null=True, blank=True)
    # partition_columns, properties, protocol, clustering_columns, identity_columns, ...
    settings_snapshot = models.JSONField(default=dict, blank=True)
    risk = models.FloatField(null=True, blank=True)  # computed by the risk scorer
    last_commit_at = models.DateTimeField(null=True, blank=True)
    last_tail_at = models.DateTimeField(null=True, blank=True)
    # When a tail pass last looked at the table (probe or tick): spaces out idle tables' visits.
    probed_at = models.DateTimeField(null=True, blank=True)
    # When a change notification last named a new commit of the table, until a tail step that
    # listed the log after it clears it (audit/tail/notifications.py): a notice whose step was
    # busy, expired or killed stays here, and the next tail pass dispatches the table again.
    notified_at = models.DateTimeField(null=True, blank=True)
    # When an orphan scan of the table last stored a row (its error included), and when a pass
    # last queued one (audit/tail/orphan_scans.py): each pass queues a share of the lake,
    # longest unscanned first, so scans spread over the interval instead of one burst an hour.
    orphans_scanned_at = models.DateTimeField(null=True, blank=True)
    orphans_queued_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    # Table-level findings (hotspots, ignored settings, ...) need the whole history: they are
    # recomputed by a full audit, debounced, whenever new commits made them stale.
    table_findings_dirty = models.BooleanField(default=True)
    table_findings_at = models.DateTimeField(null=True, blank=True)
    # Declared key columns (logical names): live rows sharing a key are duplicate_key findings.
    key_columns = models.JSONField(default=list, blank=True)
    # The table's lease (audit/ingest/lease.py): a worker claims the row until locked_until.
    locked_by = models.CharField(max_length=200, blank=True)
    locked_until = models.DateTimeField(null=True, blank=True)
    # Moves in the transaction of every change to the table's Finding rows: cached findings
    # lists and the tables list are keyed on it (audit/reads/cache.py). In the database, not
    # the per-process cache, so every web worker sees a change at once.
    findings_generation = models.BigIntegerField(default=0, editable=False)

    objects = TableQuerySet.as_manager()

    class Meta:
        ordering = ["name", "id"]
        indexes = [models.Index(fields=["status"], name="audit_table_status")]

    def __str__(self) -> str:
        return self.name or self.uri

    @classmethod
    def of_columns(cls, **columns: Any) -> Table:
        """A Table of these columns read elsewhere (plain SQL), the others deferred, as the ORM
        builds a row it read. `Table(...)` would fill the others with their defaults, and the
        project's default is a query (get-or-create of the default project)."""
        names = [f.attname for f in cls._meta.concrete_fields if f.attname in columns]
        assert len(names) == len(columns), f"not columns of Table: {sorted(columns)}"
        return cls.from_db("default", names, [columns[name] for name in names])

    def set_key_columns(self, keys: list[str]) -> None:
        """Declare the table's key; the next full audit looks for duplicates of it."""
        Table.objects.filter(pk=self.pk).update(key_columns=keys, table_findings_dirty=True)
        self.key_columns, self.table_findings_dirty = keys, True

    @staticmethod
    def bump_findings(table_id: int | Iterable[int]) -> None:
        """Record that the table's (or several tables', a list or a subquery of ids) Finding
        rows changed. Call in the transaction that changes them, so no reader sees the new rows
        under the old generation (a stale cached list)."""
        tables = Table.objects.filter(**{"pk" if isinstance(table_id, int) else "pk__in": table_id})
        tables.update(findings_generation=F("findings_generation") + 1)

    @property
    def backfill_fraction(self) -> float | None:
        """Share of the log stored during a backfill, 0..1, or None when not backfilling."""
        if self.backfill_target_version is None:
            return None
        first = self.first_available_version or 0
        total = max(self.backfill_target_version - first + 1, 1)
        return min(self.backfill_done / total, 1.0)

    @property
    def backfill_remaining(self) -> int | None:
        """Commits still to store during a backfill, or None when not backfilling."""
        if self.backfill_target_version is None:
            return None
        first = self.first_available_version or 0
        return max(self.backfill_target_version - first + 1 - self.backfill_done, 0)

    @property
    def backfill_eta_seconds(self) -> float | None:
        """Estimated seconds until the backfill is done, at its average rate so far."""
        remaining = self.backfill_remaining
        if remaining is None or not self.backfill_rate:
            return None
        return remaining / self.backfill_rate


_FACTS = choices(ReadVersionFact)


class Commit(models.Model):
    # No separate FK index: the (table, version) unique index covers lookups by table.
    table = models.ForeignKey(
        Table, on_delete=models.CASCADE, related_name="commits", db_index=False
    )
    version = models.BigIntegerField()
    timestamp = models.BigIntegerField(null=True, blank=True)  # ms since the epoch (SPEC §4)
    committed_at = models.DateTimeField(null=True, blank=True)  # the same instant, for queries
    operation = models.CharField(max_length=100, blank=True)
    read_version = models.BigIntegerField(null=True, blank=True)
    # How each fact was obtained: recorded / derived / unknown.
    read_version_fact = models.CharField(max_length=10, blank=True, choices=_FACTS)
    # As the log records it: other spellings are stored as they are (choices do not filter).
    isolation_level = models.CharField(
        max_length=40, null=True, blank=True, choices=choices(IsolationLevel)
    )
    isolation_level_fact = models.CharField(max_length=10, blank=True, choices=_FACTS)
    blind_append = models.BooleanField(null=True, blank=True)
    blind_append_fact = models.CharField(max_length=10, blank=True, choices=_FACTS)
    engine = models.CharField(max_length=20, blank=True, choices=choices(Engine))
    engine_info = models.TextField(blank=True)
    txn_id = models.CharField(max_length=200, blank=True)
    user_id = models.CharField(max_length=200, blank=True)
    user_name = models.CharField(max_length=200, blank=True)
    # Who and what wrote it (audit/core/history/provenance.py); job and user metadata as columns for
    # the list filters, everything in `provenance` as the one-shot report gives it.
    job_id = models.CharField(max_length=200, blank=True)
    user_metadata = models.TextField(blank=True)
    provenance = models.JSONField(default=dict, blank=True)
    files_added = models.IntegerField(default=0)
    files_removed = models.IntegerField(default=0)
    bytes_added = models.BigIntegerField(default=0)
    bytes_removed = models.BigIntegerField(default=0)
    concurrent_versions = models.JSONField(default=list, blank=True)
    concurrent_count = models.IntegerField(default=0)  # for "has concurrent commits" filters
    predicate_raw = models.TextField(blank=True)
    predicate_sql = models.TextField(blank=True)
    operation_parameters = models.JSONField(default=dict, blank=True)
    operation_metrics = models.JSONField(default=dict, blank=True)
    partitions = models.JSONField(default=list, blank=True)  # touched partitions, as dicts
    app_ids = models.JSONField(default=dict, blank=True)
    metadata_changed = models.BooleanField(default=False)
    protocol_changed = models.BooleanField(default=False)
    recheck = models.JSONField(default=dict, blank=True)  # per concurrent version verdicts
    facts = models.JSONField(default=dict, blank=True)  # how each fact was obtained

    class Meta:
        ordering = ["-version"]
        constraints = [
            models.UniqueConstraint(fields=["table", "version"], name="audit_commit_table_version")
        ]
        indexes = [
            models.Index(fields=["table", "operation", "version"], name="audit_commit_op"),
            models.Index(fields=["table", "timestamp"], name="audit_commit_ts"),
            models.Index(fields=["table", "committed_at"], name="audit_commit_at"),
            # The writer filters (user name or id, job) checked on index entries in version
            # order: a typed page number's offset reads no table row (audit/reads/history.py).
            models.Index(
                fields=["table", "version", "user_name", "user_id", "job_id"],
                name="audit_commit_writer",
            ),
            models.Index(
                fields=["table", "version"],
                condition=models.Q(concurrent_count__gt=0),
                name="audit_commit_concurrent",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.table_id}@{self.version} {self.operation}"


# Versions per CommitRollup row. The timeline's zoomed-out buckets are built from rollups, so a
# whole-history view reads ~1,000 rollup rows instead of aggregating every Commit row.
ROLLUP_SIZE = 1024


class CommitRollup(models.Model):
    """Aggregates of a table's commits in versions [bucket_start, bucket_start + ROLLUP_SIZE).

    Maintained by `audit.ingest` in the transaction that stores the commits (recomputed from
    the Commit rows of the touched buckets, so replays cannot double-count);
    `audit.ingest.rebuild_rollups` rebuilds them for rows written any other way.
    """

    table = models.ForeignKey(
        Table, on_delete=models.CASCADE, related_name="rollups", db_index=False
    )
    bucket_start = models.BigIntegerField()  # version // ROLLUP_SIZE * ROLLUP_SIZE
    commits = models.IntegerField(default=0)
    max_concurrent = models.IntegerField(default=0)
    blind_appends = models.IntegerField(default=0)
    min_timestamp = models.BigIntegerField(null=True, blank=True)  # ms since the epoch
    max_timestamp = models.BigIntegerField(null=True, blank=True)
    operations = models.JSONField(default=dict, blank=True)  # operation name -> commits
    # Packed timeline data (audit/reads/timeline/rollups.py): the rows of these versions, and per-cell
    # [commits, max_concurrent] at finer widths. JSON text, decoded with orjson on read.
    rows = models.TextField(default="", blank=True)
    cells = models.TextField(default="", blank=True)

    class Meta:
        ordering = ["table", "bucket_start"]
        constraints = [
            models.UniqueConstraint(
                fields=["table", "bucket_start"], name="audit_rollup_table_bucket"
            )
        ]

    def __str__(self) -> str:
        return f"{self.table_id}@{self.bucket_start}+{ROLLUP_SIZE}: {self.commits} commits"


class Finding(models.Model):
    # The vocabulary's severities as Django choices (labels "Info", "Warning", "Critical").
    Severity = models.TextChoices("Severity", [(m.name, m.value) for m in SEVERITY_ORDER])

    class Status(models.TextChoices):
        OPEN = "open"
        RESOLVED = "resolved"

    table = models.ForeignKey(
        Table, on_delete=models.CASCADE, related_name="findings", db_index=False
    )
    kind = models.CharField(max_length=64)
    severity = models.CharField(max_length=10, choices=Severity.choices)
    version = models.BigIntegerField()
    related_versions = models.JSONField(default=list, blank=True)
    confirmed = models.BooleanField(default=False)
    summary = models.TextField()
    explanation = models.TextField(blank=True)
    witness = models.JSONField(null=True, blank=True)
    details = models.JSONField(default=dict, blank=True)
    # "kind:version:related,versions" — the upsert identity (model.Finding.key) as text.
    key = models.CharField(max_length=500)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.OPEN)
    first_seen = models.DateTimeField(auto_now_add=True)
    last_seen = models.DateTimeField()
    resolved_at = models.DateTimeField(null=True, blank=True)
    acknowledged_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    acknowledged_at = models.DateTimeField(null=True, blank=True)
    # The one incident (root cause) it belongs to, set by the tail (audit/ingest/incidents.py).
    incident = models.ForeignKey(
        "audit.Incident", null=True, blank=True, on_delete=models.SET_NULL, related_name="findings"
    )

    class Meta:
        ordering = ["-version", "id"]
        constraints = [models.UniqueConstraint(fields=["table", "key"], name="audit_finding_key")]
        indexes = [
            # Severity counts (open, and unacknowledged) of a table and of all tables, read
            # from the index alone.
            models.Index(
                fields=["table", "status", "severity", "acknowledged_at"],
                name="audit_finding_status",
            ),
            models.Index(fields=["kind"], name="audit_finding_kind"),
            models.Index(fields=["table", "version"], name="audit_finding_version"),
            # Covers the timeline's scan of a window's open findings (id is implied).
            models.Index(
                fields=["table", "status", "version", "severity"], name="audit_finding_window"
            ),
            models.Index(
                fields=["status", "severity", "acknowledged_at"], name="audit_finding_open"
            ),
            # The dashboard's needs-attention lists without sorting every open finding: all
            # tables' and one table's newest first, and the table page's by version.
            models.Index(
                fields=["status", "acknowledged_at", "-last_seen", "-id"],
                name="audit_finding_attention",
            ),
            models.Index(
                fields=["table", "status", "acknowledged_at", "-last_seen", "-id"],
                name="audit_finding_table_attn",
            ),
            models.Index(
                fields=["table", "status", "acknowledged_at", "-version"],
                name="audit_finding_table_attn_v",
            ),
            # The same lists for PostgreSQL, which uses the three above only to find the rows:
            # `acknowledged_at IS NULL` does not fix a column for ordering there, so it sorted
            # every open finding of the list (4.6 ms of the server's CPU a findings page at
            # 5,000 findings, and growing with them). These hold only the findings needing
            # attention, in the lists' orders. SQLite never uses them (it does not plan a
            # partial index for a bound `status = ?`) and has the three above.
            models.Index(
                fields=["-last_seen", "-id"], condition=NEEDS_ATTENTION, name="audit_finding_attn"
            ),
            models.Index(
                fields=["table", "-last_seen", "-id"],
                condition=NEEDS_ATTENTION,
                name="audit_finding_tattn",
            ),
            models.Index(
                fields=["table", "-version"],
                condition=NEEDS_ATTENTION,
                name="audit_finding_tattn_v",
            ),
            # The API's list of a reader's findings, newest first (`table_id IN (...) ORDER BY
            # id DESC`): without statistics (SQLite has none unless ANALYZE runs) SQLite read
            # every finding of the tables by (table, version) and sorted them (2.7 ms at 5,000).
            models.Index(fields=["table", "-id"], name="audit_finding_table_new"),
        ]

    def __str__(self) -> str:
        return f"{self.kind} @{self.version} ({self.severity}, {self.status})"

    def acknowledge(self, user: Any) -> bool:
        """Record that `user` has seen the finding. The first acknowledgement is kept:
        concurrent or repeated calls do not overwrite it (an atomic claim of the row).
        Returns True when this call acknowledged it. The finding stays open."""
        now = timezone.now()
        with transaction.atomic():
            claimed = Finding.objects.filter(pk=self.pk, acknowledged_at__isnull=True).update(
                acknowledged_by=user, acknowledged_at=now
            )
            if claimed:
                Table.bump_findings(self.table_id)
        if claimed:
            self.acknowledged_by, self.acknowledged_at = user, now
        else:
            self.refresh_from_db(fields=["acknowledged_by", "acknowledged_at"])
        return bool(claimed)

    def unacknowledge(self) -> bool:
        """Undo an acknowledgement (re-open for attention). Returns True when one was undone.
        Whether the finding is open or resolved is the audit's call, not this one's."""
        with transaction.atomic():
            undone = Finding.objects.filter(pk=self.pk, acknowledged_at__isnull=False).update(
                acknowledged_by=None, acknowledged_at=None
            )
            if undone:
                Table.bump_findings(self.table_id)
        self.acknowledged_by, self.acknowledged_at = None, None
        return bool(undone)


def _acknowledger_changed(sender: Any, instance: Any, **kwargs: Any) -> None:
    """Findings lists show the acknowledger's username: renaming or deleting a user (SET_NULL
    on their acknowledgements) changes the lists of every table they acknowledged in."""
    fields = kwargs.get("update_fields")
    if kwargs.get("created") or (fields is not None and "username" not in fields):
        return  # a login's last_login save, a new user: no finding shows them yet
    Table.bump_findings(Finding.objects.filter(acknowledged_by=instance).values("table_id"))


signals.post_save.connect(_acknowledger_changed, sender=settings.AUTH_USER_MODEL)
signals.pre_delete.connect(_acknowledger_changed, sender=settings.AUTH_USER_MODEL)


class FindingCounts(models.Model):
    """A table's open findings by severity (`open_<severity>`, OPEN) and those of them not
    acknowledged (`attention_<severity>`, NEEDS_ATTENTION): what the tables list, the overview
    and their orderings show of every table on every request.

    Written only by the database: triggers on audit_finding add and subtract each row's part on
    insert, on a change of its status, severity, acknowledgement or table, and on delete, and a
    trigger on audit_table drops a deleted table's row (migration 0017). So every way a finding
    is written (the ORM, bulk_create and bulk_update, `.update()`, raw SQL, a cascade) keeps it
    exact, in the transaction that writes the finding. No foreign key constraint: a cascade
    deletes the findings (which update this row) before the table (whose trigger deletes it).
    """

    table = models.OneToOneField(
        Table,
        on_delete=models.DO_NOTHING,
        db_constraint=False,
        primary_key=True,
        related_name="finding_counts",
    )
    open_info = models.BigIntegerField(default=0)
    open_warning = models.BigIntegerField(default=0)
    open_critical = models.BigIntegerField(default=0)
    attention_info = models.BigIntegerField(default=0)
    attention_warning = models.BigIntegerField(default=0)
    attention_critical = models.BigIntegerField(default=0)

    def __str__(self) -> str:
        return f"finding counts of table {self.table_id}"


class FindingFlip(models.Model):
    """One status change of a finding (opened, resolved, reopened), like healthchecks' Flip."""

    finding = models.ForeignKey(Finding, on_delete=models.CASCADE, related_name="flips")
    created = models.DateTimeField()
    old_status = models.CharField(max_length=10, blank=True)  # "" when the finding is new
    new_status = models.CharField(max_length=10)
    processed = models.DateTimeField(null=True, blank=True)  # set by the alerter once sent

    class Meta:
        ordering = ["-created"]
        indexes = [
            models.Index(
                fields=["created"],
                condition=models.Q(processed__isnull=True),
                name="audit_flip_unprocessed",
            )
        ]

    def __str__(self) -> str:
        return f"{self.finding_id}: {self.old_status or 'new'} -> {self.new_status}"


class OrphanScan(models.Model):
    """One bounded listing of a table's data folders (audit.tail.orphan_scans); never deletes."""

    table = models.ForeignKey(Table, on_delete=models.CASCADE, related_name="orphan_scans")
    scanned_at = models.DateTimeField(db_index=True)
    version = models.BigIntegerField(null=True, blank=True)  # the log version it compared with
    files = models.IntegerField(default=0)
    bytes = models.BigIntegerField(default=0)
    oldest = models.BigIntegerField(null=True, blank=True)  # ms, oldest orphan's mtime
    newest = models.BigIntegerField(null=True, blank=True)
    hours = models.JSONField(default=list, blank=True)  # [{"hour","start","files","bytes"}]
    sample = models.JSONField(default=list, blank=True)  # [{"path","size","modification_time"}]
    in_flight_files = models.IntegerField(default=0)
    listed_files = models.IntegerField(default=0)
    listed_dirs = models.IntegerField(default=0)
    truncated = models.BooleanField(default=False)
    min_age_ms = models.BigIntegerField(default=0)
    # The readable range the same listing found: `health.time_travel` of `audit --json`
    # (audit.core.health.timetravel.time_travel_section); null on an error or an older scan.
    time_travel = models.JSONField(null=True, blank=True)
    error = models.TextField(blank=True)

    class Meta:
        indexes = [models.Index(fields=["table", "-scanned_at"], name="orphanscan_table_time")]

    @classmethod
    def newest_first(cls, table_id: int) -> models.QuerySet[OrphanScan]:
        """A table's successful scans, the latest first (the health's key and body agree)."""
        return cls.objects.filter(table_id=table_id, error="").order_by("-scanned_at", "-id")


# Stored table health lives in its own module; imported here so Django registers it.
from audit.health.models import HealthPoint, TableChange, TableHealth  # noqa: E402,F401
from audit.incidents.models import Incident  # noqa: E402,F401
