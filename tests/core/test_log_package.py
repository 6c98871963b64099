"""Issue 15: the log package keeps every name callers import, and the helpers it shares."""

from __future__ import annotations

import pytest

from audit.core import log, model
from audit.core.errors import CAUSES, DeltaAuditError
from audit.core.history import summary
from audit.core.log.replay import path_key
from audit.core.storage.stores import FileEntry, FolderWalk
from audit.core.vocab import Engine, FindingKind, IsolationLevel, ReadVersionFact, StorageCause

# Every name imported from audit.core.log somewhere in the repository (audit/, workers/,
# frontend/, tests/, bench/) when log.py became a package.
LOG_NAMES = [
    "CLUSTERING_DOMAIN",
    "LAST_CHECKPOINT",
    "LOG_DIR",
    "SIDECAR_DIR",
    "_ACTION_HANDLERS",
    "_COMPACTION",
    "DeltaLog",
    "_Malformed",
    "_apply_other",
    "_check_range",
    "_complete_checkpoints",
    "_decode_path",
    "_partition_values",
    "_sidecar_path",
    "_struct_rows",
    "apply_commit",
    "commit_file_name",
    "empty_state",
    "identity_columns",
    "initial_state",
    "iter_commit_files",
    "iter_commits",
    "list_log",
    "open_log",
    "parse_commit",
    "read_checkpoint",
    "read_commit",
    "replay_log",
    "set_file_time",
]
SUMMARY_NAMES = [
    "EMPTY",
    "History",
    "ISOLATION_PROPERTY",
    "SERIALIZABLE",
    "WRITE_SERIALIZABLE",
    "decode_parameters",
    "detect_engine",
    "effective_isolation_level",
    "history_from_log",
    "load_history",
    "paused_gc",
    "rederive_isolation",
    "summarize_commit",
    "summarize_commits",
    "summarize_log",
]


@pytest.mark.parametrize("name", LOG_NAMES)
def test_log_package_keeps_its_names(name: str) -> None:
    assert hasattr(log, name)


@pytest.mark.parametrize("name", SUMMARY_NAMES)
def test_summary_keeps_its_names(name: str) -> None:
    assert hasattr(summary, name)


def test_vocabulary_aliases_keep_their_values() -> None:
    assert summary.SERIALIZABLE is IsolationLevel.SERIALIZABLE == "Serializable"
    assert summary.WRITE_SERIALIZABLE == "WriteSerializable"
    assert model.SEVERITY_RANK == {"info": 0, "warning": 1, "critical": 2}
    assert "warning" in model.SEVERITY_RANK
    assert model.Fact is ReadVersionFact and model.Engine is Engine
    assert CAUSES == ("access_denied", "not_found", "unreachable", "other")
    assert summary.detect_engine({"engineInfo": "delta-rs.0.17"}) == "delta-rs"
    assert summary.effective_isolation_level(Engine.SPARK, {}) == "Serializable"


def test_finding_kind_accepts_dynamic_health_kinds() -> None:
    finding = model.Finding("health_small_files", "warning", 3, [], True, "s", "e")
    assert finding.key == ("health_small_files", 3, ())
    assert model.Finding(FindingKind.ORPHAN_FILES, "warning", 1, [], True, "", "").kind == (
        "orphan_files"
    )


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
def test_path_key_one_spelling_per_file(path: str, key: str) -> None:
    assert path_key(path) == key


def test_replay_removes_any_spelling_of_an_absolute_path() -> None:
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


def test_folder_walk_is_breadth_first_and_reports_folder_errors() -> None:
    store = _Store({"": ["a", "b"], "a": ["c"], "b": []}, forbidden={"a/c"})
    seen, walk = _walk(store, 100)
    assert seen == ["", "a", "b", "!a/c"]
    assert walk.listings == 3 and not walk.truncated


def test_folder_walk_stops_at_its_budget() -> None:
    seen, walk = _walk(_Store({"": ["a", "b"], "a": [], "b": []}), 2)
    assert seen == ["", "a"] and walk.truncated


def test_folder_walk_raises_the_roots_own_error() -> None:
    with pytest.raises(DeltaAuditError, match="denied"):
        _walk(_Store({}, forbidden={""}), 10)
