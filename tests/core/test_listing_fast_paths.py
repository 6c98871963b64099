"""The log listing's fast paths against the entry-by-entry ones they skip.

A local disk lists `_delta_log` by names alone (no entry object, no stat per commit file), and
a log whose commits have no gap gets its available range without a walk over every version.
Both must give the listing the slow paths give, on every suite table and on odd folders.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from audit.core.errors import DeltaAuditError
from audit.core.log import listing
from audit.core.log.layout import LOG_DIR
from audit.core.log.listing import list_log
from audit.core.storage.stores import LocalStore
from tests.support.paths import every_suite_table


class _EntriesOnly(LocalStore):
    """A local store listed entry by entry (what every store but a plain LocalStore gets)."""


def _listing_or_error(store: LocalStore) -> object:
    try:
        return list_log(store)
    except DeltaAuditError as err:
        return str(err)


def test_it_lists_every_suite_table_as_the_entry_listing_does() -> None:
    tables = every_suite_table()
    assert len(tables) > 100
    for table in tables:
        fast = _listing_or_error(LocalStore(str(table)))
        slow = _listing_or_error(_EntriesOnly(str(table)))
        assert fast == slow, table


def _log(tmp_path: Path, names: list[str], folders: list[str] = ()) -> LocalStore:
    log = tmp_path / LOG_DIR
    log.mkdir()
    for name in names:
        (log / name).write_text('{"commitInfo":{}}\n')
    for name in folders:
        (log / name).mkdir()
    return LocalStore(str(tmp_path))


def test_it_skips_a_folder_named_as_a_checkpoint_and_keeps_one_named_as_a_commit(
    tmp_path: Path,
) -> None:
    store = _log(
        tmp_path,
        [f"{v:020d}.json" for v in range(3)] + ["00000000000000000001.crc", "_last_checkpoint"],
        folders=[
            "00000000000000000003.json",  # a commit's name: kept, reading it fails clearly
            "00000000000000000002.checkpoint.parquet",  # not a checkpoint: skipped
            "_commits",
        ],
    )
    fast = listing._listed_log_files(store)
    slow = listing._sort_log_files(store.list(LOG_DIR, stats=False))
    assert fast == slow._replace(commit_mtimes=dict.fromkeys(slow.commit_mtimes))
    assert sorted(fast.commit_mtimes) == [0, 1, 2, 3]
    assert fast.checkpoint_names == []
    assert fast.has_last_checkpoint


def test_it_refuses_names_that_only_look_like_versions(tmp_path: Path) -> None:
    store = _log(
        tmp_path,
        [
            "00000000000000000000.json",
            "0000000000000000000².json",  # a digit to str.isdigit(), not to int()
            "+0000000000000000001.json",
            "99999999999999999999.json",  # past 64 bits
        ],
    )
    assert list_log(store).commit_versions == [0]
    assert list_log(_EntriesOnly(str(tmp_path))).commit_versions == [0]


def _walked(commits: set[int], checkpoints: set[int]) -> tuple[int, int] | str:
    """_available_range by the walk alone (the fast path taken out)."""
    original = listing._contiguous_range
    listing._contiguous_range = lambda *_: None
    try:
        return listing._available_range(LocalStore("/nonexistent"), commits, checkpoints)
    except DeltaAuditError as err:
        return str(err)
    finally:
        listing._contiguous_range = original


@settings(max_examples=400, deadline=None)
@given(
    st.integers(0, 30),
    st.integers(0, 30),
    st.sets(st.integers(0, 70), max_size=8),
    st.sets(st.integers(0, 70), max_size=4),
)
def test_it_finds_the_available_range_the_walk_finds(
    lo: int, length: int, holes: set[int], checkpoints: set[int]
) -> None:
    commits = set(range(lo, lo + length))
    for gapped in (commits, commits - holes):
        if not gapped and not checkpoints:
            continue
        fast = listing._contiguous_range(gapped, checkpoints)
        if fast is not None:
            assert fast == _walked(gapped, checkpoints)


def test_it_takes_the_fast_path_for_a_log_from_version_zero_or_after_a_checkpoint() -> None:
    assert listing._contiguous_range(set(range(10)), {5}) == (9, 0)
    assert listing._contiguous_range(set(range(11, 20)), {10}) == (19, 10)
    assert listing._contiguous_range(set(range(10, 20)), {10, 9, 7}) == (19, 9)
    assert listing._contiguous_range(set(range(11, 20)), set()) is None  # a gap below
    assert listing._contiguous_range({0, 1, 3}, set()) is None  # a gap inside
    assert listing._contiguous_range(set(range(5)), {8}) is None  # a checkpoint past the end


def test_it_keeps_no_times_for_a_local_listing_but_a_store_with_times_keeps_them(
    tmp_path: Path,
) -> None:
    store = _log(tmp_path, [f"{v:020d}.json" for v in range(3)])
    assert list_log(store).file_modification_times == {}
    timed = list_log(_Timed(str(tmp_path)))
    assert sorted(timed.file_modification_times) == [0, 1, 2]


class _Timed(LocalStore):
    """Lists with each file's time, as object stores do."""

    def list(self, directory: str, stats: bool = True) -> list:
        return [replace(e, modification_time=7) for e in super().list(directory, stats=True)]
