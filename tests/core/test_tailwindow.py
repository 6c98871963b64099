"""The tail's chunk audit against the one-shot audit, on tables whose findings lie before the
commit that reveals them (tests/support/revealing_tables.py)."""

from __future__ import annotations

import pytest

from audit.core.audit import audit_history
from audit.core.history.summary import History, load_history
from audit.core.log import open_log
from audit.core.runs.tailwindow import audit_tail_chunk
from audit.core.vocab import TABLE_LEVEL_KINDS
from tests.support import revealing_tables


def keys(findings, lo: int, hi: int) -> set:
    return {f.key for f in findings if lo <= f.version <= hi and f.kind not in TABLE_LEVEL_KINDS}


def windowed(history: History, versions: tuple[int, int]):
    return audit_history(history, check_data=False, versions=versions)


@pytest.mark.parametrize("name", sorted(revealing_tables.BUILDERS))
def test_it_audits_again_from_the_finding_the_last_commit_reveals(name, tmp_path):
    path = str(tmp_path / name)
    planted = revealing_tables.BUILDERS[name](path)
    log = open_log(path)
    last = log.listing.latest_version

    _, result, lo = audit_tail_chunk(log, last, last, windowed)

    assert lo == planted["metadata_change"]
    whole = audit_history(load_history(path), check_data=False)
    assert keys(result.findings, lo, last) == keys(whole.findings, lo, last)


def test_it_keeps_the_chunk_when_nothing_earlier_is_revealed(tmp_path):
    path = str(tmp_path / "t")
    revealing_tables.build_metadata_change_in_flight_twice(path)
    log = open_log(path)
    # v3 is an append that read v2: its findings (none) lie in its own chunk.
    _, _, lo = audit_tail_chunk(log, 3, 3, windowed)
    assert lo == 3
