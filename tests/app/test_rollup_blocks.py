"""Decoded rollup blocks remembered per process (audit.reads.timeline.rollups.block_columns): the same
columns as decoding the text, never stale when a rollup's text is rewritten, bounded."""

from __future__ import annotations

import pytest

from audit.reads.timeline import rollups


def _rows(first: int, n: int, op: str = "WRITE") -> list[tuple]:
    return [
        (v, v - 1, 1_700_000_000_000 + v, op, v % 2 == 0, v % 3) for v in range(first, first + n)
    ]


def test_it_decodes_a_block_as_unpack_columns_does():
    text = rollups.pack_rows(_rows(0, 50))
    assert [list(c) for c in rollups.block_columns(text)] == rollups.unpack_columns(text)


def test_it_reads_a_rewritten_block_as_rewritten():
    before = rollups.pack_rows(_rows(0, 4))
    assert rollups.block_columns(before)[3] == ("WRITE",) * 4
    # The ingest rewrites a block's text (a version stored into it, or a rebuild): new values.
    after = rollups.pack_rows([*_rows(0, 4)[:3], (3, 1, 5, "DELETE", None, 7)])
    assert rollups.block_columns(after)[3] == ("WRITE", "WRITE", "WRITE", "DELETE")
    assert rollups.block_columns(after)[5][3] == 7
    assert rollups.block_columns(before)[3] == ("WRITE",) * 4


def test_it_gives_blocks_no_caller_can_change():
    text = rollups.pack_rows(_rows(10, 3))
    with pytest.raises(AttributeError):
        rollups.block_columns(text)[0].append(99)  # tuples: a later reader sees the same


def test_it_keeps_at_most_its_bound(monkeypatch):
    monkeypatch.setattr(rollups, "DECODED_BLOCKS", 3)
    monkeypatch.setattr(rollups, "_BLOCKS", {})
    texts = [rollups.pack_rows(_rows(i * 10, 5)) for i in range(7)]
    for text in texts:
        assert rollups.block_columns(text)[0][0] == int(text.split("[[", 1)[1].split(",", 1)[0])
        assert len(rollups._BLOCKS) <= 3


def test_it_decodes_damaged_text_as_empty_columns():
    assert rollups.block_columns("not json") == ((),) * len(rollups.ROW_FIELDS)
