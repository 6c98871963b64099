"""Scenario tables written with the real `deltalake` (delta-rs 1.6.6) writer.

Each `build_<name>(path)` writes a table at `path` whose history contains (or, for the control
scenarios, does not contain) an isolation anomaly, and returns the facts a correct audit must
find. Stale writers are `DeltaTable` objects loaded at an older version that commit after other
writers did; delta-rs then runs its own conflict checker, which lets these through:

* WriteSerializable (`delta.isolationLevel = 'writeSerializable'`, the only spelling delta-rs
  applies) ignores appends whose commitInfo says `isBlindAppend: true`; delta-rs never writes that
  itself, so blind appends pass `CommitProperties(custom_metadata={"isBlindAppend": True})`
  (custom metadata lands at the top level of commitInfo).
* An unconditional DELETE and an overwrite are not checked against concurrent appends at all
  (the overwrite records no readVersion either).

No commit JSON is hand-written: every history here is what delta-rs produced.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import pyarrow as pa
from deltalake import CommitProperties, DeltaTable, write_deltalake
from deltalake.exceptions import CommitFailedError

BLIND = CommitProperties(custom_metadata={"isBlindAppend": True})
WRITE_SERIALIZABLE = {"delta.isolationLevel": "writeSerializable"}
DAY1, DAY2 = "2024-01-01", "2024-01-02"


def rows(day: str, ids: list[int]) -> pa.Table:
    return pa.table(
        {
            "day": pa.array([day] * len(ids), pa.string()),
            "id": pa.array(ids, pa.int64()),
            "value": pa.array([f"v{i}" for i in ids], pa.string()),
        }
    )


def _create(
    path: str, *, partitioned: bool = True, configuration: dict[str, str] | None = None
) -> None:
    write_deltalake(
        path,
        rows(DAY1, [1, 2, 3]),
        partition_by=["day"] if partitioned else None,
        configuration=configuration,
    )
    write_deltalake(path, rows(DAY1, [4, 5]), mode="append")  # v1


def build_ws_reorder_matching(path: str) -> dict[str, Any]:
    """A stale DELETE under WriteSerializable; a concurrent blind append added rows it matches."""
    _create(path, configuration=WRITE_SERIALIZABLE)
    stale = DeltaTable(path)  # reads v1
    write_deltalake(path, rows(DAY1, [10, 11]), mode="append", commit_properties=BLIND)  # v2
    stale.delete("id >= 4")  # v3, readVersion 1
    return {
        "delete_version": 3,
        "append_version": 2,
        "read_version": 1,
        "surviving_ids": {10, 11},
        "predicate": "id >= 4",
    }


def build_ws_reorder_not_matching(path: str) -> dict[str, Any]:
    """As above, but the appended rows do not match the DELETE's predicate."""
    _create(path, configuration=WRITE_SERIALIZABLE)
    stale = DeltaTable(path)
    write_deltalake(path, rows(DAY1, [-2, -1]), mode="append", commit_properties=BLIND)  # v2
    stale.delete("id >= 4")  # v3
    return {"delete_version": 3, "append_version": 2, "read_version": 1}


def build_disjoint_partitions(path: str) -> dict[str, Any]:
    """A stale DELETE of one partition while another partition receives appends (Serializable)."""
    _create(path)
    write_deltalake(path, rows(DAY2, [20, 21]), mode="append")  # v2
    stale = DeltaTable(path)  # reads v2
    write_deltalake(path, rows(DAY2, [22, 23]), mode="append")  # v3, other partition
    write_deltalake(path, rows(DAY2, [24]), mode="append", commit_properties=BLIND)  # v4
    stale.delete(f"day = '{DAY1}' AND id >= 2")  # v5, readVersion 2
    return {"delete_version": 5, "concurrent": [3, 4], "read_version": 2}


def build_stale_unconditional_delete(path: str) -> dict[str, Any]:
    """A DELETE without condition from a stale snapshot: a concurrent append survives it."""
    _create(path, partitioned=False)
    stale = DeltaTable(path)  # v1
    write_deltalake(path, rows(DAY1, [30, 31, 32]), mode="append")  # v2
    stale.delete()  # v3
    return {"delete_version": 3, "append_version": 2, "surviving_ids": {30, 31, 32}}


def build_stale_full_overwrite(path: str) -> dict[str, Any]:
    """An overwrite from a stale snapshot (delta-rs records no readVersion for it)."""
    _create(path)
    stale = DeltaTable(path)  # v1
    write_deltalake(path, rows(DAY2, [40, 41]), mode="append")  # v2
    write_deltalake(stale, rows(DAY1, [99]), mode="overwrite")  # v3
    return {
        "overwrite_version": 3,
        "append_version": 2,
        "surviving_ids": {40, 41},
        "derived_read_version": 1,
    }


