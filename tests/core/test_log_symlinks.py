"""Symbolic links inside a table's log that lead outside the table are not read.

A log is written by whoever can write the table: a `_delta_log`, a commit, a checkpoint, a
sidecar, `_last_checkpoint` or a staged-commit folder linked to another table would show that
table's schema and files as this one's. Each is refused with one line naming the link (never
its target), and the rest of the table keeps working where it can: a refused checkpoint falls
back to the commits, a refused `_last_checkpoint` is no hint, refused staged commits are
listed apart. A link that stays inside the table, and a table reached through a linked root,
are read as before.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from deltalake import DeltaTable, write_deltalake

from audit.core.errors import DeltaAuditError
from audit.core.log import DeltaLog, list_log, read_checkpoint, read_commit, replay_log
from audit.core.log.staged import find_unpublished
from audit.core.runs.table import LOG_ONLY, AuditedTable
from audit.core.storage.stores import LinkRefused, open_store
from tests.support import staged_tables
from tests.support.logutil import commit_file, copy_table
from tests.support.tables import rows

OUTSIDE_COLUMN = "outside_marker_column"
REFUSED_WORDS = "is a symbolic link leading outside the table: not read"


def _outside_table(path: Path) -> Path:
    """Another table (a column named OUTSIDE_COLUMN, 2 commits, a checkpoint at v1)."""
    import pyarrow as pa

    data = pa.table({OUTSIDE_COLUMN: pa.array([1, 2, 3], pa.int64())})
    write_deltalake(str(path), data)
    write_deltalake(str(path), data, mode="append")
    DeltaTable(str(path)).create_checkpoint()
    return path


@pytest.fixture
def tables(tmp_path):
    """Ours (3 commits, no checkpoint) and the other table, side by side."""
    ours = tmp_path / "ours"
    write_deltalake(str(ours), rows(3))
    write_deltalake(str(ours), rows(2, start=10), mode="append")
    write_deltalake(str(ours), rows(2, start=20), mode="append")
    return ours, _outside_table(tmp_path / "outside")


def _refusal(err: pytest.ExceptionInfo, outside: Path, link: str) -> str:
    message = str(err.value)
    assert REFUSED_WORDS in message and link in message
    assert str(outside) not in message and OUTSIDE_COLUMN not in message
    assert "\n" not in message
    return message


def test_it_refuses_a_delta_log_linked_outside_the_table(tables):
    ours, outside = tables
    shutil.rmtree(ours / "_delta_log")
    os.symlink(outside / "_delta_log", ours / "_delta_log")

    with pytest.raises(LinkRefused) as listing:
        list_log(str(ours))
    _refusal(listing, outside, "_delta_log")
    # The commit page reads one commit without a listing: refused too.
    with pytest.raises(LinkRefused) as commit:
        read_commit(open_store(str(ours)), 0)
    _refusal(commit, outside, "_delta_log")


def test_it_refuses_a_commit_file_linked_outside_the_table(tables):
    ours, outside = tables
    commit_file(ours, 1).unlink()
    os.symlink(commit_file(outside, 1), commit_file(ours, 1))

    listing = list_log(str(ours))  # the listing itself reads no commit
    assert listing.latest_version == 2
    with pytest.raises(LinkRefused) as err:
        read_commit(open_store(str(ours)), 1, listing)
    _refusal(err, outside, "_delta_log/00000000000000000001.json")
    assert open_store(str(ours)).modification_time("_delta_log/00000000000000000001.json") is None
    with pytest.raises(DeltaAuditError, match="symbolic link leading outside"):
        replay_log(str(ours))


def test_it_follows_a_link_that_stays_inside_the_table(tables):
    ours, _ = tables
    kept = ours / "kept-commit.json"
    shutil.copy(commit_file(ours, 1), kept)
    commit_file(ours, 1).unlink()
    os.symlink(kept, commit_file(ours, 1))

    assert read_commit(open_store(str(ours)), 1).version == 1
    assert len(replay_log(str(ours)).files) == 3


def test_it_reads_a_table_whose_own_root_is_a_link(tables, tmp_path):
    ours, _ = tables
    os.symlink(ours, tmp_path / "alias")

    assert len(replay_log(str(tmp_path / "alias")).files) == 3


def test_it_falls_back_to_the_commits_when_a_checkpoint_links_outside(tables):
    ours, outside = tables
    [checkpoint] = (outside / "_delta_log").glob("*.checkpoint.parquet")
    os.symlink(checkpoint, ours / "_delta_log" / checkpoint.name)  # the same version: 1

    listing = list_log(str(ours))
    assert listing.checkpoints == {1: [checkpoint.name]}
    with pytest.raises(LinkRefused) as err:
        read_checkpoint(open_store(str(ours)), 1, listing.checkpoints[1])
    _refusal(err, outside, checkpoint.name)
    state = replay_log(str(ours), 1)  # from the commits, not from the other table's files
    assert len(state.files) == 2 and OUTSIDE_COLUMN not in (state.metadata.schema_string or "")


def test_it_takes_a_last_checkpoint_linked_outside_as_no_hint(tables):
    ours, outside = tables
    assert json.loads((outside / "_delta_log" / "_last_checkpoint").read_text())["version"] == 1
    os.symlink(
        outside / "_delta_log" / "_last_checkpoint", ours / "_delta_log" / "_last_checkpoint"
    )

    assert list_log(str(ours)).last_checkpoint is None
    assert len(replay_log(str(ours)).files) == 3


@pytest.mark.parametrize("what", ["file", "folder"])
def test_it_refuses_sidecars_linked_outside_and_falls_back_to_the_commits(tmp_path, what):
    name = "golden/v2-checkpoint-parquet"
    ours, outside = copy_table(name, tmp_path / "a"), copy_table(name, tmp_path / "b")
    sidecars = ours / "_delta_log" / "_sidecars"
    if what == "folder":
        shutil.rmtree(sidecars)
        os.symlink(outside / "_delta_log" / "_sidecars", sidecars)
        link = "_delta_log/_sidecars"
    else:
        first = sorted(sidecars.glob("*.parquet"))[0]
        first.unlink()
        os.symlink(outside / "_delta_log" / "_sidecars" / first.name, first)
        link = f"_delta_log/_sidecars/{first.name}"

    listing = list_log(str(ours))
    with pytest.raises(LinkRefused) as err:
        read_checkpoint(open_store(str(ours)), 2, listing.checkpoints[2])
    _refusal(err, outside, link)
    assert len(replay_log(str(ours)).files) == 4  # from the commits


@pytest.mark.parametrize("folder", ["_staged_commits", "_commits"])
def test_it_refuses_a_staged_folder_linked_outside(tmp_path, folder):
    ours, outside = tmp_path / "ours", tmp_path / "outside"
    staged_tables.build(outside, folder=folder)
    staged_tables.build(ours, folder=folder)
    shutil.rmtree(ours / "_delta_log" / folder)
    shutil.copytree(outside / "_delta_log" / folder, tmp_path / "elsewhere")
    os.symlink(tmp_path / "elsewhere", ours / "_delta_log" / folder)

    found = find_unpublished(open_store(str(ours)), 3)
    assert found.staged_versions == [] and found.readable == []
    [line] = found.refused
    assert f"_delta_log/{folder} {REFUSED_WORDS}" in line and "elsewhere" not in line
    section = AuditedTable(DeltaLog(open_store(str(ours))), LOG_ONLY).unpublished(now_ms=0)
    assert section["refused"] == [line] and section["commits"] == []


def test_it_refuses_a_staged_commit_linked_outside_and_audits_the_others(tmp_path):
    ours, outside = tmp_path / "ours", tmp_path / "outside"
    staged_tables.build(outside, ambiguous=False)
    staged_tables.build(ours, ambiguous=False)
    staged = ours / "_delta_log" / "_staged_commits"
    [five] = staged.glob(f"{5:020d}.*.json")
    five.unlink()
    os.symlink(outside / "_delta_log" / "_staged_commits" / five.name, five)

    found = find_unpublished(open_store(str(ours)), 3)
    assert [s.version for s in found.readable] == [4]  # the run stops at the refused one
    [line] = found.refused
    assert f"_delta_log/_staged_commits/{five.name} {REFUSED_WORDS}" in line
    assert str(outside) not in line
