"""Helpers of bench/bench_s3_tail.py: a fleet of tables on the S3 test server, a throwaway
database, a steady writer, and the end-state check (nothing lost, nothing twice).

Kept apart from the bench's main loop so each stays short; nothing here is product code.
"""

from __future__ import annotations

import random
import re
import shutil
import tempfile
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

# The writer signs with its own key: the server does not count its requests (s3count.py).
WRITER_KEY = "bench-writer"


def batch(i: int):
    import pyarrow as pa

    return pa.table({"id": pa.array([i, i + 1], pa.int64()), "v": ["a", "b"]})


# --------------------------------------------------------------------------- database


def throwaway_database(url: str | None, work: Path) -> tuple[str, str | None]:
    """(DATABASE_URL, admin url to drop it with): a fresh PostgreSQL database named after the
    one in `url`, or a SQLite file under `work` when `url` is None."""
    if not url:
        return f"sqlite:///{work / 'db.sqlite3'}", None
    import psycopg

    parts = urlsplit(url)
    name = f"{parts.path.lstrip('/') or 'bench'}_{uuid.uuid4().hex[:8]}"
    admin = urlunsplit(parts._replace(scheme="postgresql", path="/postgres"))
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    return urlunsplit(parts._replace(path=f"/{name}")), admin


def drop_database(url: str, admin: str | None) -> None:
    if admin is None:
        return
    import psycopg

    name = urlsplit(url).path.lstrip("/")
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


# --------------------------------------------------------------------------- fleet


def write_fleet(server, bucket: str, n: int, idle: int = 0, threads: int = 16) -> list[str]:
    """n one-commit tables: one table written locally by deltalake, its files copied under n
    prefixes in parallel (a table per prefix, as delta-rs would have written it). The first
    `idle` ones (prefix `i`) have their commit dated two days back: idle by the default
    AUDIT_IDLE_AFTER_SECONDS, so the tail backs off from them (audit/tail/polling.py)."""
    from deltalake import write_deltalake

    template = Path(tempfile.mkdtemp(prefix="s3-fleet-"))
    try:
        write_deltalake(str(template), batch(0))
        files = [
            (p.relative_to(template).as_posix(), p.read_bytes())
            for p in sorted(template.rglob("*"))
            if p.is_file()
        ]
    finally:
        shutil.rmtree(template, ignore_errors=True)
    old = str(int((time.time() - 2 * 86400) * 1000)).encode()
    backdated = [
        (rel, re.sub(rb'"timestamp":\d+', b'"timestamp":' + old, data)) for rel, data in files
    ]
    local = threading.local()

    def put(i: int) -> str:
        client = getattr(local, "client", None) or server.boto()
        local.client = client
        prefix = f"i{i:04d}" if i < idle else f"t{i:04d}"
        for rel, data in backdated if i < idle else files:
            client.put_object(Bucket=bucket, Key=f"{prefix}/{rel}", Body=data)
        return f"s3://{bucket}/{prefix}"

    with ThreadPoolExecutor(max_workers=threads) as pool:
        return list(pool.map(put, range(n)))


def register_fleet(uris: list[str]) -> list[int]:
    """Register the tables in bulk (the rows register_table makes, without reading each log:
    the workers' first tick reads it)."""
    from audit.models import Table
    from audit.trust.paths import check_allowed

    rows = [
        Table(
            uri=check_allowed(uri),
            name=uri.rsplit("/", 1)[-1],
            status=Table.Status.INGESTING,
            latest_version_in_log=0,
            first_available_version=0,
        )
        for uri in uris
    ]
    Table.objects.bulk_create(rows, batch_size=500)
    ids = dict(Table.objects.values_list("uri", "id"))
    return [ids[row.uri] for row in rows]


# --------------------------------------------------------------------------- writer


@dataclass
class Written:
    table_id: int
    uri: str
    version: int
    landed: float  # wall clock when the write returned (the commit file is visible)
    stored: float | None = None


