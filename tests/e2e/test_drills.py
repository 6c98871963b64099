"""Reliability drills: broken logs, a 100 MB commit, a Redis restart, a load test.

Every broken log is made from a real deltalake table in tmp_path, then damaged the way storage,
writers or operators damage logs. Each drill registers a healthy table alongside the broken one
and checks two things: the broken table ends in status "error" with a one-line `last_error`
naming the cause (or, for harmless oddities, keeps being ingested), and the healthy table keeps
being tailed in the same passes. Tails run through the Celery task function `tail_table`
in-process; the slow drills run the real worker (tests/e2e/conftest.py `celery_workers`).
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import threading
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import orjson
import pytest
import requests
from deltalake import DeltaTable, write_deltalake

from audit import demo
from audit.core.runs import tailwindow
from audit.ingest.tables import register_table
from audit.models import Commit, Table
from tests.support.demo_writer import demo_rounds_committing
from tests.support.net import free_port
from tests.support.tables import rows
from tests.support.waiting import wait_for
from workers.tasks import tail_table

pytestmark = pytest.mark.django_db(transaction=True)


def latest(path: Path) -> int:
    """The newest commit version in the log's listing (not deltalake's view: some drills break
    what deltalake would refuse, such as the _last_checkpoint hint)."""
    names = os.listdir(path / "_delta_log")
    return max(int(n[:20]) for n in names if len(n) == 25 and n.endswith(".json"))


def commit_file(path: Path, version: int) -> Path:
    return path / "_delta_log" / f"{version:020d}.json"


def append(path: Path, n: int = 1) -> int:
    for i in range(n):
        write_deltalake(str(path), rows(start=100 + i), mode="append")
    return latest(path)


def tail_pass() -> dict[int, str]:
    """One pass of the beat's work, in-process: the task body for every registered table."""
    return {t: tail_table(t) for t in Table.objects.order_by("id").values_list("id", flat=True)}


def stored_versions(table: Table) -> list[int]:
    return list(
        Commit.objects.filter(table=table).order_by("version").values_list("version", flat=True)
    )


def caught_up(table: Table, path: Path) -> bool:
    table.refresh_from_db()
    return table.status == "ok" and table.last_seen_version == latest(path)


# --------------------------------------------------------------------------- the corpus
# Each damage runs after both tables were ingested once; it returns what the broken table's
# next tail must end with: ("error", words its last_error contains) or ("ok", None).