def build_stale_update(path: str) -> dict[str, Any]:
    """A stale UPDATE under WriteSerializable; a concurrent blind append added rows it matches."""
    _create(path, partitioned=False, configuration=WRITE_SERIALIZABLE)
    stale = DeltaTable(path)
    write_deltalake(path, rows(DAY1, [50, 51]), mode="append", commit_properties=BLIND)  # v2
    stale.update(updates={"value": "'updated'"}, predicate="id >= 3")  # v3
    return {"update_version": 3, "append_version": 2, "surviving_ids": {50, 51}}


def build_stale_merge(path: str) -> dict[str, Any]:
    """A stale MERGE (delete matched) under WriteSerializable with a concurrent blind append."""
    _create(path, partitioned=False, configuration=WRITE_SERIALIZABLE)
    stale = DeltaTable(path)
    write_deltalake(path, rows(DAY1, [60, 61]), mode="append", commit_properties=BLIND)  # v2
    (
        stale.merge(
            rows(DAY1, [2, 60]),
            f"t.id = s.id AND t.day = '{DAY1}'",
            source_alias="s",
            target_alias="t",
        )
        .when_matched_delete()
        .execute()
    )  # v3: by the history it should have deleted id 60 too
    return {"merge_version": 3, "append_version": 2, "surviving_ids": {60, 61}}


def _small_appends_then_stale_optimize(
    path: str, *, partitioned: bool, configuration: dict[str, str] | None = None
) -> DeltaTable:
    """v0-v3: small appends (three files in DAY1, one in DAY2); v4: OPTIMIZE compacts the
    DAY1 files (dataChange=false removes and one dataChange=false add; the lone DAY2 file is
    left alone). Returns a handle loaded at v3, before the compaction."""
    _create(path, partitioned=partitioned, configuration=configuration)  # v0 [1, 2, 3], v1 [4, 5]
    write_deltalake(path, rows(DAY1, [6]), mode="append")  # v2
    write_deltalake(path, rows(DAY2, [7]), mode="append")  # v3
    stale = DeltaTable(path)  # reads v3
    DeltaTable(path).optimize.compact()  # v4
    return stale


# delta-rs 1.6.6 commits the stale writes below: its conflict checker does not compare the
# files they remove with the ones the concurrent OPTIMIZE already removed. The OPTIMIZE output,
# holding the rows of the files it compacted, survives them.


def build_stale_overwrite_after_optimize(path: str) -> dict[str, Any]:
    """A full overwrite from a snapshot taken before a concurrent OPTIMIZE."""
    stale = _small_appends_then_stale_optimize(path, partitioned=True)
    write_deltalake(stale, rows(DAY1, [99]), mode="overwrite")  # v5, no readVersion
    return {
        "overwrite_version": 5,
        "optimize_version": 4,
        "derived_read_version": 3,
        "surviving_ids": {1, 2, 3, 4, 5, 6},
    }


def build_stale_delete_after_optimize(path: str) -> dict[str, Any]:
    """An unconditional DELETE from a snapshot taken before a concurrent OPTIMIZE."""
    stale = _small_appends_then_stale_optimize(path, partitioned=False)
    stale.delete()  # v5, readVersion 3
    return {"delete_version": 5, "optimize_version": 4, "read_version": 3}


def build_stale_predicated_delete_after_optimize(path: str) -> dict[str, Any]:
    """A DELETE of some DAY1 rows from a snapshot taken before OPTIMIZE compacted DAY1.

    Under Serializable delta-rs refuses this one ("a concurrent transaction added new data":
    it counts the OPTIMIZE output as data its predicate should have read); the table is set to
    `snapshotIsolation`, which skips that check, as its error message itself suggests.
    """
    stale = _small_appends_then_stale_optimize(
        path, partitioned=True, configuration={"delta.isolationLevel": "snapshotIsolation"}
    )
    stale.delete(f"day = '{DAY1}' AND id >= 4")  # v5, readVersion 3
    return {
        "delete_version": 5,
        "optimize_version": 4,
        "predicate": f"day = '{DAY1}' AND id >= 4",
        "surviving_ids": {4, 5, 6},
    }


def build_stale_delete_of_another_partition_after_optimize(path: str) -> dict[str, Any]:
    """A stale DELETE in DAY2 while OPTIMIZE compacted only DAY1: nothing it read was moved."""
    stale = _small_appends_then_stale_optimize(path, partitioned=True)
    stale.delete(f"day = '{DAY2}'")  # v5, readVersion 3
    return {"delete_version": 5, "optimize_version": 4}


