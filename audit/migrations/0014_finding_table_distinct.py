"""PostgreSQL: findings are spread over many tables (`n_distinct` of audit_finding.table_id).

The tables list counts each table's open findings by severity with correlated subqueries
(`audit.models._count_per_table`). When one table holds (nearly) every finding, ANALYZE
records one distinct table_id, the planner prices `table_id = <outer table>` as matching every
finding, and counts through the (status, severity) index instead of (table, status, severity):
each of the 6 counts of each listed table re-read every open finding of that severity. Before
a VACUUM sets the visibility map (a live lake's new findings, a server without autovacuum) no
index-only scan beat it: ~25x the list's PostgreSQL CPU (tests/app/api/test_tables_list_plan.py,
docs/performance.md). A fixed estimate of 1,000 distinct tables makes a count on the table's
own index always the cheaper plan; that is the index every per-table query wants. A literal
`table_id = N` still reads the most-common-values statistics. SQLite: nothing to do.
"""

from django.db import migrations

DISTINCT_TABLES = 1000


def state_the_spread(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    schema_editor.execute(
        f"ALTER TABLE audit_finding ALTER COLUMN table_id SET (n_distinct = {DISTINCT_TABLES})"
    )
    schema_editor.execute("ANALYZE audit_finding")  # the override applies from the next ANALYZE


def forget_the_spread(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    schema_editor.execute("ALTER TABLE audit_finding ALTER COLUMN table_id RESET (n_distinct)")


class Migration(migrations.Migration):
    dependencies = [
        ("audit", "0013_orphan_scan_time_travel"),
    ]

    operations = [
        migrations.RunPython(state_the_spread, forget_the_spread),
    ]
