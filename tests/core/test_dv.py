"""Deletion vectors decoded (audit/core/data/dv.py) and what the audit makes of them: dv_integrity
findings, and the deletion-vector-aware re-check of concurrent DML commits."""

from __future__ import annotations

import orjson
import pytest
from deltalake import DeltaTable, QueryBuilder

from audit.core.anomalies.dv_integrity import dv_integrity_findings
from audit.core.audit import audit_history
from audit.core.data.dv import Loader, Unusable
from audit.core.history.summary import load_history
from audit.core.log import open_log
from tests.support import dv_tables as t
from tests.support.logutil import all_table_dirs, table


def loader_for(table_uri, roots=None):
    """A vector loader opening files as the witness does (inside `roots`)."""
    from audit.core.data.witness import DataFiles

    return Loader(DataFiles(table_uri, roots))


DV_GOLDENS = [
    "golden/log-replay-dv-key-cases",
    "golden/dv-partitioned-with-checkpoint",
    "golden/dv-with-columnmapping",
]


def _kinds(path, *kinds):
    result = audit_history(load_history(str(path)))
    return [f for f in result.findings if f.kind in kinds]


# --------------------------------------------------------------------------- decoding


@pytest.mark.parametrize("name", DV_GOLDENS)
def test_it_decodes_the_golden_tables_vectors_to_deltalakes_row_counts(name):
    path = str(table(name))
    state = open_log(path).snapshot()
    loader = loader_for(path)
    assert any(add.deletion_vector for add in state.files.values())
    live = 0
    for add in state.files.values():
        positions = loader.get(add.deletion_vector)
        assert not isinstance(positions, Unusable), positions
        if add.deletion_vector:
            assert len(positions) == add.deletion_vector["cardinality"]
        live += orjson.loads(add.stats)["numRecords"] - len(positions)
    query = QueryBuilder().register("t", DeltaTable(path)).execute("select count(*) as n from t")
    assert live == query.read_all()["n"][0].as_py()


def test_it_reads_inline_prefixed_and_absolute_vectors(tmp_path):
    t.create(tmp_path)
    prefixed = t.stored_dv(tmp_path, [0, 7, 2**33], prefix="ab")
    assert (tmp_path / "ab").is_dir()
    absolute = t.stored_dv(tmp_path / "elsewhere", [4])
    name = f"deletion_vector_{_uuid_of(absolute)}.bin"
    absolute = {**absolute, "storageType": "p",
                "pathOrInlineDv": (tmp_path / "elsewhere" / name).as_uri()}  # fmt: skip
    loader = loader_for(str(tmp_path))
    assert list(loader.get(t.inline_dv([1, 3, 5]))) == [1, 3, 5]
    assert list(loader.get(prefixed)) == [0, 7, 2**33]
    assert list(loader.get(absolute)) == [4]


def _uuid_of(descriptor):
    import uuid

    from audit.core.data.dv import z85_decode

    return uuid.UUID(bytes=z85_decode(descriptor["pathOrInlineDv"][-20:]))


def test_it_refuses_a_vector_whose_checksum_does_not_match(tmp_path):
    t.create(tmp_path)
    descriptor = t.stored_dv(tmp_path, [1, 2])
    (dv_file,) = tmp_path.glob("deletion_vector_*.bin")
    body = bytearray(dv_file.read_bytes())
    body[-6] ^= 0x01  # a bitmap byte: the positions change, the CRC no longer matches
    dv_file.write_bytes(bytes(body))
    found = loader_for(str(tmp_path)).get(descriptor)
    assert isinstance(found, Unusable) and "checksum" in found.reason


def test_it_refuses_bytes_without_the_magic_number(tmp_path):
    descriptor = t.inline_dv([1])
    data = b"\0\0\0\0" + t.bitmap_bytes([1])[4:]
    descriptor = {**descriptor, "pathOrInlineDv": t.z85_encode(data)}
    found = loader_for(str(tmp_path)).get(descriptor)
    assert isinstance(found, Unusable) and "magic number" in found.reason


