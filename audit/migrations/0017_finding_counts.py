"""Each table's open and needs-attention findings by severity, kept by the database.

The tables list, the overview and their orderings showed six counts per table, each a
correlated COUNT over the table's findings on every request: ~7.6 ms of PostgreSQL CPU per
list of 21 tables over 5,000 findings, the most of a request's cost, and a live lake makes the
list cold on every stored commit (docs/performance.md, "the tables list under a writer").

`audit_findingcounts` holds the six numbers per table. Triggers keep them, in the statement
that writes a finding, whatever writes it (the ORM, bulk_create/bulk_update, `.update()`, raw
SQL, a cascade): a row's part (1 in `open_<severity>` when it is open, and in
`attention_<severity>` when also not acknowledged) is added on insert, subtracted on delete,
and moved on an update that changes its status, severity, acknowledgement or table. A deleted
table's row goes with it. The counts start from the findings present.
"""

from django.db import migrations, models

SEVERITIES = ("info", "warning", "critical")  # audit.core.vocab.SEVERITY_ORDER, frozen here
COLUMNS = [f"{part}_{s}" for part in ("open", "attention") for s in SEVERITIES]


def _parts(row: str) -> list[str]:
    """The six 0/1 parts of a finding row (`NEW` or `OLD`), in COLUMNS order."""
    parts = []
    for part in ("open", "attention"):
        for severity in SEVERITIES:
            test = f"{row}.status = 'open' AND {row}.severity = '{severity}'"
            if part == "attention":
                test += f" AND {row}.acknowledged_at IS NULL"
            parts.append(f"CASE WHEN {test} THEN 1 ELSE 0 END")
    return parts


def _add(row: str) -> str:
    values = ", ".join(_parts(row))
    sums = ", ".join(f"{c} = audit_findingcounts.{c} + excluded.{c}" for c in COLUMNS)
    return (
        f"INSERT INTO audit_findingcounts (table_id, {', '.join(COLUMNS)})"
        f" VALUES ({row}.table_id, {values})"
        f" ON CONFLICT (table_id) DO UPDATE SET {sums}"
    )


def _subtract(row: str) -> str:
    sets = ", ".join(f"{c} = {c} - {p}" for c, p in zip(COLUMNS, _parts(row), strict=True))
    return f"UPDATE audit_findingcounts SET {sets} WHERE table_id = {row}.table_id"


# An update moves the counts only when one of these changes (a re-found finding's refresh
# rewrites status and severity to the same values on every tail step).
_WATCHED = "status, severity, acknowledged_at, table_id"


def _changed(distinct: str) -> str:
    return " OR ".join(
        [
            f"OLD.status {distinct} NEW.status",
            f"OLD.severity {distinct} NEW.severity",
            f"(OLD.acknowledged_at IS NULL) {distinct} (NEW.acknowledged_at IS NULL)",
            f"OLD.table_id {distinct} NEW.table_id",
        ]
    )


_BACKFILL = (
    f"INSERT INTO audit_findingcounts (table_id, {', '.join(COLUMNS)})"
    f" SELECT table_id, {', '.join(f'SUM({p})' for p in _parts('f'))}"
    " FROM audit_finding f GROUP BY table_id"
)

SQLITE = [
    "CREATE TRIGGER audit_finding_counts_insert AFTER INSERT ON audit_finding"
    f" BEGIN {_add('NEW')}; END",
    f"CREATE TRIGGER audit_finding_counts_update AFTER UPDATE OF {_WATCHED} ON audit_finding"
    f" WHEN {_changed('IS NOT')} BEGIN {_subtract('OLD')}; {_add('NEW')}; END",
    "CREATE TRIGGER audit_finding_counts_delete AFTER DELETE ON audit_finding"
    f" BEGIN {_subtract('OLD')}; END",
    "CREATE TRIGGER audit_table_counts_delete AFTER DELETE ON audit_table"
    " BEGIN DELETE FROM audit_findingcounts WHERE table_id = OLD.id; END",
]
SQLITE_DROP = [
    "DROP TRIGGER IF EXISTS audit_finding_counts_insert",
    "DROP TRIGGER IF EXISTS audit_finding_counts_update",
    "DROP TRIGGER IF EXISTS audit_finding_counts_delete",
    "DROP TRIGGER IF EXISTS audit_table_counts_delete",
]

