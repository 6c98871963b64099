"""Staged commits of catalog-managed and coordinated-commits tables, audited like published
ones and marked unpublished (audit/core/log/staged.py, audit/core/runs/unpublished.py)."""

from __future__ import annotations

import pytest

from audit.core.log import open_log
from audit.core.log.staged import find_unpublished
from audit.core.runs.table import open_table
from tests.support import staged_tables

NOW = staged_tables.STAGED_AT + 60_000


@pytest.mark.parametrize("folder", ["_staged_commits", "_commits"])
def test_it_audits_the_staged_commits_it_can_read_and_marks_them(tmp_path, folder):
    staged_tables.build(tmp_path, folder=folder)
    table = open_table(str(tmp_path))
    assert table.log.listing.latest_version == 3  # the published log
    section = table.unpublished(now_ms=NOW)
    assert section["staged_versions"] == [4, 5]
    assert section["audited_versions"] == [4]  # v5 has two candidates: not audited
    assert section["ambiguous_versions"] == [5]
    assert section["sources"] == ["catalog" if folder == "_staged_commits" else "coordinated"]
    (commit,) = section["commits"]
    assert (commit["version"], commit["operation"], commit["unpublished"]) == (4, "DELETE", True)
    assert commit["concurrent_versions"] == [2, 3]
    kinds = {(f["kind"], f["version"], f["confirmed"]) for f in section["findings"]}
    assert ("never_existed_snapshot", 4, True) in kinds  # v2's rows survive the stale DELETE
    # v4 committed across v3's protocol change: reported at v3, about v4.
    (change,) = [f for f in section["findings"] if f["kind"] == "concurrent_metadata_change"]
    assert (change["version"], change["related_versions"]) == (3, [4])
    assert all(f["unpublished"] for f in section["findings"])
    assert section["lag"] == {
        "published_version": 3, "latest_staged_version": 5, "versions": 2, "seconds": 60.0,
    }  # fmt: skip


def test_it_reads_every_staged_version_in_a_run_of_single_candidates(tmp_path):
    staged_tables.build(tmp_path, ambiguous=False)
    found = find_unpublished(open_log(str(tmp_path)).store, 3)
    assert [s.version for s in found.readable] == [4, 5] and found.ambiguous == []


def test_it_says_nothing_for_a_table_without_staged_commits(tmp_path):
    from deltalake import write_deltalake

    from tests.support.tables import rows

    write_deltalake(str(tmp_path), rows(3))
    assert open_table(str(tmp_path)).unpublished(now_ms=NOW) is None
