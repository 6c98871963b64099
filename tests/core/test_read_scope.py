"""A table's read scope (audit/core/storage/roots.py): its own location first, the roots its
project is granted, minus other projects' tables inside them; what DataFiles opens with it
(data files and deletion vectors alike)."""

from __future__ import annotations

import os
import pickle
import uuid

import pytest

from audit.core.data.dv import Loader, Unusable, z85_decode
from audit.core.data.witness import DataFiles
from audit.core.storage.roots import (
    REFUSED,
    ReadScope,
    UriNotAllowed,
    ancestors,
    resolve_data_file,
    table_scope,
)
from tests.support import dv_tables as t


def test_it_builds_a_scope_from_the_tables_location_its_grants_and_other_projects(tmp_path):
    lake = tmp_path / "lake"
    scope = table_scope(
        str(lake / "a"),
        granted=[str(lake) + "/", str(lake / "b" / "inside-b"), str(lake / "a")],
        others=[str(lake / "b"), str(tmp_path / "far")],
    )

    # The root granted inside beta's table is dropped; the one around it keeps beta excluded.
    assert scope.roots == (str(lake / "a"), str(lake))
    assert scope.excluded == (str(lake / "b"),)
    assert list(scope) == list(scope.roots) and len(scope) == 2 and scope[0] == str(lake / "a")
    assert pickle.loads(pickle.dumps(scope)) == scope  # shipped to Spark executors


def test_it_keeps_its_own_files_inside_another_projects_table_around_it(tmp_path):
    # A table registered (before the check) inside another project's: its own files stay
    # readable, no granted root inside that table is.
    scope = table_scope(
        str(tmp_path / "outer" / "a"), [str(tmp_path / "outer" / "x")], [str(tmp_path / "outer")]
    )
    assert scope == ReadScope((str(tmp_path / "outer" / "a"),), ())


def test_it_builds_remote_scopes_on_whole_path_segments():
    scope = table_scope(
        "s3://lake/alpha/a",
        granted=["s3://lake/", "s3://other/src"],
        others=["s3://lake/beta/b", "s3://lake/alphabet", "s3://other/src/t", "s3://zz/q"],
    )
    assert scope.roots == ("s3://lake/alpha/a", "s3://lake", "s3://other/src")
    assert scope.excluded == ("s3://lake/alphabet", "s3://lake/beta/b", "s3://other/src/t")
    assert ancestors("s3://b/x/y") == ["s3://b/x", "s3://b"] and ancestors("/a/b") == ["/a", "/"]


def test_it_refuses_a_file_inside_an_excluded_table_however_it_is_reached(tmp_path):
    lake = tmp_path / "lake"
    (lake / "a").mkdir(parents=True)
    (lake / "b").mkdir()
    (lake / "b" / "part-0.parquet").write_bytes(b"PAR1")
    os.symlink(lake / "b", lake / "a" / "alias")  # a link inside ours, into beta's table
    scope = table_scope(str(lake / "a"), granted=[str(lake)], others=[str(lake / "b")])

    for path in ("../b/part-0.parquet", str(lake / "b" / "part-0.parquet"), "alias/part-0.parquet",
                 (lake / "b" / "part-0.parquet").as_uri()):  # fmt: skip
        with pytest.raises(UriNotAllowed, match=REFUSED):
            resolve_data_file(path, str(lake / "a"), scope)
    # The same files under the plain roots (no exclusion): readable.
    assert resolve_data_file("../b/part-0.parquet", str(lake / "a"), list(scope)).local


def test_it_refuses_a_remote_file_in_an_excluded_table():
    scope = table_scope("s3://lake/alpha/a", ["s3://lake"], ["s3://lake/beta/b"])
    with pytest.raises(UriNotAllowed, match=REFUSED):
        resolve_data_file("s3://lake/beta/b/part-0.parquet", "s3://lake/alpha/a", scope)
    found = resolve_data_file("s3://lake/beta/other.parquet", "s3://lake/alpha/a", scope)
    assert found.location == "s3://lake/beta/other.parquet"


def test_it_never_opens_a_deletion_vector_in_another_projects_table(tmp_path):
    lake = tmp_path / "lake"
    t.create(lake / "a")
    stored = t.stored_dv(lake / "b", [4])  # a vector file of beta's table
    name = f"deletion_vector_{uuid.UUID(bytes=z85_decode(stored['pathOrInlineDv'][-20:]))}.bin"
    absolute = {**stored, "storageType": "p", "pathOrInlineDv": (lake / "b" / name).as_uri()}
    scope = table_scope(str(lake / "a"), granted=[str(lake)], others=[str(lake / "b")])
    files = DataFiles(str(lake / "a"), scope)

    found = Loader(files).get(absolute)

    assert isinstance(found, Unusable) and "outside the allowed roots" in found.reason
    [refused] = files.refused
    assert refused["reason"] == REFUSED and refused["file"].endswith(f"/lake/b/{name}")
    assert list(Loader(DataFiles(str(lake / "a"), list(scope))).get(absolute)) == [4]
    assert isinstance(files.roots, ReadScope)