# --------------------------------------------------------------------------- dv_integrity


def test_it_finds_two_live_entries_of_one_file(tmp_path):
    t.create(tmp_path)
    first = t.stored_dv(tmp_path, [1])
    t.delete(tmp_path, 1, 0, 1, t.remove(), t.add(first))
    # A second DELETE that read v0 retires the vector-less entry v1 already retired.
    t.delete(tmp_path, 2, 0, 2, t.remove(), t.add(t.stored_dv(tmp_path, [2])))
    (finding,) = dv_integrity_findings(load_history(str(tmp_path)))
    assert (finding.version, finding.related_versions, finding.severity) == (2, [1], "critical")
    assert finding.confirmed
    assert finding.witness["problem"] == "two_live_entries"
    assert finding.witness["rows_counted_twice"] == 8  # rows 0, 3..9 are read by both entries
    assert finding.witness["row_positions"] == [1, 2]  # each deleted in one entry only


def test_it_finds_positions_past_the_files_records(tmp_path):
    t.create(tmp_path)
    t.delete(tmp_path, 1, 0, 1, t.remove(), t.add(t.stored_dv(tmp_path, [1, 12])), rows=2)
    (finding,) = dv_integrity_findings(load_history(str(tmp_path)))
    assert finding.witness["problem"] == "beyond_records"
    assert finding.witness["row_positions"] == [12]
    assert finding.severity == "critical"


def test_it_finds_a_cardinality_the_vector_does_not_have(tmp_path):
    t.create(tmp_path)
    lying = t.stored_dv(tmp_path, [1], cardinality=2)
    t.delete(tmp_path, 1, 0, 1, t.remove(), t.add(lying), rows=2)
    (finding,) = dv_integrity_findings(load_history(str(tmp_path)))
    assert finding.witness == {
        "problem": "cardinality", "path": t.DATA_FILE, "decoded": 1, "recorded": 2,
    }  # fmt: skip
    assert finding.severity == "warning"


def test_it_finds_a_delete_whose_deleted_rows_metric_disagrees(tmp_path):
    t.create(tmp_path)
    t.delete(tmp_path, 1, 0, 1, t.remove(), t.add(t.stored_dv(tmp_path, [1])), rows=3)
    (finding,) = dv_integrity_findings(load_history(str(tmp_path)))
    assert (finding.witness["problem"], finding.witness["decoded"]) == ("deleted_rows", 1)


def test_it_finds_nothing_on_sequential_deletes(tmp_path):
    t.create(tmp_path)
    first = t.stored_dv(tmp_path, [1])
    t.delete(tmp_path, 1, 0, 1, t.remove(), t.add(first))
    t.delete(tmp_path, 2, 1, 2, t.remove(first), t.add(t.inline_dv([1, 2])))
    # The protocol's statistics replacement: the same (path, vector) added again.
    restats = t.add(t.inline_dv([1, 2]))
    t.commit(
        tmp_path, 3, {"add": {**restats["add"], "dataChange": False}}, operation="COMPUTE STATS"
    )
    assert dv_integrity_findings(load_history(str(tmp_path))) == []
    assert _kinds(tmp_path, "never_existed_snapshot", "missed_conflict", "dv_integrity") == []


@pytest.mark.parametrize("name,path", all_table_dirs(), ids=[n for n, _ in all_table_dirs()])
def test_it_finds_no_dv_integrity_on_the_test_tables(name, path):
    try:
        history = load_history(str(path))
    except Exception:  # noqa: BLE001  (unreadable on purpose: corrupt / empty test tables)
        pytest.skip("not a readable table")
    assert dv_integrity_findings(history) == []


# --------------------------------------------------------------------------- the re-check


