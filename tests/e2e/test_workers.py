"""Real `celery -A workers worker --beat` processes tailing real deltalake tables.

The workers share the test database (a SQLite file, or test_<name> on PostgreSQL) and use Redis
when reachable, else kombu's SQLAlchemy transport (see tests/support/workers.py).
"""

from __future__ import annotations

import shutil
import time
from collections import Counter

import pytest
from deltalake import DeltaTable, write_deltalake
from django.db.models import Count

from audit import demo
from audit.core.audit import audit_history
from audit.core.history.summary import load_history
from audit.ingest.findings import finding_key
from audit.ingest.tables import register_table
from audit.models import Commit, Finding, FindingFlip, Table
from tests.support.demo_writer import demo_rounds_committing
from tests.support.tables import rows
from tests.support.waiting import wait_for

pytestmark = [pytest.mark.services, pytest.mark.slow, pytest.mark.timeout(240)]


def latest(path) -> int:
    return DeltaTable(str(path)).version()


def stored(table: Table) -> list[int]:
    return list(
        Commit.objects.filter(table=table).order_by("version").values_list("version", flat=True)
    )


def caught_up(table: Table, path) -> bool:
    table.refresh_from_db()
    return table.status == "ok" and table.last_seen_version == latest(path)


def assert_equal_to_log(table: Table, path) -> None:
    """Every version stored exactly once, and the open findings equal a one-shot audit's."""
    versions = stored(table)
    assert versions == list(range(0, latest(path) + 1))
    one_shot = audit_history(load_history(str(path)))
    want = {finding_key(f.kind, f.version, f.related_versions) for f in one_shot.findings}
    got = Finding.objects.filter(table=table, status="open").values_list("key", flat=True)
    assert sorted(got) == sorted(want)
    assert (
        not Finding.objects.values("table", "key").annotate(n=Count("id")).filter(n__gt=1).exists()
    )
    # Every finding was opened exactly once: no chunk was stored twice by racing workers.
    assert (
        not FindingFlip.objects.filter(new_status="open", old_status="")
        .values("finding")
        .annotate(n=Count("id"))
        .filter(n__gt=1)
        .exists()
    )


def make_long_table(delta_table_factory, name: str, commits: int):
    path = delta_table_factory(
        name, partition_by=["day"], configuration={"delta.isolationLevel": "writeSerializable"}
    )
    errors: Counter[str] = Counter()
    for _ in range(4):  # some real races, so there are findings to get right
        demo.round_partitioned(path, errors)
    for i in range(commits - latest(path) - 1):
        write_deltalake(str(path), rows(day=demo.DAYS[i % 2], start=i), mode="append")
    return path


def test_a_table_ingested_while_a_writer_keeps_committing_ends_equal_to_its_log(
    celery_workers, delta_table_factory
):
    path = delta_table_factory(
        "live", partition_by=["day"], configuration={"delta.isolationLevel": "writeSerializable"}
    )
    table, _ = register_table(str(path))
    celery_workers.start("w1", AUDIT_TABLE_FINDINGS_SECONDS="1")

    with demo_rounds_committing(path):
        # While the writers commit, the worker keeps up: rows appear as the log grows.
        wait_for(lambda: Commit.objects.filter(table=table).count() > 5, 30, message="first rows")
        time.sleep(4)
        mid = Commit.objects.filter(table=table).count()
        assert mid > 5

    wait_for(lambda: caught_up(table, path), 30, message=f"catch up; {celery_workers.logs()}")
    time.sleep(2.5)  # the debounced table-level refresh
    wait_for(
        lambda: not Table.objects.get(id=table.id).table_findings_dirty,
        20,
        message="table findings",
    )
    assert_equal_to_log(table, path)


