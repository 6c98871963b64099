"""Orphan data files (audit/core/data/orphans.py) on real tables, with a writer really killed."""

from __future__ import annotations

import time
from pathlib import Path

from deltalake import DeltaTable, write_deltalake

from audit.core.data.orphans import (
    in_flight_bound_ms,
    list_data_files,
    referenced_among,
    referenced_paths,
    scan_orphans,
)
from audit.core.history.summary import load_history
from audit.core.storage.stores import ArrowStore, open_store
from tests.support.killed_writer import kill_a_writer
from tests.support.tables import rows


def _scan(path: Path, *, min_age_ms: int = 0, **bounds):
    history = load_history(str(path))
    store = open_store(str(path))
    return scan_orphans(
        store,
        referenced_paths(history, str(path)),
        now_ms=int(time.time() * 1000),
        min_age_ms=min_age_ms,
        **bounds,
    )


def test_files_of_a_writer_killed_before_its_commit_are_found_with_bytes(tmp_path):
    write_deltalake(str(tmp_path), rows(5), partition_by=["day"])
    write_deltalake(str(tmp_path), rows(5, start=10), mode="append")
    DeltaTable(str(tmp_path)).delete("id = 1")  # its removed file stays on disk: referenced
    before = _scan(tmp_path)
    assert before.files == 0 and before.listed_files >= 3

    kill_a_writer(tmp_path)
    scan = _scan(tmp_path)
    on_disk = sorted((tmp_path / "day=2024-01-01").glob("part-*-killed-*.parquet"))
    assert scan.files == 3
    assert scan.bytes == sum(p.stat().st_size for p in on_disk) > 0
    assert {s["path"] for s in scan.sample} == {f"day=2024-01-01/{p.name}" for p in on_disk}
    assert scan.oldest <= scan.newest and sum(h[0] for h in scan.hours.values()) == 3
    assert DeltaTable(str(tmp_path)).version() == 2  # nothing committed, nothing deleted
    assert all(p.exists() for p in on_disk)


def test_young_unreferenced_files_are_in_flight_not_orphans(tmp_path):
    write_deltalake(str(tmp_path), rows(5), partition_by=["day"])
    kill_a_writer(tmp_path)
    history = load_history(str(tmp_path))
    scan = _scan(tmp_path, min_age_ms=in_flight_bound_ms(history))
    assert (scan.files, scan.in_flight_files) == (0, 3)


def test_the_listing_is_bounded_and_says_so(tmp_path):
    write_deltalake(str(tmp_path), rows(5), partition_by=["day"])
    kill_a_writer(tmp_path)
    scan = _scan(tmp_path, max_files=2)
    assert scan.truncated and scan.listed_files == 2
    shallow = _scan(tmp_path, max_depth=1)
    assert shallow.truncated and shallow.listed_files == 0  # partition folders not entered
    # The same walk through the object-store code path (pyarrow filesystem listing).
    store = ArrowStore(f"file://{tmp_path}")
    history = load_history(str(tmp_path))
    via_arrow = scan_orphans(
        store,
        referenced_paths(history, str(tmp_path)),
        now_ms=int(time.time() * 1000),
        min_age_ms=0,
    )
    assert via_arrow.files == 3


def test_referenced_among_is_the_referenced_set_cut_to_the_listing(tmp_path):
    write_deltalake(str(tmp_path), rows(5), partition_by=["day"])
    write_deltalake(str(tmp_path), rows(5, start=10), mode="append")
    DeltaTable(str(tmp_path)).delete("id = 1")
    kill_a_writer(tmp_path)
    history = load_history(str(tmp_path))
    listed = list_data_files(open_store(str(tmp_path))).paths()
    whole = referenced_paths(history, str(tmp_path))
    among = referenced_among(history, str(tmp_path), listed)
    assert among == whole & listed and len(among) < len(listed)
    assert referenced_among(history, str(tmp_path), set()) == set()


def test_the_in_flight_bound_reads_the_read_versions_stamp_with_or_without_gaps(tmp_path):
    class Commit:
        def __init__(self, version, read_version, timestamp):
            self.version, self.read_version, self.timestamp = version, read_version, timestamp

    class History:
        def __init__(self, summaries):
            self.summaries = summaries

        def summary(self, version):
            return next((s for s in self.summaries if s.version == version), None)

    hour = 3_600_000
    contiguous = [Commit(3, None, 0), Commit(4, 3, 5 * hour), Commit(5, 2, 9 * hour)]
    assert in_flight_bound_ms(History(contiguous), floor_ms=1) == 10 * hour
    gapped = [Commit(3, None, 0), Commit(5, 3, 7 * hour), Commit(6, 4, 8 * hour)]
    assert in_flight_bound_ms(History(gapped), floor_ms=1) == 14 * hour
    assert in_flight_bound_ms(History([]), floor_ms=7) == 7