def truncated_json_line(path: Path):
    v = append(path)
    data = commit_file(path, v).read_bytes()
    commit_file(path, v).write_bytes(data[: len(data) // 2])
    return "error", ["not valid JSON", f"{v:020d}.json"]


def non_utf8_bytes(path: Path):
    v = append(path)
    data = commit_file(path, v).read_bytes().replace(b'"add"', b'"a\xff\xfedd"', 1)
    commit_file(path, v).write_bytes(data)
    return "error", ["not valid UTF-8", f"{v:020d}.json"]


def missing_version_in_the_middle(path: Path):
    v = append(path, 3)
    commit_file(path, v - 1).unlink()
    return "error", [f"missing version {v - 1}"]


def checkpoint_disagrees_with_last_checkpoint(path: Path):
    append(path, 2)
    DeltaTable(str(path)).create_checkpoint()
    checkpoint = latest(path)
    append(path, 2)
    # _last_checkpoint is a hint: one naming a checkpoint that does not exist, with a wrong size.
    hint = {"version": checkpoint + 1, "size": 999, "parts": 2}
    (path / "_delta_log" / "_last_checkpoint").write_bytes(orjson.dumps(hint))
    return "ok", None


def corrupt_checkpoint_after_log_cleanup(path: Path):
    DeltaTable(str(path)).create_checkpoint()  # at the last ingested version
    checkpoint = latest(path)
    append(path)
    (path / "_delta_log" / f"{checkpoint:020d}.checkpoint.parquet").write_bytes(b"PAR1 garbage")
    for version in range(checkpoint):
        commit_file(path, version).unlink()  # log cleanup: the checkpoint is all there is
    return "error", [f"checkpoint {checkpoint}"]


def unknown_action_type(path: Path):
    # The protocol lets a newer writer add action types; readers skip them. The commit is stored.
    v = append(path)
    with commit_file(path, v).open("ab") as fh:
        fh.write(b'\n{"fancyNewAction":{"payload":"<script>x</script>"}}\n')
    return "ok", None


def table_deleted(path: Path):
    shutil.rmtree(path)
    return "error", ["does not exist"]


def symlink_loop(path: Path):
    v = append(path)
    target = commit_file(path, v)
    target.unlink()
    os.symlink(target, target)  # 000..N.json -> itself
    return "error", ["Too many levels of symbolic links"]


def delta_log_symlink_loop(path: Path):
    shutil.rmtree(path / "_delta_log")
    os.symlink(path / "_delta_log", path / "_delta_log")
    return "error", ["_delta_log"]


CORPUS: list[Callable[[Path], tuple[str, list[str] | None]]] = [
    truncated_json_line,
    non_utf8_bytes,
    missing_version_in_the_middle,
    checkpoint_disagrees_with_last_checkpoint,
    corrupt_checkpoint_after_log_cleanup,
    unknown_action_type,
    table_deleted,
    symlink_loop,
    delta_log_symlink_loop,
]


@pytest.mark.parametrize("damage", CORPUS, ids=[d.__name__ for d in CORPUS])
def test_a_broken_log_errors_per_table_while_the_others_keep_being_tailed(
    delta_table_factory, damage
):
    broken_path = delta_table_factory("broken", commits=3)
    healthy_path = delta_table_factory("healthy", commits=2)
    broken, _ = register_table(str(broken_path))  # registered first: tailed first
    healthy, _ = register_table(str(healthy_path))
    tail_pass()
    assert caught_up(broken, broken_path) and caught_up(healthy, healthy_path)

    expected, words = damage(broken_path)
    append(healthy_path)
    lines = tail_pass()
    broken.refresh_from_db()
    if expected == "error":
        assert broken.status == "error", lines
        assert broken.last_error and "\n" not in broken.last_error
        assert "Traceback" not in broken.last_error and "internal error" not in broken.last_error
        for word in words:
            assert word in broken.last_error, broken.last_error
        # Nothing half-stored: the rows end exactly at the stored progress.
        assert stored_versions(broken) == list(range(broken.last_seen_version + 1))
    else:
        assert caught_up(broken, broken_path), broken.last_error
        assert stored_versions(broken) == list(range(latest(broken_path) + 1))
    assert caught_up(healthy, healthy_path), lines

    # ...and on the next passes too: an error is not a wedge for anyone else.
    append(healthy_path, 2)
    tail_pass()
    assert caught_up(healthy, healthy_path)
    broken.refresh_from_db()
    assert broken.status == expected


def test_a_table_deleted_in_the_middle_of_its_tail_errors_cleanly(delta_table_factory, monkeypatch):
    path = delta_table_factory("doomed", commits=3)
    healthy_path = delta_table_factory("healthy", commits=2)
    doomed, _ = register_table(str(path))
    healthy, _ = register_table(str(healthy_path))
    original = tailwindow.history_from_log  # the tail step's reads (audit.core.runs.tailwindow)

    def delete_then_read(*args, **kwargs):
        shutil.rmtree(path, ignore_errors=True)  # between the listing and the reads
        return original(*args, **kwargs)

    monkeypatch.setattr(tailwindow, "history_from_log", delete_then_read)
    line = tail_table(doomed.id)  # listed the log, then the files vanished under it
    monkeypatch.setattr(tailwindow, "history_from_log", original)
    doomed.refresh_from_db()
    assert doomed.status == "error", line
    assert "does not exist" in doomed.last_error and "\n" not in doomed.last_error
    assert not Commit.objects.filter(table=doomed).exists()  # no partial chunk
    tail_table(healthy.id)
    assert caught_up(healthy, healthy_path)


def test_a_fixed_log_recovers_from_error(delta_table_factory):
    path = delta_table_factory("flaky", commits=2)
    table, _ = register_table(str(path))
    tail_pass()
    v = append(path)
    good = commit_file(path, v).read_bytes()
    commit_file(path, v).write_bytes(good[:10])
    tail_pass()
    table.refresh_from_db()
    assert table.status == "error"
    commit_file(path, v).write_bytes(good)
    tail_pass()
    assert caught_up(table, path) and table.last_error == ""


# --------------------------------------------------------------------------- a 100 MB commit


def write_huge_commit(path: Path, megabytes: int = 100) -> int:
    """Append a commit of many add actions (a huge overwrite's worth), `megabytes` long."""
    version = latest(path) + 1
    stats = orjson.dumps(
        {"numRecords": 10, "minValues": {"id": 1}, "maxValues": {"id": 9}, "nullCount": {"id": 0}}
    ).decode()
    info = {"commitInfo": {"timestamp": 1_700_000_000_000, "operation": "WRITE",
                           "operationParameters": {"mode": "Append"}}}  # fmt: skip
    line = (
        '{"add":{"path":"day=2024-01-01/part-%08d-c0ffee.snappy.parquet",'
        '"partitionValues":{"day":"2024-01-01"},"size":123456,"modificationTime":1700000000000,'
        '"dataChange":true,"stats":' + orjson.dumps(stats).decode() + "}}\n"
    )
    target = megabytes * 1024 * 1024
    with commit_file(path, version).open("wb") as fh:
        fh.write(orjson.dumps(info) + b"\n")
        written, n = 0, 0
        while written < target:
            chunk = "".join(line % (n + i) for i in range(10_000)).encode()
            fh.write(chunk)
            written += len(chunk)
            n += 10_000
    return n


def group_rss_mb(pgid: int) -> float:
    """Resident memory of every process in a process group (the worker, its pool, its beat)."""
    total = 0
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if os.getpgid(int(pid)) != pgid:
                continue
            with open(f"/proc/{pid}/status") as fh:
                for line in fh:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1])
        except (OSError, ProcessLookupError, ValueError):
            continue
    return total / 1024


