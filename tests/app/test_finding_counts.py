"""Each table's stored finding counts (FindingCounts, kept by triggers: migration 0017) equal
a count of its findings after every way a finding is written, and the lists show them.

The tables list, the overview and their orderings read these numbers instead of counting each
table's findings on every request; a count that drifted would show a wrong number (or order)
until the next write. So every write path is checked against a count of the rows: the ORM's
create, save, bulk_create, bulk_update, `.update()`, delete and cascade, raw SQL, the model's
acknowledge/unacknowledge, the ingest's upsert, and random sequences of them.
"""

from __future__ import annotations

import random

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.utils import timezone
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from audit.core.vocab import SEVERITY_ORDER
from audit.ingest.findings import finding_key
from audit.ingest.tables import register_table
from audit.models import Finding, FindingCounts, Table, default_project_id
from audit.tail.step import reaudit, tail_once
from tests.support.revealing_tables import build_metadata_change_in_flight_twice

COLUMNS = [f"{part}_{s}" for part in ("open", "attention") for s in SEVERITY_ORDER]


def counted() -> dict[int, dict[str, int]]:
    """Per table with a counts row or a finding: the six numbers, counted from the rows."""
    out: dict[int, dict[str, int]] = {}
    for table_id in Table.objects.values_list("id", flat=True):
        numbers = dict.fromkeys(COLUMNS, 0)
        for status, severity, acked in Finding.objects.filter(table_id=table_id).values_list(
            "status", "severity", "acknowledged_at"
        ):
            if status == "open" and severity in {str(s) for s in SEVERITY_ORDER}:
                numbers[f"open_{severity}"] += 1
                numbers[f"attention_{severity}"] += acked is None
        out[table_id] = numbers
    return out


def stored() -> dict[int, dict[str, int]]:
    rows = {row["table_id"]: row for row in FindingCounts.objects.values("table_id", *COLUMNS)}
    zeros = dict.fromkeys(COLUMNS, 0)
    return {
        table_id: {c: rows.get(table_id, zeros)[c] for c in COLUMNS}
        for table_id in Table.objects.values_list("id", flat=True)
    }


def assert_exact() -> None:
    assert stored() == counted()
    # No row outlives its table.
    assert set(FindingCounts.objects.values_list("table_id", flat=True)) <= set(
        Table.objects.values_list("id", flat=True)
    )


def finding(table: Table, n: int, **fields) -> Finding:
    return Finding(**{**_fields(table, n, "warning", "open"), **fields})


def tables(n: int = 2) -> list[Table]:
    return [Table.objects.create(uri=f"/lake/c{i}", name=f"c{i}", status="ok") for i in range(n)]


@pytest.mark.django_db
def test_it_counts_every_way_a_finding_is_written(owner):
    a, b = tables()
    assert_exact()
    Finding.objects.bulk_create(
        [finding(a, i, severity=str(SEVERITY_ORDER[i % 3])) for i in range(30)]
        + [finding(b, 100 + i, status="resolved") for i in range(5)]
    )
    assert_exact()
    assert FindingCounts.objects.get(table=a).open_critical == 10
    Finding.objects.create(**_fields(a, 50, "critical", "open"))
    assert_exact()

    row = Finding.objects.filter(table=a, severity="info").first()
    row.acknowledge(owner)
    assert_exact()
    row.acknowledge(owner)  # the second is a no-op
    assert_exact()
    row.unacknowledge()
    assert_exact()

    row.severity = "critical"
    row.save()  # every column written: the counts move by the severity only
    assert_exact()
    rows = list(Finding.objects.filter(table=a)[:8])
    for i, r in enumerate(rows):
        r.status = "resolved" if i % 2 else "open"
        r.acknowledged_at = timezone.now() if i % 3 == 0 else None
    Finding.objects.bulk_update(rows, ["status", "acknowledged_at"])
    assert_exact()
    Finding.objects.filter(table=b).update(status="open")
    assert_exact()
    Finding.objects.filter(table=b, version__lt=103).update(table=a)  # moved between tables
    assert_exact()
    Finding.objects.filter(table=a, severity="warning").delete()
    assert_exact()
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO audit_finding (table_id, kind, severity, version, related_versions,"
            " confirmed, summary, explanation, details, key, status, first_seen, last_seen)"
            " VALUES (%s, 'raw', 'info', 7, '[]', %s, 's', '', '{}', 'raw7', 'open', %s, %s)",
            [b.pk, False, timezone.now(), timezone.now()],
        )
    assert_exact()


@pytest.mark.django_db
def test_it_drops_a_deleted_tables_counts_and_keeps_the_others():
    a, b = tables()
    Finding.objects.bulk_create(
        [finding(a, i) for i in range(4)] + [finding(b, i) for i in range(3)]
    )
    a.delete()  # the cascade deletes the findings, then the table
    assert not FindingCounts.objects.filter(table_id=a.pk).exists()
    assert FindingCounts.objects.get(table=b).open_warning == 3
    assert_exact()


