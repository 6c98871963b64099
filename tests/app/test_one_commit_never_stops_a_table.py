"""One commit never stops a table: numbers a log gives (or that the audit derives from them)
past a column's range, past the calendar or below any version are stored clamped or as
unknown, every page of the table answers, and the commits written after it are still tailed.

Each table is a real delta-rs table with one hand-written commit (tests/support/hand_commits),
as a broken or hostile writer would leave it; the tail runs in-process into the test database
(SQLite, or PostgreSQL with DATABASE_URL).
"""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest
from deltalake import write_deltalake

from audit.health.models import HealthPoint, TableHealth
from audit.ingest.tables import register_table
from audit.models import Commit, Finding, Table
from audit.tail.orphan_scans import scan_table
from audit.tail.step import tail_once
from frontend.templatetags.frontend_tags import filesize, thousands
from tests.support import staged_tables
from tests.support.clients import session_client
from tests.support.hand_commits import log_file, write_commit
from tests.support.ingested import ingest_table
from tests.support.logutil import copy_table
from tests.support.table_pages import answers
from tests.support.tables import rows
from tests.support.tail_views import cli_json

pytestmark = pytest.mark.django_db

INT64_MAX = 2**63 - 1
FAR_FUTURE_MS = 10**17  # a valid long; the year 3170843, which no datetime holds


@pytest.fixture
def root(tmp_path: Path, settings) -> Path:
    settings.AUDIT_ALLOWED_ROOTS = [str(tmp_path)]
    return tmp_path


def _first_add(path: Path) -> dict:
    lines = log_file(path, 0).read_text().splitlines()
    return next(json.loads(x)["add"] for x in lines if '"add"' in x)


def _table_with(path: Path, *actions: dict, info: dict | None = None) -> Path:
    """v0 written by delta-rs, v1 by hand with `actions` (adds of v0's file under new names
    when none are given) and `info` in its commitInfo."""
    write_deltalake(str(path), rows(3))
    add = _first_add(path)
    write_commit(path, 1, *(actions or ({"add": {**add, "path": "v1.parquet"}},)), info=info)
    return path


def _append(path: Path, version: int) -> None:
    """A later, ordinary commit: the one a stopped table would never audit."""
    write_commit(path, version, {"add": {**_first_add(path), "path": f"v{version}.parquet"}})


def _tails_on(table: Table, path: Path, version: int) -> None:
    """The table stored everything so far, takes a later commit, and answers every page."""
    assert (table.status, table.last_seen_version) == (Table.Status.OK, version - 1)
    _append(path, version)
    result = tail_once(table.id)
    table.refresh_from_db()
    assert result.status != "error", result.message
    assert (table.status, table.last_seen_version) == (Table.Status.OK, version)
    assert Commit.objects.filter(table=table, version=version).exists()


def test_it_stores_two_adds_of_size_2_62_clamped_and_tails_on(root: Path, member):
    """Two adds of size 2**62 are a valid log; their sum, 2**63, is past every bigint."""
    path = root / "t"
    write_deltalake(str(path), rows(3))
    add = _first_add(path)
    big = [{"add": {**add, "path": f"big{i}.parquet", "size": 2**62}} for i in range(2)]
    write_commit(path, 1, *big)
    table = ingest_table(path, name="t")
    assert Commit.objects.get(table=table, version=1).bytes_added == INT64_MAX
    points = dict(HealthPoint.objects.filter(table=table).values_list("version", "total_bytes"))
    assert points == {0: add["size"], 1: INT64_MAX}
    assert TableHealth.objects.get(table=table).total_bytes == INT64_MAX
    assert answers(session_client(member), table) == {}
    _tails_on(table, path, 2)