def test_it_finds_the_rows_an_unsound_rebase_brought_back(tmp_path):
    t.create(tmp_path)
    winner = t.stored_dv(tmp_path, [1])
    t.delete(tmp_path, 1, 0, 1, t.remove(), t.add(winner))
    # Rebased onto v1 (it retires v1's vector) but its vector lacks v1's deleted row.
    t.delete(tmp_path, 2, 0, 2, t.remove(winner), t.add(t.stored_dv(tmp_path, [2])))
    (finding,) = _kinds(tmp_path, "never_existed_snapshot")
    assert (finding.version, finding.related_versions) == (2, [1])
    assert finding.confirmed and finding.severity == "critical"
    assert finding.witness["method"] == "deletion_vectors"
    assert finding.witness["row_positions"] == {t.DATA_FILE: [1]}
    assert finding.witness["sample_rows"] == [{"id": 1}]
    assert finding.witness["cycle"]  # the rw/ww cycle of v2 and v1
    assert _kinds(tmp_path, "missed_conflict") == []
    # Its own count is wrong too: it says one row deleted, its actions delete none net.
    (count,) = _kinds(tmp_path, "dv_integrity")
    assert (count.version, count.witness["problem"]) == (2, "deleted_rows")


def test_it_accepts_a_sound_rebase(tmp_path):
    t.create(tmp_path)
    winner = t.stored_dv(tmp_path, [1])
    t.delete(tmp_path, 1, 0, 1, t.remove(), t.add(winner))
    t.delete(tmp_path, 2, 0, 2, t.remove(winner), t.add(t.stored_dv(tmp_path, [1, 2])))
    assert _kinds(tmp_path, "never_existed_snapshot", "missed_conflict", "dv_integrity") == []


def test_it_makes_a_same_row_verdict_certain_when_both_deleted_one_row(tmp_path):
    t.create(tmp_path)
    t.delete(tmp_path, 1, 0, 1, t.remove(), t.add(t.stored_dv(tmp_path, [1])))
    # Not rebased: it retires the entry both read, and deletes row 1 again (and row 3).
    t.delete(tmp_path, 2, 0, 1, t.remove(), t.add(t.stored_dv(tmp_path, [1, 3])), rows=2)
    (missed,) = _kinds(tmp_path, "missed_conflict")
    assert (missed.version, missed.related_versions) == (2, [1])
    kinds = sorted(f.kind for f in _kinds(tmp_path, "dv_integrity", "never_existed_snapshot"))
    assert kinds == ["dv_integrity"]  # two live entries; row 1 is deleted in both vectors


def test_it_never_opens_a_vector_file_outside_the_allowed_roots(tmp_path):
    table_dir, outside = tmp_path / "table", tmp_path / "outside"
    t.create(table_dir)
    stored = t.stored_dv(outside, [4])
    name = f"deletion_vector_{_uuid_of(stored)}.bin"
    absolute = {**stored, "storageType": "p", "pathOrInlineDv": (outside / name).as_uri()}
    found = loader_for(str(table_dir)).get(absolute)  # roots: the table's own root only
    assert isinstance(found, Unusable) and "outside the allowed roots" in found.reason
    assert list(loader_for(str(table_dir), [str(tmp_path)]).get(absolute)) == [4]


def test_it_leaves_rows_a_deletion_vector_deleted_out_of_the_witness(tmp_path):
    from audit.core.data.witness import find_rows
    from audit.core.log import open_log
    from audit.core.predicates import parse_predicate

    t.create(tmp_path)  # ids 0..9
    t.delete(tmp_path, 1, 0, 1, t.remove(), t.add(t.stored_dv(tmp_path, [1, 3])), rows=2)
    adds = list(open_log(str(tmp_path)).snapshot().files.values())
    gone = find_rows(str(tmp_path), adds, parse_predicate("id = 1"), {})
    assert gone.status == "no_rows"  # row 1 is deleted: it must not confirm anything
    live = find_rows(str(tmp_path), adds, parse_predicate("id < 4"), {})
    assert (live.status, live.witness["row_count"]) == ("rows", 2)
    assert live.witness["sample_rows"] == [{"id": 0}, {"id": 2}]
    every = find_rows(str(tmp_path), adds, None, {})
    assert every.witness["row_count"] == 8
