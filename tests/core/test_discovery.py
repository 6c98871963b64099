"""Discovery (audit/core/log/discovery.py): every Delta table under a root, and nothing else.

A local root with 200 tables at depths 1 to 5 among decoys (plain folders, an empty
`_delta_log`, one holding only a .crc, Spark's `_temporary`, a "table" hidden inside another
table's partition folder, which a walk must never enter). The command and registration:
tests/app/test_discovery_register.py; S3 and the beat: tests/e2e/test_discovery_services.py."""

from __future__ import annotations

from pathlib import Path

from audit.core.log.discovery import discover_tables, latest_log_version
from tests.support.discovery_lake import lake_of


def test_latest_version_comes_from_commits_and_checkpoints():
    names = [
        "00000000000000000003.json",
        "00000000000000000010.checkpoint.parquet",
        "00000000000000000007.checkpoint.0000000001.0000000002.parquet",
        "00000000000000000012.checkpoint.80a083e8-7026-4e79-81be-64bd76c43a11.json",
        "00000000000000000099.crc",
        "_last_checkpoint",
    ]
    assert latest_log_version(names) == 12
    assert latest_log_version(["00000000000000000001.crc", "x.json"]) is None


def test_discover_finds_all_200_local_tables_and_nothing_else(tmp_path):
    root, expected = lake_of(tmp_path)
    found = discover_tables(str(root))
    assert {t.uri: t.latest_version for t in found.tables} == expected
    assert not found.errors and not found.truncated
    assert {t.depth for t in found.tables} == {1, 2, 3, 4, 5}

    shallow = discover_tables(str(root), max_depth=2)
    assert {t.uri for t in shallow.tables} == {u for u in expected if _depth(root, u) <= 2}


def _depth(root: Path, uri: str) -> int:
    return len(Path(uri).relative_to(root).parts)