@pytest.mark.parametrize(
    "name",
    [
        "99999999999999999999.0f3c0000-0000-4000-8000-000000000000.json",  # past 64 bits
        "0000000000000000000٥.0f3c0000-0000-4000-8000-000000000000.json",  # an Arabic-Indic 5
    ],
)
def test_it_ignores_a_staged_commit_named_by_no_version_and_tails_on(root: Path, member, name):
    """The lag of a staged commit named 99999999999999999999 was past every bigint: the table
    went to error and no later commit was audited."""
    path = root / "t"
    staged_tables.build(path)
    (path / "_delta_log" / "_staged_commits" / name).write_text('{"commitInfo": {}}\n')
    table = ingest_table(path, name="t")
    health = TableHealth.objects.get(table=table)
    assert (health.publish_lag_versions, health.data["publish_lag"]["latest_staged_version"]) == (
        2,
        5,
    )
    assert answers(session_client(member), table) == {}
    # The catalog publishes staged v4: the tail goes on to it.
    staged = path / "_delta_log" / "_staged_commits"
    shutil.copy(staged / f"{4:020d}.{staged_tables.UUIDS[0]}.json", log_file(path, 4))
    tail_once(table.id)
    table.refresh_from_db()
    assert (table.status, table.last_seen_version) == (Table.Status.OK, 4)


@pytest.fixture
def far_future(root: Path) -> Path:
    """v1 records an in-commit timestamp of 10**17 ms: TIMESTAMP AS OF then resolves times
    to another version than the history's order (a timestamps_out_of_order finding)."""
    info = {"inCommitTimestamp": FAR_FUTURE_MS, "timestamp": FAR_FUTURE_MS}
    return _table_with(root / "t", info=info)


def test_it_words_a_time_outside_the_calendar_as_unknown_in_the_cli(far_future: Path):
    report = cli_json(far_future)
    assert report is not None  # was: "error: cannot audit this table (ValueError: year ...)"
    # Its explanation names the times; the one outside the calendar as "an unknown time"
    # (tests/core/test_log_numbers_at_the_edges.py).
    assert [f["kind"] for f in report["findings"]].count("timestamps_out_of_order") == 1
    assert "3170843" not in json.dumps(report)
    assert report["commits"][1]["timestamp"] == FAR_FUTURE_MS  # kept, as milliseconds


def test_it_scans_a_table_with_a_time_outside_the_calendar(far_future: Path, member):
    """The periodic data scan crashed on it, left the table unscanned and queued it again."""
    table = ingest_table(far_future, name="t")
    scan = scan_table(table)
    assert scan.error == ""
    table.refresh_from_db()
    assert table.orphans_scanned_at is not None
    assert Finding.objects.filter(table=table, kind="timestamps_out_of_order").exists()
    commit = Commit.objects.get(table=table, version=1)
    assert (commit.timestamp, commit.committed_at) == (FAR_FUTURE_MS, None)
    assert answers(session_client(member), table) == {}
    _tails_on(table, far_future, 2)


def test_it_records_a_scan_that_fails_unexpectedly_and_does_not_queue_it_again(
    root: Path, monkeypatch
):
    """A bug of ours on a hostile log ends the scan with a one-line error row (no text of the
    exception: it may quote the file) and the table counts as scanned until it is due again."""
    from audit.tail import orphan_scans

    path = root / "t"
    write_deltalake(str(path), rows(3))
    table = ingest_table(path, name="t")

    def broken(*args, **kwargs):
        raise ValueError("year 3170843 is out of range")

    monkeypatch.setattr(orphan_scans, "scan_data", broken)
    scan = scan_table(table)
    assert scan.error == "internal error while scanning: ValueError"
    table.refresh_from_db()
    assert table.orphans_scanned_at is not None
    assert table.id not in orphan_scans.tables_due()


def test_it_answers_the_commit_page_of_a_num_records_of_1e400(root: Path, member):
    path = root / "t"
    write_deltalake(str(path), rows(3))
    add = _first_add(path)
    # json.dumps would write 1e400 as Infinity; the text is what a writer could put there.
    stats = '{"numRecords": 1e400}'
    write_commit(path, 1, {"add": {**add, "path": "v1.parquet", "stats": stats}})
    table = ingest_table(path, name="t")
    response = session_client(member).get(f"/tables/{table.id}/commits/1/")
    assert response.status_code == 200
    assert answers(session_client(member), table) == {}
    _tails_on(table, path, 2)


