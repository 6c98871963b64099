"""The store boundary of numbers (audit/ingest/columns.py): what the core derives from log
numbers is exact (Python's ints), and each writer of rows clamps it into its column's range, the
same range on SQLite and PostgreSQL (32 bits for an IntegerField, though SQLite would take 64).
The reachable cases are in tests/app/test_one_commit_never_stops_a_table.py; these give each
writer numbers past every column directly."""

from __future__ import annotations

from pathlib import Path

import pytest
from deltalake import write_deltalake

from audit.core import model
from audit.core.history.summary import load_history
from audit.core.vocab import Severity
from audit.ingest.bulkload import insert_commits
from audit.ingest.commits import commit_values
from audit.ingest.findings import upsert_findings
from audit.ingest.lease import TableLease
from audit.ingest.tables import register_table
from audit.models import Commit, Finding, Table
from tests.support.tables import rows

pytestmark = pytest.mark.django_db

INT32_MAX, INT64_MAX, INT64_MIN = 2**31 - 1, 2**63 - 1, -(2**63)


@pytest.fixture
def table(tmp_path: Path, settings) -> tuple[Table, Path]:
    settings.AUDIT_ALLOWED_ROOTS = [str(tmp_path)]
    write_deltalake(str(tmp_path / "t"), rows(3))
    registered, _ = register_table(str(tmp_path / "t"))
    return registered, tmp_path / "t"


@pytest.mark.parametrize("bulk", [True, False])  # COPY / multi-row INSERT, and row by row
def test_it_clamps_a_commits_counts_and_sums_into_their_columns(table, settings, bulk):
    settings.AUDIT_BULK_INSERT = bulk
    registered, path = table
    summary = load_history(str(path)).summaries[0]
    summary.files_added, summary.files_removed = 2**31, 2**40
    summary.bytes_added, summary.bytes_removed = 2**64, 2**70
    insert_commits([commit_values(registered.id, summary, None)])
    stored = Commit.objects.values(
        "files_added", "files_removed", "bytes_added", "bytes_removed"
    ).get(table=registered, version=0)
    assert stored == {
        "files_added": INT32_MAX,  # PostgreSQL's integer; SQLite stores the same
        "files_removed": INT32_MAX,
        "bytes_added": INT64_MAX,
        "bytes_removed": INT64_MAX,
    }


def test_it_clamps_the_tables_progress_into_its_columns(table):
    registered, _ = table
    lease = TableLease(registered.id)
    assert lease.write(backfill_done=2**64, backfill_start_done=-(2**70))
    registered.refresh_from_db()
    assert (registered.backfill_done, registered.backfill_start_done) == (INT64_MAX, INT64_MIN)


def test_it_clamps_a_findings_version_into_its_column(table):
    registered, _ = table
    found = model.Finding("history_gap", Severity.INFO, 2**64, [1], True, "s", "e")
    assert upsert_findings(registered, [found], scope=None, table_level=True) == (1, 0)
    assert Finding.objects.get(table=registered).version == INT64_MAX