@pytest.mark.slow
@pytest.mark.services
@pytest.mark.timeout(180)
def test_a_100mb_commit_is_ingested_by_the_worker_within_bounds(
    celery_workers, delta_table_factory
):
    big_path = delta_table_factory("big", partition_by=["day"], commits=2)
    healthy_path = delta_table_factory("healthy", commits=2)
    adds = write_huge_commit(big_path)
    size_mb = commit_file(big_path, 2).stat().st_size / 2**20
    assert size_mb >= 100
    big, _ = register_table(str(big_path))
    healthy, _ = register_table(str(healthy_path))
    # A chunk of this size takes tens of seconds: the lock must outlive it (default 120 s).
    proc = celery_workers.start("w1", AUDIT_LOCK_SECONDS="120")
    started = time.monotonic()
    peak = 0.0

    def big_done() -> bool:
        nonlocal peak
        peak = max(peak, group_rss_mb(proc.pid))
        big.refresh_from_db()
        return big.status in ("ok", "error") and big.last_seen_version == 2 or big.status == "error"

    # The healthy table is tailed by the other pool process while the big one is being read.
    wait_for(lambda: caught_up(healthy, healthy_path), 30, message=celery_workers.logs())
    append(healthy_path)
    wait_for(lambda: caught_up(healthy, healthy_path), 30, message="healthy while big is read")
    wait_for(big_done, 90, message=f"100 MB commit; {celery_workers.logs()}", every=0.5)
    elapsed = time.monotonic() - started
    big.refresh_from_db()
    assert big.status == "ok", big.last_error
    assert Commit.objects.get(table=big, version=2).files_added == adds
    print(f"100 MB commit ({adds} adds, {size_mb:.0f} MB): {elapsed:.1f}s, peak RSS {peak:.0f} MB")
    celery_workers.kill("w1")  # it may still be refreshing table-level findings: do not wait
    assert elapsed < 60
    assert peak < 2500


# --------------------------------------------------------------------------- Redis restart


class PrivateRedis:
    """A redis-server of our own on a free port: restarting it disturbs no other test."""

    def __init__(self, tmp: Path):
        self.port = free_port()
        self.tmp = tmp

    def start(self) -> None:
        subprocess.run(
            ["redis-server", "--daemonize", "yes", "--bind", "127.0.0.1", "--port", str(self.port),
             "--save", "", "--appendonly", "no", "--dir", str(self.tmp),
             "--pidfile", str(self.tmp / "redis.pid"), "--logfile", str(self.tmp / "redis.log")],
            check=True,
        )  # fmt: skip
        wait_for(self.ping, 10, message="redis up")

    def ping(self) -> bool:
        out = subprocess.run(
            ["redis-cli", "-p", str(self.port), "ping"], capture_output=True, text=True
        )
        return out.stdout.strip() == "PONG"

    def stop(self) -> None:
        subprocess.run(["redis-cli", "-p", str(self.port), "shutdown", "nosave"], check=False)
        wait_for(lambda: not self.ping(), 10, message="redis down")


