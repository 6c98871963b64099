"""Kill drill at scale: a worker SIGKILLed three times while backfilling a 50,000-commit log.

A Spark-style log (bench/gen_log.py: concurrent-looking writers with stale read versions, a
checkpoint every 100 commits) is registered; a real Celery worker backfills it in chunks; the
drill SIGKILLs the worker's whole process group when about a quarter, half and three quarters
of the log are stored (so a chunk is usually mid-flight: read, audited, or inside its
transaction), and starts a new worker each time. The end state must be exactly what the CLI
says about the same log: every version stored once, the same read and concurrent versions, and
the same open findings.
"""

from __future__ import annotations

import random
import subprocess
import sys
import time

import pytest
from django.db.models import Count

from audit.ingest.tables import register_table
from audit.models import Commit, Finding, Table
from tests.support.paths import ROOT
from tests.support.tail_views import cli_json, cli_view, stored_view
from tests.support.waiting import wait_for

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

COMMITS = 50_000
WORKER_ENV = {
    "AUDIT_BACKFILL_CHUNK": "2000",
    "AUDIT_CHECK_DATA": "false",  # gen_log writes only the log
    "AUDIT_TABLE_FINDINGS_SECONDS": "0",
    "AUDIT_LOCK_SECONDS": "10",  # how long a killed worker's lock blocks the next one
}


def test_a_worker_killed_three_times_during_a_50k_backfill_ends_equal_to_the_cli(
    celery_workers, tmp_path, settings
):
    settings.AUDIT_ALLOWED_ROOTS = [str(tmp_path)]
    path = tmp_path / "big"
    subprocess.run(
        [sys.executable, str(ROOT / "bench" / "gen_log.py"), str(path), "--commits", str(COMMITS)],
        check=True,
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
    )
    table, _ = register_table(str(path))
    rng = random.Random(16)
    kills = []
    celery_workers.start("w1", **WORKER_ENV)
    for share in (0.25, 0.5, 0.75):

        def reached(share: float = share) -> int | None:
            done = Table.objects.values_list("backfill_done", flat=True).get(id=table.id)
            return done if done >= share * COMMITS else None

        wait_for(reached, 300, message=f"{share:.0%} stored; {celery_workers.logs()}", every=0.1)
        time.sleep(rng.uniform(0, 1.5))  # land somewhere inside the next chunk
        celery_workers.kill("w1")
        kills.append(Table.objects.values_list("backfill_done", flat=True).get(id=table.id))
        celery_workers.start("w1", **WORKER_ENV)

    def finished() -> bool:
        t = Table.objects.get(id=table.id)
        return (
            t.status == "ok" and t.last_seen_version == COMMITS - 1 and not t.table_findings_dirty
        )

    wait_for(finished, 300, message=f"backfill after the kills; {celery_workers.logs()}", every=0.5)
    celery_workers.stop_all()
    print(f"killed at {kills} of {COMMITS} stored commits")
    for killed_at, share in zip(kills, (0.25, 0.5, 0.75), strict=True):
        assert share * COMMITS <= killed_at < (share + 0.25) * COMMITS

    stored = Commit.objects.filter(table=table)
    assert stored.count() == COMMITS
    assert not stored.values("version").annotate(n=Count("id")).filter(n__gt=1).exists()
    assert sorted(stored.values_list("version", flat=True)) == list(range(COMMITS))
    table.refresh_from_db()
    assert table.backfill_target_version is None and table.backfill_rate is None

    settings.AUDIT_CHECK_DATA = False
    report = cli_json(path, "--no-data")
    want_commits, want_findings = cli_view(report)
    got_commits, got_findings = stored_view(table)
    assert got_commits == want_commits
    assert want_findings, "the generated log should hold findings"
    assert got_findings == want_findings
    assert Finding.objects.filter(table=table, status="open").count() == len(want_findings)