def build_sequential_optimize(path: str) -> dict[str, Any]:
    """OPTIMIZE, then an overwrite and (after more appends and OPTIMIZE) a DELETE that read it."""
    _small_appends_then_stale_optimize(path, partitioned=True)  # v4: OPTIMIZE
    write_deltalake(path, rows(DAY1, [100]), mode="overwrite")  # v5
    write_deltalake(path, rows(DAY2, [101]), mode="append")  # v6
    write_deltalake(path, rows(DAY2, [102]), mode="append")  # v7
    DeltaTable(path).optimize.compact()  # v8
    DeltaTable(path).delete()  # v9
    write_deltalake(path, rows(DAY1, [103]), mode="append")  # v10
    return {"latest_version": DeltaTable(path).version(), "optimize_versions": [4, 8]}


def build_sequential(path: str) -> dict[str, Any]:
    """Every writer reads the latest version: appends, deletes, updates, a merge, an overwrite."""
    _create(path, configuration=WRITE_SERIALIZABLE)
    write_deltalake(path, rows(DAY2, [6, 7]), mode="append", commit_properties=BLIND)
    DeltaTable(path).delete("id = 2")
    DeltaTable(path).update(updates={"value": "'u'"}, predicate="id >= 6")
    (
        DeltaTable(path)
        .merge(rows(DAY2, [6, 8]), "t.id = s.id", source_alias="s", target_alias="t")
        .when_matched_delete()
        .when_not_matched_insert_all()
        .execute()
    )
    write_deltalake(path, rows(DAY1, [100]), mode="overwrite")
    write_deltalake(path, rows(DAY2, [101]), mode="append")
    DeltaTable(path).delete()
    return {"latest_version": DeltaTable(path).version()}


