"""Our log reader against deltalake on every copied Delta table (one test id per table).

For each directory holding a `_delta_log` under tests/data/delta-tables/{golden,spark}:
if deltalake loads it, the latest version, the live files, the partition columns and the
number of commits must agree. Tables deltalake cannot load are listed below with the
reason; for those we must give a result or a DeltaAuditError, never another exception.

About paths: add/remove paths are URL-encoded in the log; deltalake's `file_uris()` decodes
them exactly once (e.g. `special%20p@%23h` -> `special p@#h`, and Hive-escaped partition
directories like `_2=bar+%252523` -> `_2=bar+%2523`), as PROTOCOL.md says. We do the same
with `urllib.parse.unquote` (not `unquote_plus`: a '+' stays a '+').
"""

from __future__ import annotations

import pytest
from deltalake import DeltaTable

from audit.core.errors import DeltaAuditError
from audit.core.log import iter_commits, list_log, replay_log
from tests.support.logutil import absolute_live_paths, all_table_dirs

# Tables deltalake 1.6.6 refuses, with the reason it gives.
DELTALAKE_CANNOT_LOAD = {
    "golden/canonicalized-paths-normal-a": "metaData without schemaString",
    "golden/canonicalized-paths-normal-b": "metaData without schemaString",
    "golden/canonicalized-paths-special-a": "metaData without schemaString",
    "golden/canonicalized-paths-special-b": "metaData without schemaString",
    "golden/corrupted-last-checkpoint": "checkpoint metaData without schemaString",
    "golden/data-reader-absolute-paths-escaped-chars": "no metaData action at all",
    "golden/deltalog-commit-info": "metaData without schemaString",
    "golden/deltalog-invalid-protocol-version": "readerFeatures with minReaderVersion 99",
    "golden/deltalog-state-reconstruction-from-checkpoint-missing-metadata": "no metaData",
    "golden/deltalog-state-reconstruction-from-checkpoint-missing-protocol": "no schemaString",
    "golden/deltalog-state-reconstruction-without-metadata": "no metaData action",
    "golden/deltalog-state-reconstruction-without-protocol": "no protocol action",
    "golden/update-deleted-directory": "checkpoint metaData without schemaString",
    "golden/versions-not-contiguous": "version 1 is missing",
}
# Tables deltalake loads but whose history() it cannot read.
DELTALAKE_HISTORY_FAILS = {
    "spark/transaction_log_schema_evolvability": "an add's stats string is not valid JSON",
}
# What we must say about tables deltalake refuses, where we refuse too.
WE_REFUSE = {"golden/versions-not-contiguous": "missing version 1"}

TABLES = all_table_dirs()


def test_it_finds_every_table_including_nested_ones():
    names = {name for name, _ in TABLES}
    assert len(names) >= 120
    assert "spark/history/delta-0.2.0" in names
    assert "golden/data-reader-date-types-America/Los_Angeles" in names
    assert set(DELTALAKE_CANNOT_LOAD) <= names
    assert set(DELTALAKE_HISTORY_FAILS) <= names


@pytest.mark.parametrize(("name", "path"), TABLES, ids=[name for name, _ in TABLES])
def test_it_agrees_with_deltalake(name, path):
    if name in DELTALAKE_CANNOT_LOAD:
        with pytest.raises(Exception):  # noqa: B017 - keeps the list above honest
            DeltaTable(str(path))
        _assert_clear_result_or_error(name, path)
        return

    dt = DeltaTable(str(path))
    listing = list_log(str(path))
    state = replay_log(str(path))

    assert listing.latest_version == dt.version()
    assert state.version == dt.version()
    assert absolute_live_paths(path, state) == set(dt.file_uris())
    assert state.partition_columns == list(dt.metadata().partition_columns)

    commits = list(iter_commits(str(path), listing))
    assert [c.version for c in commits] == list(
        range(listing.first_available_version, listing.latest_version + 1)
    )
    if name in DELTALAKE_HISTORY_FAILS:
        with pytest.raises(Exception):  # noqa: B017
            dt.history()
        return
    # deltalake's history() lists the commits that carry a commitInfo.
    assert len(dt.history()) == sum(1 for c in commits if c.commit_info is not None)


def _assert_clear_result_or_error(name, path):
    try:
        state = replay_log(str(path))
    except DeltaAuditError as err:
        assert name in WE_REFUSE, f"unexpected refusal: {err}"
        assert WE_REFUSE[name].split()[-1] in str(err)
        assert "\n" not in str(err)
        return
    assert name not in WE_REFUSE
    assert state.version == list_log(str(path)).latest_version