@pytest.fixture
def private_redis(tmp_path):
    if shutil.which("redis-server") is None:
        pytest.skip("redis-server is not installed")
    redis = PrivateRedis(tmp_path)
    redis.start()
    yield redis
    if redis.ping():
        redis.stop()


@pytest.mark.slow
@pytest.mark.services
@pytest.mark.timeout(180)
def test_a_redis_restart_during_tailing_loses_nothing(
    celery_workers, delta_table_factory, private_redis
):
    path = delta_table_factory(
        "live", partition_by=["day"], configuration={"delta.isolationLevel": "writeSerializable"}
    )
    table, _ = register_table(str(path))
    broker = f"redis://127.0.0.1:{private_redis.port}/0"
    celery_workers.start("w1", CELERY_BROKER_URL=broker)
    with demo_rounds_committing(path):
        wait_for(lambda: Commit.objects.filter(table=table).exists(), 30, message="first rows")
        private_redis.stop()  # queued tasks are lost: --save "" and no AOF
        time.sleep(3)  # the worker and beat lose their connections; commits keep coming
        before = Commit.objects.filter(table=table).count()
        private_redis.start()
        time.sleep(3)
    # A worker may exit when kombu trips over its lost connection (celery/kombu#582); in
    # production its supervisor (docker compose `restart: unless-stopped`) starts it again.
    # Nothing may be lost either way: the tail resumes from the stored versions.
    deadline = time.monotonic() + 90
    while not caught_up(table, path) and time.monotonic() < deadline:
        if celery_workers.procs["w1"].poll() is not None:
            celery_workers.procs.pop("w1")
            celery_workers.start("w1", CELERY_BROKER_URL=broker)
        time.sleep(0.5)
    assert caught_up(table, path), f"after restart; {celery_workers.logs()}"
    assert Commit.objects.filter(table=table).count() > before
    assert stored_versions(table) == list(range(latest(path) + 1))


# --------------------------------------------------------------------------- load


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_pages_and_api_keep_serving_under_a_bounded_load(
    live_server, delta_table_factory, member, client, settings
):
    # One user at 20 threads would meet the expensive-endpoint throttle (429s, tested in
    # test_request_limits.py); this drill measures serving capacity, so it is off here.
    settings.AUDIT_API_EXPENSIVE_RATE = ""
    path = delta_table_factory(
        "busy", partition_by=["day"], configuration={"delta.isolationLevel": "writeSerializable"}
    )
    errors: Counter[str] = Counter()
    for _ in range(6):
        demo.round_partitioned(path, errors)
    table, _ = register_table(str(path))
    tail_pass()
    assert caught_up(table, path)
    client.force_login(member)
    cookie = client.cookies["sessionid"].value
    urls = [
        "/", f"/tables/{table.id}/", f"/tables/{table.id}/commits/1/", "/findings/",
        f"/tables/{table.id}/status/", f"/tables/{table.id}/analysis/", "/api/tables/",
        f"/api/tables/{table.id}/", f"/api/tables/{table.id}/commits/",
        f"/api/tables/{table.id}/timeline/", "/api/findings/", f"/api/tables/{table.id}/settings/",
    ]  # fmt: skip
    threads, duration = 20, 12.0
    deadline = time.monotonic() + duration
    timings: list[float] = []
    statuses: Counter[int] = Counter()
    failures: list[str] = []
    lock = threading.Lock()

    def hammer(n: int) -> None:
        session = requests.Session()
        session.cookies.set("sessionid", cookie)
        i = n
        while time.monotonic() < deadline:
            url = live_server.url + urls[i % len(urls)]
            i += 1
            began = time.monotonic()
            try:
                response = session.get(url, timeout=15, allow_redirects=False)
                code = response.status_code
            except requests.RequestException as err:
                with lock:
                    failures.append(f"{url}: {type(err).__name__}")
                continue
            with lock:
                timings.append(time.monotonic() - began)
                statuses[code] += 1

    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(hammer, range(threads)))
    timings.sort()
    p95 = timings[int(len(timings) * 0.95) - 1]
    print(
        f"load: {len(timings)} requests in {duration:.0f}s by {threads} threads, "
        f"median {statistics.median(timings) * 1000:.0f} ms, p95 {p95 * 1000:.0f} ms, {statuses}"
    )
    assert not failures, failures[:5]
    assert set(statuses) == {200}, statuses  # no 5xx, and no 302 to the login either
    assert len(timings) >= 100
    assert p95 < 3.0