@dataclass
class Writer:
    """Appends at a steady rate to random tables (never two in flight on one table)."""

    server: object
    tables: list[tuple[int, str]]
    rate: float
    samples: int
    written: list[Written] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    _next: dict[str, int] = field(default_factory=dict)
    _busy: set[str] = field(default_factory=set)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def run(self, on_half=None) -> None:
        started = time.time()
        with ThreadPoolExecutor(max_workers=8, thread_name_prefix="writer") as pool:
            for i in range(self.samples):
                delay = started + i / self.rate - time.time()
                if delay > 0:
                    time.sleep(delay)
                if on_half is not None and i == self.samples // 2:
                    on_half()
                pool.submit(self._one, i)

    def _pick(self) -> tuple[int, str, int]:
        with self._lock:
            while True:
                table_id, uri = random.choice(self.tables)
                if uri not in self._busy:
                    self._busy.add(uri)
                    version = self._next.get(uri, 1)
                    return table_id, uri, version

    def _one(self, i: int) -> None:
        from deltalake import write_deltalake

        table_id, uri, version = self._pick()
        try:
            options = {**self.server.options, "aws_access_key_id": WRITER_KEY}
            write_deltalake(uri, batch(i + 1), mode="append", storage_options=options)
            landed = time.time()
            with self._lock:
                self._next[uri] = version + 1
                self.written.append(Written(table_id, uri, version, landed))
        except Exception as err:  # reported at the end: a lost write is not a lost commit
            self.errors.append(f"{uri}: {type(err).__name__}: {err}")
        finally:
            with self._lock:
                self._busy.discard(uri)

    def expected_versions(self) -> dict[str, int]:
        with self._lock:
            return dict(self._next)


def watch_stored(writer: Writer, done: threading.Event, timeout: float) -> None:
    """Stamp each written commit with the time its Commit row is first seen (polled every 20 ms)."""
    from django.db.models import Q

    from audit.models import Commit

    while True:
        with writer._lock:
            pending = [w for w in writer.written if w.stored is None]
        if not pending and done.is_set():
            return
        if pending:
            query = Q()
            for w in pending:
                query |= Q(table_id=w.table_id, version=w.version)
            seen = set(Commit.objects.filter(query).values_list("table_id", "version"))
            now = time.time()
            for w in pending:
                if (w.table_id, w.version) in seen:
                    w.stored = now
                elif now - w.landed > timeout:
                    raise SystemExit(f"{w.uri} v{w.version} not stored after {timeout:.0f}s")
        time.sleep(0.02)


def check_end_state(writer: Writer, n_tables: int, compare: int) -> str:
    """Nothing lost, nothing twice: every table holds versions 0..last exactly once, the same
    as the CLI on the `compare` tables written to most (stored view = CLI view)."""
    from django.db.models import Count, Max

    from audit.models import Commit, Finding, Table
    from tests.support.tail_views import cli_json, cli_view, stored_view

    expected = writer.expected_versions()
    per_table = dict(
        Commit.objects.values("table__uri")
        .annotate(n=Count("id"), top=Max("version"))
        .values_list("table__uri", "n")
    )
    assert len(per_table) == n_tables, f"{n_tables - len(per_table)} tables with no commit"
    for uri, n in per_table.items():
        want = expected.get(uri, 1)
        assert n == want, f"{uri}: {n} commits stored, {want} written"
    twice = (
        Finding.objects.values("table_id", "kind", "version", "related_versions", "status")
        .annotate(n=Count("id"))
        .filter(n__gt=1, status="open")
    )
    assert not twice.exists(), f"findings stored twice: {list(twice[:5])}"
    busiest = sorted(expected, key=expected.get, reverse=True)[:compare]
    deadline = time.time() + 120  # whole-table findings are refreshed every few seconds
    while Table.objects.filter(uri__in=busiest, table_findings_dirty=True).exists():
        assert time.time() < deadline, "table-level findings never refreshed"
        time.sleep(0.5)
    for uri in busiest:
        table = Table.objects.get(uri=uri)
        report = cli_json(uri)
        assert report is not None, f"the CLI refused {uri}"
        assert stored_view(table) == cli_view(report), f"{uri}: stored != CLI"
    return (
        f"end state: {sum(per_table.values())} commits on {n_tables} tables, each once; "
        f"stored == CLI on the {len(busiest)} busiest tables"
    )
