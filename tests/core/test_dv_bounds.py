"""Deletion vectors against hostile descriptors (audit/core/data/dv.py): checked against the
limits and the file before anything is read or allocated, decoded once per identity within
the pass's budget, applied as masks; every refusal in fixed words.

The end-to-end cases (the CLI under an address-space limit, the API) are in
tests/app/test_hostile_vectors.py."""

from __future__ import annotations

import json
import os

import pyarrow as pa
import pytest
from pyroaring import BitMap64

from audit.core.anomalies.dv_integrity import dv_integrity_findings
from audit.core.data import dv
from audit.core.data.witness import DataFiles
from audit.core.history.summary import load_history
from tests.support import dv_tables as t
from tests.support.hostile_vectors import vector_bytes, write_vector_file


class CountingFiles(DataFiles):
    """The witness's opener, counting the files it opens."""

    def __init__(self, table_uri: str):
        super().__init__(table_uri, None)
        self.opened = 0

    def open(self, path: str):
        self.opened += 1
        return super().open(path)


def _loader(table, **limits) -> dv.Loader:
    return dv.Loader(CountingFiles(str(table)), dv.DvLimits(**limits))


# --------------------------------------------------------------------------- before reading


def test_it_refuses_a_size_over_the_limit_without_opening_the_file(tmp_path):
    loader = _loader(tmp_path, vector_bytes=100)
    descriptor = {"storageType": "p", "pathOrInlineDv": str(tmp_path / "x.bin"), "offset": 1,
                  "sizeInBytes": 101, "cardinality": 1}  # fmt: skip

    found = loader.get(descriptor)

    assert found == dv.Unusable("deletion vector sizeInBytes is over the size limit", "limit")
    assert loader.files.opened == 0


@pytest.mark.parametrize(
    "change,reason",
    [
        ({"sizeInBytes": None}, "sizeInBytes is missing or not a size"),
        ({"sizeInBytes": -5}, "sizeInBytes is missing or not a size"),
        ({"cardinality": -1}, "cardinality is not a count"),
        ({"cardinality": 2**40}, "cardinality is over the positions limit"),
        ({"offset": -4}, "offset is not a position in a file"),
        ({"offset": 2**70}, "offset is not a position in a file"),
        ({"offset": 10**9}, "file ends before the vector does"),
    ],
)
def test_it_checks_a_descriptors_numbers_before_reading(tmp_path, change, reason):
    t.create(tmp_path)
    descriptor = {**t.stored_dv(tmp_path, [1, 2]), **change}

    found = _loader(tmp_path).get(descriptor)

    assert isinstance(found, dv.Unusable) and found.reason == "deletion vector " + reason


def test_it_reads_no_more_than_the_descriptor_says_whatever_the_header_claims(tmp_path):
    t.create(tmp_path)
    descriptor = t.stored_dv(tmp_path, [1, 2])
    (path,) = tmp_path.glob("deletion_vector_*.bin")
    body = bytearray(path.read_bytes())
    body[1:5] = (2**32 - 1).to_bytes(4, "big")  # a 4 GiB header
    path.write_bytes(bytes(body))

    found = _loader(tmp_path).get(descriptor)

    assert found.reason == "deletion vector size header does not match the descriptor's sizeInBytes"


# --------------------------------------------------------------------------- once per identity


def test_it_decodes_one_vector_once_whatever_sizes_its_descriptors_claim(tmp_path):
    t.create(tmp_path)
    descriptor = t.stored_dv(tmp_path, list(range(0, 5000, 3)))
    size = descriptor["sizeInBytes"]
    loader = _loader(tmp_path)

    found = [loader.get({**descriptor, "sizeInBytes": size - i}) for i in range(60)]

    assert len(found[0]) == len(range(0, 5000, 3))
    assert {f.reason for f in found[1:]} == {  # type: ignore[union-attr]
        "deletion vector size header does not match the descriptor's sizeInBytes"
    }
    assert (loader.files.opened, loader.decoded_bytes) == (1, dv.decoded_cost(found[0]))


def test_it_decodes_a_vector_first_named_with_a_wrong_size_when_the_right_one_comes(tmp_path):
    t.create(tmp_path)
    descriptor = t.stored_dv(tmp_path, [4, 5])
    loader = _loader(tmp_path)

    wrong = loader.get({**descriptor, "sizeInBytes": descriptor["sizeInBytes"] + 1})
    right = loader.get(descriptor)

    assert isinstance(wrong, dv.Unusable) and list(right) == [4, 5]
    assert loader.decoded_bytes == max(descriptor["sizeInBytes"], dv.decoded_cost(right))