def build_thread_storm(path: str, *, threads: int = 4, rounds: int = 4) -> dict[str, Any]:
    """Threads append to and delete from their own partition concurrently, retrying conflicts."""
    write_deltalake(path, rows("p0", [0]), partition_by=["day"])
    errors: list[str] = []
    retries = [0]

    def worker(n: int) -> None:
        day = f"p{n}"
        for r in range(rounds):
            _retry(
                lambda r=r: write_deltalake(
                    path, rows(day, [r * 10 + 1, r * 10 + 2]), mode="append"
                ),
                retries,
            )
            _retry(
                lambda r=r: DeltaTable(path).delete(f"day = '{day}' AND id = {r * 10 + 1}"), retries
            )

    def guarded(n: int) -> None:
        try:
            worker(n)
        except Exception as err:  # surfaced by the caller
            errors.append(repr(err))

    pool = [threading.Thread(target=guarded, args=(n,)) for n in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    if errors:
        raise RuntimeError(f"storm writers failed: {errors[:3]}")
    return {
        "threads": threads,
        "rounds": rounds,
        "retries": retries[0],
        "latest_version": DeltaTable(path).version(),
    }


def _retry(action: Any, retries: list[int], attempts: int = 20) -> None:
    for attempt in range(attempts):
        try:
            action()
            return
        except CommitFailedError:
            retries[0] += 1
            time.sleep(0.01 * (attempt + 1))
    action()


# --------------------------------------------------------------------------- in-memory histories
#
# For rule tests and benchmarks: CommitSummary / History objects built by hand, no disk.


_EMPTY: frozenset = frozenset()


def summary(
    version: int,
    operation: str = "WRITE",
    *,
    read_version: int | None = None,
    isolation_level: str | None = "WriteSerializable",
    blind_append: bool | None = None,
    adds: dict[str, dict[str, str | None]] | None = None,
    removes: dict[str, dict[str, str | None]] | None = None,
    compaction_removes: tuple[str, ...] | dict[str, dict[str, str | None]] = (),
    compaction_adds: tuple[str, ...] = (),
    predicate: str | None = None,
    parameters: dict[str, Any] | None = None,
    metadata_changed: bool = False,
    protocol_changed: bool = False,
    app_ids: dict[str, int] | None = None,
    engine: str = "spark",
    engine_info: str | None = "Apache-Spark/3.5.0 Delta-Lake/3.2.0",
    timestamp: int | None = None,
) -> Any:
    """A CommitSummary. `adds`/`removes` map path -> partition values (dataChange files).

    `compaction_removes` / `compaction_adds` are files without dataChange (OPTIMIZE). Removes
    given as paths take their partitions from Hive-style segments (`day=a/f0`), when all
    have them; as a dict, from its values.
    """
    from audit.core.model import CommitSummary
    from audit.core.predicates import parse_predicate

    adds = adds or {}
    removes = removes or {}
    if blind_append is None:
        blind_append = operation == "WRITE" and not removes and predicate is None and bool(adds)
    params = dict(parameters or {})
    if operation == "WRITE":
        params.setdefault("mode", "Append")
    return CommitSummary(
        version=version,
        timestamp=timestamp if timestamp is not None else 1_700_000_000_000 + version * 1000,
        operation=operation,
        operation_parameters=params,
        operation_metrics={},
        read_version=read_version,
        isolation_level=isolation_level,
        blind_append=blind_append,
        facts={
            "read_version": "recorded" if read_version is not None else "unknown",
            "isolation_level": "recorded",
            "blind_append": "recorded",
            "timestamp": "recorded",
        },
        engine=engine,  # type: ignore[arg-type]
        engine_info=engine_info,
        txn_id=None,
        user_id=None,
        user_name=None,
        job=None,
        cluster_id=None,
        predicate=parse_predicate(predicate) if predicate else None,
        metadata_changed=metadata_changed,
        protocol_changed=protocol_changed,
        app_ids=app_ids or {},
        domains=_EMPTY,
        has_deletion_vectors=False,
        **_file_fields(adds, removes, compaction_removes, compaction_adds),
    )


def _file_fields(
    adds: dict[str, dict[str, str | None]],
    removes: dict[str, dict[str, str | None]],
    compaction_removes: tuple[str, ...] | dict[str, dict[str, str | None]],
    compaction_adds: tuple[str, ...],
) -> dict[str, Any]:
    """The CommitSummary fields that describe the files a commit adds and removes."""
    from audit.core.model import partition_key

    return {
        "files_added": len(adds),
        "files_removed": len(removes),
        "bytes_added": 0,
        "bytes_removed": 0,
        "data_change": bool(adds or removes),
        "added_partitions": frozenset(partition_key(v) for v in adds.values()) if adds else _EMPTY,
        "removed_partitions": frozenset(partition_key(v) for v in removes.values())
        if removes
        else _EMPTY,
        "removed_paths": frozenset(removes) if removes else _EMPTY,
        "removed_paths_all": frozenset(removes) | frozenset(compaction_removes)
        if (removes or compaction_removes)
        else _EMPTY,
        "added_paths": frozenset(adds) if adds else _EMPTY,
        "compacted_paths": frozenset(compaction_adds) if compaction_adds else _EMPTY,
        "compacted_removed_partitions": _compacted_partitions(compaction_removes),
    }


def _compacted_partitions(removes: tuple[str, ...] | dict[str, dict[str, str | None]]) -> Any:
    from audit.core.model import partition_key

    if isinstance(removes, dict):
        return frozenset(partition_key(v) for v in removes.values()) if removes else _EMPTY
    keys = []
    for path in removes:
        segments = [s.partition("=") for s in path.split("/")[:-1]]
        if not segments or not all(sep for _, sep, _ in segments):
            return _EMPTY  # not Hive-style: partitions unknown, as in a summary without them
        keys.append(partition_key({name: value for name, _, value in segments}))
    return frozenset(keys) if keys else _EMPTY


def history(
    summaries: list[Any],
    *,
    partition_columns: list[str] | None = None,
    properties: dict[str, str] | None = None,
    schema: dict[str, str] | None = None,
    clustering_columns: list[str] | None = None,
    table_uri: str = "memory://table",
) -> Any:
    """A History over hand-built summaries (no files; witness checks find nothing to read)."""
    import orjson

    from audit.core.history.summary import History
    from audit.core.model import LogListing, Metadata, Protocol, TableState

    columns = schema or {c: "string" for c in (partition_columns or [])} | {"id": "long"}
    schema_string = orjson.dumps(
        {
            "type": "struct",
            "fields": [
                {"name": n, "type": t, "nullable": True, "metadata": {}} for n, t in columns.items()
            ],
        }
    ).decode()
    metadata = Metadata("id", schema_string, list(partition_columns or []), dict(properties or {}))
    protocol = Protocol(1, 2)
    versions = [s.version for s in summaries]
    latest = versions[-1] if versions else -1
    listing = LogListing(table_uri, versions, {}, [], None, latest, versions[0] if versions else 0)
    state = TableState(
        latest, metadata, protocol, {}, clustering_columns=list(clustering_columns or [])
    )
    return History(
        table_uri,
        listing,
        state,
        list(summaries),
        [(versions[0] if versions else 0, metadata)],
        [(0, protocol)],
        integrity=[],  # no log behind these summaries: nothing to check, said explicitly
    )