_OPS = st.lists(
    st.tuples(
        st.sampled_from(["add", "resolve", "reopen", "ack", "unack", "severity", "delete", "move"]),
        st.integers(0, 1_000),
    ),
    max_size=25,
)


@pytest.mark.django_db
@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(ops=_OPS)
def test_it_stays_exact_under_any_sequence_of_writes(ops):
    Table.objects.all().delete()
    a, b = tables()
    n = 0
    for op, seed in ops:
        rng = random.Random(seed)
        rows = list(Finding.objects.order_by("id"))
        row = rows[seed % len(rows)] if rows else None
        if op == "add" or row is None:
            n += 1
            severity = str(rng.choice(SEVERITY_ORDER))
            status = rng.choice(["open", "resolved"])
            Finding.objects.create(**_fields(rng.choice([a, b]), n, severity, status))
        elif op == "resolve":
            Finding.objects.filter(pk=row.pk).update(status="resolved")
        elif op == "reopen":
            Finding.objects.filter(pk=row.pk).update(status="open")
        elif op == "ack":
            Finding.objects.filter(pk=row.pk).update(acknowledged_at=timezone.now())
        elif op == "unack":
            Finding.objects.filter(pk=row.pk).update(acknowledged_at=None)
        elif op == "severity":
            Finding.objects.filter(pk=row.pk).update(severity=str(rng.choice(SEVERITY_ORDER)))
        elif op == "delete":
            row.delete()
        else:
            Finding.objects.filter(pk=row.pk).update(table=b if row.table_id == a.pk else a)
        assert_exact()


def _fields(table: Table, n: int, severity: str, status: str) -> dict:
    return {
        "table": table,
        "kind": "k",
        "severity": severity,
        "status": status,
        "version": n,
        "summary": "s",
        "key": f"k{n}",
        "last_seen": timezone.now(),
    }


@pytest.mark.django_db
def test_it_counts_what_the_tail_stores_and_the_list_shows_it(tmp_path, settings, client, owner):
    """The ingest's upsert (bulk_create, bulk_update, resolving, reopening) on a real table,
    one commit per step, and the tables list's numbers."""
    settings.AUDIT_ALLOWED_ROOTS = [str(tmp_path)]
    path = tmp_path / "revealed"
    build_metadata_change_in_flight_twice(str(path))
    table, _ = register_table(str(path))
    while tail_once(table.id, chunk=1).more:
        assert_exact()
    assert Finding.objects.filter(table=table, status="open").exists()
    assert_exact()
    key = finding_key("concurrent_metadata_change", 1, [2, 4])
    Finding.objects.filter(table=table, key=key).update(status="resolved")
    reaudit(table.id, start=4, end=4)  # reopens it
    assert_exact()

    client.force_login(owner)
    (listed,) = client.get("/api/tables/").json()["results"]
    numbers = counted()[table.pk]
    for part in ("open", "attention"):
        shown = listed[f"{part}_findings"]
        assert shown == {
            **{str(s): numbers[f"{part}_{s}"] for s in SEVERITY_ORDER},
            "total": sum(numbers[f"{part}_{s}"] for s in SEVERITY_ORDER),
        }
    assert listed["open_findings"]["total"] > 0


@pytest.mark.django_db(transaction=True)
def test_it_starts_from_the_findings_present():
    """Migration 0017 counts the findings of a database it upgrades."""
    # The default project exists before the schema goes back: today's Project model has
    # columns (read_roots) the schema of 0016 lacks, so it cannot be created there.
    default_project_id()
    executor = MigrationExecutor(connection)
    before = [("audit", "0016_table_orphans_scanned_at")]
    executor.migrate(before)
    # The Finding of that schema: today's has columns added since (its incident).
    then = executor.loader.project_state(before).apps.get_model("audit", "Finding")

    def old(table: Table, n: int, **fields) -> Finding:
        values = {**_fields(table, n, "warning", "open"), **fields}
        return then(table_id=values.pop("table").pk, **values)

    try:
        a, b = tables()
        then.objects.bulk_create([old(a, i, severity="critical") for i in range(3)])
        then.objects.bulk_create([old(b, i, acknowledged_at=timezone.now()) for i in range(2)])
    finally:
        executor = MigrationExecutor(connection)
        executor.loader.build_graph()
        executor.migrate(executor.loader.graph.leaf_nodes())
    assert FindingCounts.objects.get(table=a).open_critical == 3
    assert FindingCounts.objects.get(table=b).attention_warning == 0
    assert FindingCounts.objects.get(table=b).open_warning == 2
    assert_exact()