def test_it_shows_a_negative_num_records_as_unknown_on_the_commit_page(root: Path, member):
    path = root / "t"
    write_deltalake(str(path), rows(3))
    add = _first_add(path)
    write_commit(path, 1, {"add": {**add, "path": "v1.parquet", "stats": '{"numRecords": -5}'}})
    table = ingest_table(path, name="t")
    page = session_client(member).get(f"/tables/{table.id}/commits/1/").content.decode()
    row = page[page.index("v1.parquet") :].split("</tr>", 1)[0]
    assert "-5" not in row and "—" in row


def test_it_reads_a_read_version_below_minus_one_as_unknown(root: Path, member):
    path = _table_with(root / "t", info={"readVersion": -7, "operation": "DELETE"})
    table = ingest_table(path, name="t")
    commit = Commit.objects.get(table=table, version=1)
    # Not recorded: the audit derives what the unconditional DELETE read, as for a commit
    # that recorded nothing: it left v0's file alive, so it read before v0 (-1).
    assert (commit.read_version, commit.read_version_fact) == (-1, "derived")
    page = session_client(member).get(f"/tables/{table.id}/commits/1/")
    assert page.status_code == 200
    assert "v-7" not in page.content.decode()
    assert answers(session_client(member), table) == {}
    _tails_on(table, path, 2)


def test_it_shows_a_read_version_of_minus_one_as_before_the_first(root: Path, member):
    """Delta's golden deltalog-commit-info records readVersion -1 at v0 (read nothing): kept as
    written (the one-shot report says -1), shown without a link to a version that is none."""
    table = ingest_table(copy_table("golden/deltalog-commit-info", root), name="t")
    assert Commit.objects.get(table=table, version=0).read_version == -1
    page = session_client(member).get(f"/tables/{table.id}/commits/0/")
    assert page.status_code == 200
    assert "before the first version" in page.content.decode()
    assert answers(session_client(member), table) == {}


@pytest.mark.parametrize("value", [float("inf"), float("nan"), 1e400, 1.5, "x", "²", True, None])
def test_its_count_and_size_filters_show_a_dash_for_what_is_no_number(value):
    """The pages' filters take any value a stored JSON document hands them (a witness's row
    count, a stats value): what is no count is "—", never a 500."""
    assert thousands(value) == "—"
    if not isinstance(value, bool | float) or not math.isfinite(value):  # 1.5 B is a size
        assert filesize(value) == "—"


def test_its_count_filter_writes_any_int_with_separators():
    assert (thousands(12345), thousands("12"), thousands(2**70)) == ("12,345", "12", f"{2**70:,}")


def test_it_marks_a_table_whose_tail_fails_unexpectedly_in_error_without_the_exceptions_text(
    root: Path, monkeypatch
):
    """A bug of ours in the audit (tests replace `run_audit`, as tail/step.py says) puts the
    table in error with a line naming the exception's type; its text may quote the log."""
    from audit.tail import step
    from workers.tasks import tail_table

    path = root / "t"
    write_deltalake(str(path), rows(3))
    table, _ = register_table(str(path))

    def broken(*args, **kwargs):
        raise ValueError("year 3170843 is out of range")

    monkeypatch.setattr(step, "run_audit", broken)
    assert (
        tail_table(table.id) == f"table {table.id}: error: internal error while tailing: ValueError"
    )
    table.refresh_from_db()
    assert (table.status, table.last_error) == (
        Table.Status.ERROR,
        "internal error while tailing: ValueError",
    )
    monkeypatch.undo()  # the bug fixed: the next step tails the table
    assert tail_table(table.id).startswith(f"table {table.id}:")
    table.refresh_from_db()
    assert (table.status, table.last_seen_version) == (Table.Status.OK, 0)
