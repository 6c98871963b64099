"""Never-existed snapshots proven from files deltalake rewrote.

Real deltalake writers with stale DeltaTable handles race fresh writers that rewrite files
(UPDATE, DELETE, MERGE, OPTIMIZE: their outputs hold `string_view`). A serial replay of the log
is the oracle: a DELETE at version v left a never-existed snapshot exactly when the table at v
still holds rows its predicate matches (run serially on v-1 it would have removed them all).
Every such snapshot must be reported and confirmed by the witness, with the right row count.
"""

from __future__ import annotations

import random
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable, write_deltalake
from deltalake.exceptions import CommitFailedError, DeltaError

from audit.core.audit import audit_history
from audit.core.history.summary import load_history
from tests.support.scenarios import DAY1, _create, rows

SNAPSHOT = {"delta.isolationLevel": "snapshotIsolation"}


def _never_existed(path: str) -> dict[int, Any]:
    result = audit_history(load_history(path))
    return {f.version: f for f in result.findings if f.kind == "never_existed_snapshot"}


def test_a_stale_delete_is_confirmed_from_rows_an_update_rewrote_as_string_view(tmp_path):
    path = str(tmp_path)
    _create(path, partitioned=False, configuration=SNAPSHOT)  # v0 [1, 2, 3], v1 [4, 5]
    stale = DeltaTable(path)  # reads v1
    write_deltalake(path, rows(DAY1, [6, 7, 8]), mode="append")  # v2
    DeltaTable(path).update(updates={"value": "'w'"}, predicate="id = 8")  # v3 rewrites v2's file
    stale.delete("value IN ('v2', 'v6', 'v7')")  # v4, readVersion 1
    never = _never_existed(path)[4]
    assert never.confirmed and never.related_versions == [3]
    assert never.witness["row_count"] == 2
    assert {r["id"] for r in never.witness["sample_rows"]} == {6, 7}
    (rewritten,) = never.witness["files"]
    assert pq.read_schema(tmp_path / rewritten).field("value").type == pa.string_view()


def test_a_stale_delete_with_arithmetic_is_confirmed_from_a_merge_output(tmp_path):
    path = str(tmp_path)
    _create(path, partitioned=False, configuration=SNAPSHOT)
    stale = DeltaTable(path)  # reads v1
    write_deltalake(path, rows(DAY1, [6, 7, 8, 9]), mode="append")  # v2
    source = rows(DAY1, [8, 10])
    (
        DeltaTable(path)
        .merge(source, "t.id = s.id", source_alias="s", target_alias="t")
        .when_matched_update(updates={"value": "'m'"})
        .when_not_matched_insert_all()
        .execute()
    )  # v3 rewrites v2's file
    stale.delete("id % 2 = 1")  # v4: 7 and 9 survive
    never = _never_existed(path)[4]
    assert never.confirmed, never.details
    assert {r["id"] for r in never.witness["sample_rows"]} == {7, 9}


# --------------------------------------------------------------------------- random workload


def _predicates(rng: random.Random) -> tuple[str, Any]:
    choice = rng.randrange(4)
    if choice == 0:
        m, k = rng.choice([2, 3, 4]), rng.randrange(2)
        return f"id % {m} = {k}", lambda r: r["id"] % m == k
    if choice == 1:
        picks = sorted({f"v{rng.randrange(60)}" for _ in range(4)})
        text = ", ".join(f"'{p}'" for p in picks)
        return f"value IN ({text})", lambda r: r["value"] in picks
    if choice == 2:
        low = rng.randrange(60)
        return f"id >= {low} AND id < {low + 8}", lambda r: low <= r["id"] < low + 8
    low = rng.randrange(60)
    return f"upper(value) > 'V{low}'", lambda r: (r["value"] or "").upper() > f"V{low}"


def _step(path: str, rng: random.Random, handles: list[DeltaTable], next_id: list[int]) -> Any:
    """One writer action; returns (version, python predicate) for a committed DELETE."""
    action = rng.choice(["append", "append", "delete", "delete", "update", "merge", "optimize"])
    if action == "append":
        ids = list(range(next_id[0], next_id[0] + rng.randint(1, 4)))
        next_id[0] += len(ids)
        write_deltalake(path, rows(DAY1, ids), mode="append")
    elif action == "update":
        low = rng.randrange(next_id[0])
        DeltaTable(path).update(updates={"value": "'u'"}, predicate=f"id = {low}")
    elif action == "merge":
        ids = [rng.randrange(next_id[0]), next_id[0]]
        next_id[0] += 1
        source = rows(DAY1, ids)
        (
            DeltaTable(path)
            .merge(source, "t.id = s.id", source_alias="s", target_alias="t")
            .when_matched_update(updates={"value": "'m'"})
            .when_not_matched_insert_all()
            .execute()
        )
    elif action == "optimize":
        DeltaTable(path).optimize.compact()
    else:
        text, test = _predicates(rng)
        handle = rng.choice(handles)  # stale: loaded some versions ago
        handles.remove(handle)
        before = DeltaTable(path).version()
        handle.delete(text)
        after = DeltaTable(path).version()
        # delta-rs commits nothing when no row of its snapshot matches.
        return (after, test) if after != before else None
    return None


def _run_workload(path: str, seed: int, steps: int) -> dict[int, Any]:
    rng = random.Random(seed)
    _create(path, partitioned=False, configuration=SNAPSHOT)
    handles: list[DeltaTable] = []
    next_id = [6]
    deletes: dict[int, Any] = {}
    for _ in range(steps):
        if rng.random() < 0.5 or not handles:
            handles.append(DeltaTable(path))  # a writer takes its snapshot now
        try:
            done = _step(path, rng, handles, next_id)
        except (CommitFailedError, DeltaError):
            continue  # delta-rs refused a stale write: nothing committed
        if done is not None:
            deletes[done[0]] = done[1]
    return deletes


@pytest.mark.slow
def test_every_never_existed_snapshot_of_a_random_workload_is_reported_and_confirmed(tmp_path):
    anomalies = 0
    for seed in range(1, 11):
        path = str(tmp_path / f"seed{seed}")
        deletes = _run_workload(path, seed, steps=24)
        expected = _replay_oracle(path, deletes)
        found = _never_existed(path)
        for version, matching in expected.items():
            never = found.get(version)
            assert never is not None, f"seed {seed}: v{version} not reported"
            assert never.confirmed, f"seed {seed}: v{version}: {never.details}"
            assert never.witness["row_count"] == matching, f"seed {seed}: v{version}"
        # And nothing is confirmed that the replay does not see.
        confirmed = {v for v, f in found.items() if f.confirmed}
        assert confirmed <= set(expected), f"seed {seed}: {sorted(confirmed - set(expected))}"
        anomalies += len(expected)
    assert anomalies >= 5, "the workloads produced too few anomalies to test anything"


def _replay_oracle(path: str, deletes: dict[int, Any]) -> dict[int, int]:
    """DELETE version -> rows at that version its predicate matches (0: none, left out)."""
    expected = {}
    for version, test in deletes.items():
        table = DeltaTable(path, version=version).to_pyarrow_table()
        matching = sum(1 for r in table.to_pylist() if test(r))
        if matching:
            expected[version] = matching
    return expected
