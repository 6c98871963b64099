"""The deletion-vector check judged from what the history's own read kept (integrity/dv_track.py)
says exactly what it says re-reading the log: on a log of every kind of finding, sequential
and forked, with the exact-parse fallback, under budgets and caps small enough to run out."""

from __future__ import annotations

import dataclasses

import pytest

from audit.core.anomalies import dv_integrity
from audit.core.history import parallel
from audit.core.history.summary import load_history
from audit.core.integrity import dv_track
from tests.support import dv_tables as t
from tests.support.logutil import all_table_dirs

BOUNDS = [(5000, 200), (0, 200), (1, 200), (2, 1), (3, 2), (4, 3), (6, 0)]


def _other(dv=None, records=t.ROWS, path="other.parquet"):
    return {"add": {**t.add(dv, records=records)["add"], "path": path}}


def _messy(table) -> None:
    """Plain files first (the track starts late), then every finding the check makes."""
    t.create(table)
    t.commit(table, 1, _other(), operation="WRITE")
    t.commit(table, 2, {"remove": {**t.remove()["remove"], "path": "other.parquet"}})
    first = t.stored_dv(table, [1])
    t.delete(table, 3, 2, 1, t.remove(), t.add(first))
    t.delete(table, 4, 2, 2, t.remove(), t.add(t.stored_dv(table, [2])))  # two live entries
    t.delete(table, 5, 4, 3, _other(t.stored_dv(table, [1, 12]), path="x.parquet"), rows=2)
    t.delete(table, 6, 5, 4, _other(t.stored_dv(table, [1], cardinality=2), path="y.parquet"))
    t.delete(table, 7, 6, 5, t.remove(first), t.add(t.inline_dv([1, 3])), rows=7)
    huge = _other(t.inline_dv([4]), records=2**62, path="z.parquet")
    t.commit(table, 8, huge, operation="WRITE")
    bad = {
        **t.inline_dv([1]),
        "pathOrInlineDv": t.z85_encode(b"\0\0\0\0" + t.bitmap_bytes([1])[4:]),
    }
    t.delete(
        table, 9, 8, 6, _other(bad, path="w.parquet"), _other(t.inline_dv([5]), path="v.parquet")
    )
    for version in range(10, 16):
        t.delete(table, version, 3, version, t.remove(), t.add(t.inline_dv([version % 10])))
    # A blank line: this commit takes the exact parse (parse_commit), not the digest.
    log = table / "_delta_log" / f"{16:020d}.json"
    t.delete(table, 16, 15, 7, t.remove(), t.add(t.inline_dv([6, 7])), rows=3)
    log.write_text(log.read_text().replace("\n", "\n\n", 1))


def _same(history) -> list:
    tracked = dv_integrity.dv_integrity_findings(history)
    reread = dv_integrity.dv_integrity_findings(dataclasses.replace(history, dv_track=None))
    assert tracked == reread
    return tracked


def _bound(monkeypatch, decoded: int, findings: int) -> None:
    for module in (dv_track, dv_integrity):
        monkeypatch.setattr(module, "MAX_DECODED", decoded)
        monkeypatch.setattr(module, "MAX_FINDINGS", findings)


@pytest.mark.parametrize("decoded,findings", BOUNDS)
def test_the_kept_track_judges_as_the_log_read_again(tmp_path, monkeypatch, decoded, findings):
    _messy(tmp_path)
    _bound(monkeypatch, decoded, findings)
    monkeypatch.setattr(parallel, "MIN_PARALLEL_COMMITS", 2)
    monkeypatch.setattr(parallel, "FRAME_COMMITS", 3)

    sequential = load_history(str(tmp_path))
    found = _same(sequential)

    assert sequential.dv_track is not None
    assert _same(load_history(str(tmp_path), parallel=True)) == found
    if (decoded, findings) == (5000, 200):
        problems = {f.witness["problem"] for f in found}
        assert problems >= {"two_live_entries", "beyond_records", "cardinality", "deleted_rows"}
        assert problems & {"unusable_vectors", "vectors_not_decoded"}


def test_a_log_without_vectors_keeps_nothing(tmp_path):
    t.create(tmp_path)
    t.commit(tmp_path, 1, _other(), operation="WRITE")
    t.commit(tmp_path, 2, t.remove(), operation="DELETE")

    history = load_history(str(tmp_path))

    assert history.dv_track is not None and history.dv_track.live is None
    assert _same(history) == []


DV_TABLES = [(n, p) for n, p in all_table_dirs() if "dv" in n or "deletion" in n]


@pytest.mark.parametrize("name,path", DV_TABLES, ids=[n for n, _ in DV_TABLES])
@pytest.mark.parametrize("decoded,findings", [(5000, 200), (1, 200), (2, 1)])
def test_the_test_tables_with_vectors_too(name, path, monkeypatch, decoded, findings):
    _bound(monkeypatch, decoded, findings)
    try:
        history = load_history(str(path))
    except Exception:  # noqa: BLE001  (unreadable on purpose: corrupt / empty test tables)
        pytest.skip("not a readable table")
    _same(history)
