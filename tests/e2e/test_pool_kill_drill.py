"""Kill drill for a pool of workers on object storage: three Celery workers tail tables on moto's
S3 server while a writer commits; one worker is SIGKILLed while it holds a table's claim (so a
step is mid-flight: read, audited, or inside its transaction) and a replacement starts.

The end state must be exactly what the CLI says about every table: every version the writer
made stored once (nothing lost, nothing twice), with the same read and concurrent versions and
the same open findings. The claim is the database row lease (audit/ingest/lease.py), so this runs on
whichever database the tests use (PostgreSQL when TEST_DATABASE_URL names one).
"""

from __future__ import annotations

import os
import random
import time

import pyarrow as pa
import pytest
from deltalake import write_deltalake
from django.db.models import Count

from audit.ingest.tables import register_table
from audit.models import Commit, Finding, Table
from tests.support.tail_views import cli_json, cli_view, stored_view
from tests.support.waiting import wait_for
from tests.support.workers import REDIS_URL, redis_reachable

pytestmark = [pytest.mark.services, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

TABLES = 8
WRITES = 48
WORKERS = ("w1", "w2", "w3")  # beat runs in w1; w2 is the one killed


def _batch(i: int) -> pa.Table:
    return pa.table({"id": pa.array([i, i + 1], pa.int64())})


def _claimed_by(proc) -> int | None:
    """A table whose claim a pool process of `proc` (its process group) holds right now."""
    for table_id, token in Table.objects.exclude(locked_by="").values_list("id", "locked_by"):
        try:
            if os.getpgid(int(token.split(":")[1])) == proc.pid:
                return table_id
        except (ProcessLookupError, ValueError, IndexError):
            continue
    return None


def _write(uris: list[str], written: dict[str, int], options: dict, rng, i: int) -> None:
    uri = rng.choice(uris)
    # Now and then an overwrite: a destructive commit whose window reaches back (tailwindow.py).
    mode = "overwrite" if i % 7 == 6 else "append"
    write_deltalake(uri, _batch(i), mode=mode, storage_options=options)
    written[uri] += 1


def _kill_mid_claim(celery_workers, env: dict[str, str]) -> int | None:
    victim = celery_workers.procs["w2"]
    held = wait_for(lambda: _claimed_by(victim), 30, message="w2 never held a claim", every=0.01)
    celery_workers.kill("w2")
    celery_workers.start("w2", beat=False, **env)
    return held


def test_it_stores_every_commit_once_when_a_pool_worker_is_killed_mid_run(
    s3_server, celery_workers, monkeypatch, settings
):
    bucket = s3_server.create_bucket()
    base = f"s3://{bucket}"
    for key, value in s3_server.env().items():
        monkeypatch.setenv(key, value)
    settings.AUDIT_ALLOWED_ROOTS = [base]
    options = s3_server.options()
    uris = [f"{base}/t{i}" for i in range(TABLES)]
    for uri in uris:
        write_deltalake(uri, _batch(0), storage_options=options)
    tables = {uri: register_table(uri)[0] for uri in uris}
    env = {
        **s3_server.env(),
        "AUDIT_ALLOWED_ROOTS": base,
        "AUDIT_TABLE_FINDINGS_SECONDS": "0",
        # The pool shares each table's listing (audit/tail/shared.py) when Redis is there.
        "AUDIT_LOG_SHARE_URL": REDIS_URL if redis_reachable() else "",
    }
    for name in WORKERS:
        celery_workers.start(name, beat=name == "w1", **env)

    rng = random.Random(29)
    written = dict.fromkeys(uris, 1)
    held = None
    for i in range(1, WRITES + 1):
        _write(uris, written, options, rng, i)
        if i == WRITES // 2:
            held = _kill_mid_claim(celery_workers, env)
        time.sleep(rng.uniform(0, 0.2))

    def caught_up() -> bool:
        return all(
            Commit.objects.filter(table=t).count() == written[uri]
            and not Table.objects.filter(id=t.id, table_findings_dirty=True).exists()
            for uri, t in tables.items()
        )

    wait_for(caught_up, 90, message=f"the pool caught up; {celery_workers.logs()}", every=0.5)
    celery_workers.stop_all()
    assert held is not None
    _assert_equal_to_the_cli(tables, written)


def _assert_equal_to_the_cli(tables: dict[str, Table], written: dict[str, int]) -> None:
    for uri, table in tables.items():
        stored = Commit.objects.filter(table=table)
        assert sorted(stored.values_list("version", flat=True)) == list(range(written[uri]))
        twice = (
            Finding.objects.filter(table=table, status="open")
            .values("kind", "version", "related_versions")
            .annotate(n=Count("id"))
            .filter(n__gt=1)
        )
        assert not twice.exists(), f"{uri}: a finding stored twice"
        want_commits, want_findings = cli_view(cli_json(uri))
        got_commits, got_findings = stored_view(table)
        assert got_commits == want_commits, uri
        assert got_findings == want_findings, uri
    assert sum(written.values()) == TABLES + WRITES