def test_it_decodes_within_the_pass_budget_and_says_so_once(tmp_path):
    t.create(tmp_path)
    first = t.stored_dv(tmp_path, [1])
    second = t.stored_dv(tmp_path, [2])
    limits = {"pass_bytes": first["sizeInBytes"] + second["sizeInBytes"] - 1}
    loader = _loader(tmp_path, **limits)

    assert list(loader.get(first)) == [1]
    assert loader.get(second) == dv.Unusable("over this pass's deletion vector budget", "budget")
    t.delete(tmp_path, 1, 0, 1, t.remove(), t.add(first))
    t.delete(tmp_path, 2, 1, 2, t.remove(first), t.add(second), rows=0)
    t.delete(tmp_path, 3, 2, 2, t.remove(second), t.add(t.stored_dv(tmp_path, [3])), rows=0)
    history = load_history(str(tmp_path))

    findings = dv_integrity_findings(history, vectors=_loader(tmp_path, **limits))

    assert [(f.version, f.witness["problem"], f.severity) for f in findings] == [
        (2, "vectors_not_decoded", "info")
    ]


def test_it_refuses_a_vector_holding_more_positions_than_the_limit(tmp_path):
    t.create(tmp_path)
    bitmap = BitMap64()
    bitmap.add_range(0, 1 << 20)
    descriptor = {**write_vector_file(tmp_path, vector_bytes(bitmap)), "cardinality": 1}

    found = _loader(tmp_path, positions=1 << 19).get(descriptor)

    assert found == dv.Unusable("deletion vector holds more positions than the limit", "limit")
    assert len(_loader(tmp_path).get(descriptor)) == 1 << 20


# --------------------------------------------------------------------------- dv_integrity


def test_it_counts_live_rows_of_two_entries_without_a_bitmap_of_the_records(tmp_path):
    t.create(tmp_path)
    t.delete(tmp_path, 1, 0, 1, t.remove(), t.add(t.inline_dv([1])))
    # Read v0: the vector-less entry it retires is gone, so v1's survives beside this one.
    t.delete(tmp_path, 2, 0, 2, t.remove(), t.add(t.inline_dv([2, 7, 2**40])), rows=1)

    (finding,) = [
        f
        for f in dv_integrity_findings(load_history(str(tmp_path)))
        if f.witness["problem"] == "two_live_entries"
    ]

    assert finding.witness["rows_counted_twice"] == 7  # rows 0, 3..6, 8, 9: live in both
    assert finding.witness["row_positions"] == [1, 2, 7, 2**40]


def test_it_does_not_believe_a_num_records_over_the_positions_limit(tmp_path):
    t.create(tmp_path)
    huge = t.add(t.inline_dv([1]))
    huge["add"]["stats"] = json.dumps({"numRecords": 2**62})
    t.commit(tmp_path, 1, t.remove(), huge, {"add": {**huge["add"], "deletionVector":
             t.inline_dv([2])}}, operation="DELETE")  # fmt: skip

    findings = dv_integrity_findings(load_history(str(tmp_path)))

    (two,) = [f for f in findings if f.witness["problem"] == "two_live_entries"]
    assert "rows_counted_twice" not in two.witness
    assert "numRecords is missing or over the positions limit" in two.explanation


def test_it_reports_malformed_vectors_of_a_commit_in_one_finding(tmp_path):
    t.create(tmp_path)
    good = t.stored_dv(tmp_path, [1])
    (path,) = tmp_path.glob("deletion_vector_*.bin")
    body = bytearray(path.read_bytes())
    body[-6] ^= 1  # the checksum no longer matches
    path.write_bytes(bytes(body))
    bad_magic = t.inline_dv([1])
    data = b"\0\0\0\0" + t.bitmap_bytes([1])[4:]
    bad_magic = {**bad_magic, "pathOrInlineDv": t.z85_encode(data)}
    second = {**t.add(bad_magic)["add"], "path": "other.parquet"}
    t.commit(tmp_path, 1, t.remove(), t.add(good), {"add": second}, operation="WRITE")

    (finding,) = dv_integrity_findings(load_history(str(tmp_path)))

    assert (finding.witness["problem"], finding.severity) == ("unusable_vectors", "warning")
    assert finding.witness["vectors"] == [
        {"path": t.DATA_FILE, "reason": "deletion vector checksum does not match its bytes"},
        {"path": "other.parquet", "reason": "deletion vector magic number is wrong"},
    ]


# --------------------------------------------------------------------------- applying


def test_it_masks_rows_from_the_bitmap_never_past_the_files_rows():
    bitmap = BitMap64([0, 3, 9, 10, 2**40])
    bitmap.add_range(2**33, 2**34)  # positions a 10-row file does not have: cut off first

    mask = dv.live_mask(bitmap, 10)
    kept = dv.without_deleted(pa.array([1, 3, 4, 9], pa.int64()), bitmap)

    assert mask.to_pylist() == [False, True, True, False, True, True, True, True, True, False]
    assert kept.to_pylist() == [1, 4]
    assert dv.live_positions(bitmap, 10).to_pylist() == [1, 2, 4, 5, 6, 7, 8]
    assert dv.live_mask(BitMap64([10, 11]), 10) is None


def test_it_decodes_z85_as_the_protocol_encodes_it():
    data = os.urandom(4000)

    assert dv.z85_decode(t.z85_encode(data)) == data
    with pytest.raises(dv.DeltaAuditError, match="outside the Z85 alphabet"):
        dv.z85_decode('ab"de')
