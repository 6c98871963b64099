"""One spelling per file path (log replay) and the breadth-first walk of storage folders."""

from __future__ import annotations

import pytest

from audit.core import log, model
from audit.core.errors import DeltaAuditError
from audit.core.log.replay import path_key
from audit.core.storage.store import FileEntry
from audit.core.storage.stores import FolderWalk
from audit.core.vocab import StorageCause


@pytest.mark.parametrize(
    ("path", "key"),
    [
        ("part-0.parquet", "part-0.parquet"),
        ("file:/t/a.parquet", "/t/a.parquet"),
        ("file:///t/a.parquet", "/t/a.parquet"),
        ("//t/a.parquet", "/t/a.parquet"),
        ("file:rel.parquet", "file:rel.parquet"),
        ("s3://b/a.parquet", "s3://b/a.parquet"),
    ],
)
def test_it_spells_each_file_path_one_way(path: str, key: str) -> None:
    assert path_key(path) == key


def test_it_replays_a_remove_of_any_spelling_of_an_absolute_path() -> None:
    state = log.empty_state()
    add = model.AddFile(path="file:///t/a.parquet", partition_values={})
    state.files[add.path] = add
    log.apply_commit(state, model.Commit(version=0, removes=[model.RemoveFile("/t/a.parquet")]))
    assert state.files == {}


class _Store:
    """A tree of folders; `forbidden` folders fail to list."""

    uri = "mem://root"

    def __init__(self, tree: dict[str, list[str]], forbidden: set[str] = frozenset()):
        self.tree, self.forbidden = tree, forbidden

    def list(self, directory: str, stats: bool = True) -> list[FileEntry]:
        if directory in self.forbidden:
            raise DeltaAuditError("denied", cause=StorageCause.ACCESS_DENIED)
        return [FileEntry(name, None, None, True) for name in self.tree.get(directory, [])]


def _walk(store: _Store, budget: int) -> tuple[list[str], FolderWalk]:
    walk = FolderWalk(store, stats=False, max_listings=budget)  # type: ignore[arg-type]
    seen = []
    for path, depth, entries in walk:
        seen.append(path if not isinstance(entries, DeltaAuditError) else f"!{path}")
        if isinstance(entries, DeltaAuditError):
            continue
        for entry in entries:
            walk.descend(f"{path}/{entry.name}" if path else entry.name, depth + 1)
    return seen, walk


def test_it_walks_folders_breadth_first_and_reports_folder_errors() -> None:
    store = _Store({"": ["a", "b"], "a": ["c"], "b": []}, forbidden={"a/c"})
    seen, walk = _walk(store, 100)
    assert seen == ["", "a", "b", "!a/c"]
    assert walk.listings == 3 and not walk.truncated


def test_it_stops_a_folder_walk_at_its_budget() -> None:
    seen, walk = _walk(_Store({"": ["a", "b"], "a": [], "b": []}), 2)
    assert seen == ["", "a"] and walk.truncated


def test_it_raises_the_roots_own_error_from_a_folder_walk() -> None:
    with pytest.raises(DeltaAuditError, match="denied"):
        _walk(_Store({}, forbidden={""}), 10)