POSTGRESQL = [
    f"""CREATE FUNCTION audit_finding_counts() RETURNS trigger AS $$
BEGIN
    IF TG_OP <> 'INSERT' THEN
        {_subtract("OLD")};
    END IF;
    IF TG_OP <> 'DELETE' THEN
        {_add("NEW")};
    END IF;
    RETURN NULL;
END
$$ LANGUAGE plpgsql""",
    """CREATE FUNCTION audit_table_counts_delete() RETURNS trigger AS $$
BEGIN
    DELETE FROM audit_findingcounts WHERE table_id = OLD.id;
    RETURN NULL;
END
$$ LANGUAGE plpgsql""",
    "CREATE TRIGGER audit_finding_counts_insert AFTER INSERT ON audit_finding"
    " FOR EACH ROW EXECUTE FUNCTION audit_finding_counts()",
    f"CREATE TRIGGER audit_finding_counts_update AFTER UPDATE OF {_WATCHED} ON audit_finding"
    f" FOR EACH ROW WHEN ({_changed('IS DISTINCT FROM')})"
    " EXECUTE FUNCTION audit_finding_counts()",
    "CREATE TRIGGER audit_finding_counts_delete AFTER DELETE ON audit_finding"
    " FOR EACH ROW EXECUTE FUNCTION audit_finding_counts()",
    "CREATE TRIGGER audit_table_counts_delete AFTER DELETE ON audit_table"
    " FOR EACH ROW EXECUTE FUNCTION audit_table_counts_delete()",
]
POSTGRESQL_DROP = [
    "DROP TRIGGER IF EXISTS audit_finding_counts_insert ON audit_finding",
    "DROP TRIGGER IF EXISTS audit_finding_counts_update ON audit_finding",
    "DROP TRIGGER IF EXISTS audit_finding_counts_delete ON audit_finding",
    "DROP TRIGGER IF EXISTS audit_table_counts_delete ON audit_table",
    "DROP FUNCTION IF EXISTS audit_finding_counts()",
    "DROP FUNCTION IF EXISTS audit_table_counts_delete()",
]


def create_triggers(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    statements = {"sqlite": SQLITE, "postgresql": POSTGRESQL}.get(vendor)
    if statements is None:
        raise NotImplementedError(f"finding counts: no triggers for {vendor}")
    for statement in [*statements, _BACKFILL]:
        schema_editor.execute(statement)


def drop_triggers(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    for statement in {"sqlite": SQLITE_DROP, "postgresql": POSTGRESQL_DROP}.get(vendor, []):
        schema_editor.execute(statement)


class Migration(migrations.Migration):
    dependencies = [
        ("audit", "0016_table_orphans_scanned_at"),
    ]

    operations = [
        migrations.CreateModel(
            name="FindingCounts",
            fields=[
                (
                    "table",
                    models.OneToOneField(
                        db_constraint=False,
                        on_delete=models.deletion.DO_NOTHING,
                        primary_key=True,
                        related_name="finding_counts",
                        serialize=False,
                        to="audit.table",
                    ),
                ),
                ("open_info", models.BigIntegerField(default=0)),
                ("open_warning", models.BigIntegerField(default=0)),
                ("open_critical", models.BigIntegerField(default=0)),
                ("attention_info", models.BigIntegerField(default=0)),
                ("attention_warning", models.BigIntegerField(default=0)),
                ("attention_critical", models.BigIntegerField(default=0)),
            ],
        ),
        migrations.RunPython(create_triggers, drop_triggers),
    ]
