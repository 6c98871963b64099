"""A registered table whose `_delta_log` (or one commit) is swapped for a link to another
table shows nothing of that table: the commit page says the link was not read, the tail
records the same one line as the table's error, and neither names the other table's schema,
file names or location (tests/core/test_log_symlinks.py has each kind of log file)."""

from __future__ import annotations

import os
import shutil

import pyarrow as pa
import pytest
from deltalake import write_deltalake

from audit.tail.step import tail_once
from tests.support.clients import session_client
from tests.support.ingested import ingest_table
from tests.support.logutil import commit_file

pytestmark = pytest.mark.django_db

MARKER = "othertablecolumn"


@pytest.fixture
def swapped(tmp_path, settings, fresh_cache):
    settings.AUDIT_ALLOWED_ROOTS = [str(tmp_path / "lake")]
    ours = tmp_path / "lake" / "ours"
    write_deltalake(str(ours), pa.table({"id": [1, 2]}))
    write_deltalake(str(ours), pa.table({"id": [3]}), mode="append")
    table = ingest_table(ours)
    other = tmp_path / "other-place" / "t"  # outside the allowed roots, and outside the table
    write_deltalake(str(other), pa.table({MARKER: [1]}))
    write_deltalake(str(other), pa.table({MARKER: [2]}), mode="append")
    return table, ours, other


def _shows_nothing_of(text: str, other) -> None:
    assert MARKER not in text and str(other) not in text and "part-00000" not in text


@pytest.mark.parametrize("what", ["log", "commit"])
def test_it_shows_nothing_of_another_table_behind_a_link_in_the_log(swapped, member, what):
    table, ours, other = swapped
    if what == "log":
        shutil.rmtree(ours / "_delta_log")
        os.symlink(other / "_delta_log", ours / "_delta_log")
        link = "_delta_log"
    else:
        commit_file(ours, 1).unlink()
        os.symlink(commit_file(other, 1), commit_file(ours, 1))
        link = "_delta_log/00000000000000000001.json"

    page = session_client(member).get(f"/tables/{table.id}/commits/1/")
    assert page.status_code == 200
    text = page.content.decode()
    assert f"{link} is a symbolic link leading outside the table: not read" in text
    _shows_nothing_of(text, other)

    if what == "log":  # the tail lists the log each tick: the table is in error
        result = tail_once(table.id)
        table.refresh_from_db()
        assert result.status == "error" and table.status == "error"
        assert "_delta_log is a symbolic link leading outside the table" in table.last_error
        _shows_nothing_of(table.last_error, other)