def test_a_backfill_killed_with_sigkill_three_times_ends_equal_to_the_log(
    celery_workers, delta_table_factory
):
    path = make_long_table(delta_table_factory, "long", commits=400)
    target = latest(path)
    table, _ = register_table(str(path))
    # Small chunks and early kill points: the kill must land mid-backfill even on a fast machine.
    env = {
        "AUDIT_BACKFILL_CHUNK": "8",
        "AUDIT_BACKFILL_STEP_SECONDS": "0",  # one chunk per task: the kills land mid-backfill
        "AUDIT_TABLE_FINDINGS_SECONDS": "1",
    }

    for kill_at in (0.15, 0.35, 0.55):
        celery_workers.start("w1", **env)
        wait_for(
            lambda at=kill_at: (
                (Table.objects.get(id=table.id).last_seen_version or -1) >= at * target
            ),
            60,
            message=f"progress to {kill_at:.0%}; {celery_workers.logs()}",
        )
        celery_workers.kill("w1")
        # Right after the crash the database is consistent: rows exactly up to last_seen_version.
        table.refresh_from_db()
        assert stored(table) == list(range(0, table.last_seen_version + 1))
        assert table.status == "backfilling"
        assert 0 < table.backfill_done <= target + 1

    celery_workers.start("w1", **env)
    wait_for(lambda: caught_up(table, path), 90, message=f"finish; {celery_workers.logs()}")
    wait_for(
        lambda: not Table.objects.get(id=table.id).table_findings_dirty,
        20,
        message="table findings",
    )
    assert_equal_to_log(table, path)


def test_two_workers_on_the_same_tables_store_everything_once(celery_workers, delta_table_factory):
    paths = [make_long_table(delta_table_factory, f"t{i}", commits=120) for i in range(3)]
    tables = [register_table(str(p))[0] for p in paths]
    env = {"AUDIT_BACKFILL_CHUNK": "10", "AUDIT_TABLE_FINDINGS_SECONDS": "1"}
    celery_workers.start("w1", **env)
    celery_workers.start("w2", **env)

    for table, path in zip(tables, paths, strict=True):
        wait_for(
            lambda t=table, p=path: caught_up(t, p), 90, message=f"{path}; {celery_workers.logs()}"
        )
    for table in tables:
        wait_for(
            lambda t=table: not Table.objects.get(id=t.id).table_findings_dirty,
            20,
            message="findings",
        )
    for table, path in zip(tables, paths, strict=True):
        assert_equal_to_log(table, path)
    logs = celery_workers.logs()
    assert "busy (another worker holds its lock)" in logs or "dispatched" in logs


def test_broken_tables_go_to_error_while_the_others_keep_being_tailed(
    celery_workers, delta_table_factory
):
    healthy = delta_table_factory("healthy", commits=2)
    vanishing = delta_table_factory("vanishing", commits=2)
    corrupt = delta_table_factory("corrupt", commits=2)
    tables = {p.name: register_table(str(p))[0] for p in (healthy, vanishing, corrupt)}
    celery_workers.start("w1")
    for name, path in (("healthy", healthy), ("vanishing", vanishing), ("corrupt", corrupt)):
        wait_for(lambda t=tables[name], p=path: caught_up(t, p), 30, message=name)

    shutil.rmtree(vanishing)
    bad = corrupt / "_delta_log" / f"{2:020d}.json"
    bad.write_bytes(b"{this is not json\n")
    write_deltalake(str(healthy), rows(start=77), mode="append")

    def status(name):
        return Table.objects.get(id=tables[name].id)

    wait_for(lambda: status("vanishing").status == "error", 20, message="vanished -> error")
    wait_for(lambda: status("corrupt").status == "error", 20, message="corrupt -> error")
    wait_for(
        lambda: caught_up(tables["healthy"], healthy), 20, message="healthy keeps being tailed"
    )
    assert "does not exist" in status("vanishing").last_error
    assert "\n" not in status("corrupt").last_error and status("corrupt").last_error
    write_deltalake(str(healthy), rows(start=88), mode="append")
    wait_for(lambda: caught_up(tables["healthy"], healthy), 20, message="healthy, again")

    # Fixed log -> the table recovers. A table recreated at the same path has a shorter log.
    bad.unlink()
    wait_for(lambda: status("corrupt").status == "ok", 20, message="corrupt table recovers")
    write_deltalake(str(vanishing), rows())
    wait_for(lambda: "shrank" in status("vanishing").last_error, 20, message="recreated -> shrank")
    assert stored(tables["corrupt"]) == [0, 1]
