"""Reads stay inside the allowed roots (audit/core/storage/roots.py): the data files a log names and the
listings of the orphan scan and of discovery, on real tables written with deltalake."""

from __future__ import annotations

import os
import time
from pathlib import Path

import orjson
import pytest
from deltalake import write_deltalake

from audit.core.audit import audit_history
from audit.core.data.orphans import referenced_paths, scan_orphans
from audit.core.errors import DeltaAuditError
from audit.core.history.summary import load_history
from audit.core.jsonsafe import json_safe
from audit.core.log.discovery import discover_tables
from audit.core.storage.roots import REFUSED, UriNotAllowed, check_allowed, resolve_data_file
from audit.core.storage.stores import open_store
from audit.core.vocab import FindingKind
from tests.support.outside_table import SECRET, build_outside, point_add_at
from tests.support.tables import rows


def _never_existed(table: Path, roots: list[str] | None):
    result = audit_history(load_history(str(table)), read_roots=roots)
    [finding] = [f for f in result.findings if f.kind == FindingKind.NEVER_EXISTED_SNAPSHOT]
    return finding


def _text(finding) -> str:
    return orjson.dumps(
        json_safe({"witness": finding.witness, "details": finding.details})
    ).decode()


# --------------------------------------------------------------------------- the rule


def test_it_resolves_a_relative_data_file_inside_the_table_to_its_root(tmp_path):
    table = tmp_path / "lake" / "t"
    (table / "day=a").mkdir(parents=True)

    found = resolve_data_file("day=a/part-0.parquet", str(table), [str(tmp_path / "lake")])

    assert found.location == os.path.realpath(table / "day=a" / "part-0.parquet")
    assert found.root == os.path.realpath(tmp_path / "lake") and found.local


@pytest.mark.parametrize(
    "path",
    [
        "../../outside/secret.parquet",
        "day=a/../../../outside/secret.parquet",
        "{outside}/secret.parquet",
        "file://{outside}/secret.parquet",
        "file://{outside_encoded}/secret.parquet",
        "file://otherhost/{outside}/secret.parquet",
        "s3://other-bucket/secret.parquet",
        "ftp://host/secret.parquet",
    ],
)
def test_it_refuses_data_files_that_resolve_outside_the_roots(tmp_path, path):
    table = tmp_path / "lake" / "t"
    table.mkdir(parents=True)
    outside = str(tmp_path / "outside")
    encoded = str(tmp_path / "lake" / "t") + "/%2e%2e/%2e%2e/outside"
    text = path.format(outside=outside, outside_encoded=encoded)

    with pytest.raises(UriNotAllowed) as refused:
        resolve_data_file(text, str(table), [str(tmp_path / "lake"), "s3://lake-bucket"])

    assert str(refused.value) == REFUSED  # the message never echoes the path


def test_it_follows_a_symlink_before_deciding(tmp_path):
    table = tmp_path / "lake" / "t"
    table.mkdir(parents=True)
    (tmp_path / "outside").mkdir()
    (table / "day=a").symlink_to(tmp_path / "outside")

    with pytest.raises(UriNotAllowed):
        resolve_data_file("day=a/secret.parquet", str(table), [str(tmp_path / "lake")])


@pytest.mark.parametrize(
    "path",
    [
        "s3://lake-bucket/t/../../other/x.parquet",
        "s3://lake-bucket/t/%2e%2e/%2e%2e/other/x.parquet",
        "s3://lake-bucket/t/%252e%252e/x.parquet",
        "s3://key:secret@lake-bucket/t/x.parquet",
        "s3://lake-bucket/t/x.parquet?versionId=1",
        "s3://other-bucket/t/x.parquet",
        "s3://lake-bucket-2/t/x.parquet",
    ],
)
def test_it_refuses_remote_data_files_that_step_out_of_their_root(path):
    with pytest.raises(UriNotAllowed):
        resolve_data_file(path, "s3://lake-bucket/t", ["s3://lake-bucket"])


def test_it_refuses_a_dot_segment_in_a_remote_tables_relative_path():
    with pytest.raises(UriNotAllowed):
        resolve_data_file("../../other/x.parquet", "s3://lake-bucket/a/t", ["s3://lake-bucket/a"])


def test_it_answers_the_root_a_remote_data_file_lies_in():
    roots = ["s3://lake-bucket/a", "s3://clones"]

    here = resolve_data_file("day=1/x.parquet", "s3://lake-bucket/a/t/", roots)
    clone = resolve_data_file("s3://clones/src/day=1/y.parquet", "s3://lake-bucket/a/t", roots)

    assert (here.location, here.root) == ("s3://lake-bucket/a/t/day=1/x.parquet", roots[0])
    assert (clone.location, clone.root) == ("s3://clones/src/day=1/y.parquet", roots[1])


def test_it_keeps_the_table_uri_gate_as_it_was(tmp_path):
    (tmp_path / "t").mkdir()

    assert check_allowed(str(tmp_path / "t" / "_delta_log"), [str(tmp_path)]) == str(
        Path(os.path.realpath(tmp_path / "t"))
    )
    with pytest.raises(UriNotAllowed):
        check_allowed("s3://bucket/a/%2e%2e/b", ["s3://bucket"])


# --------------------------------------------------------------------------- the witness


@pytest.mark.parametrize("how", ["absolute", "relative", "file_uri"])
def test_it_shows_no_rows_of_a_data_file_outside_the_roots(tmp_path, how):
    table = tmp_path / "lake" / "t"
    build_outside(table, tmp_path / "elsewhere", how)

    finding = _never_existed(table, [str(tmp_path / "lake")])

    assert not finding.confirmed
    assert SECRET not in _text(finding)
    assert "sample_rows" not in finding.witness
    [not_read] = finding.witness["not_read"]
    assert not_read["reason"] == "witness not read: path outside the allowed roots"
    assert REFUSED in finding.details["method_note"]


def test_it_reads_only_the_tables_own_root_when_given_no_roots(tmp_path):
    table = tmp_path / "lake" / "t"
    build_outside(table, tmp_path / "lake" / "elsewhere", "absolute")

    finding = _never_existed(table, None)

    assert not finding.confirmed and SECRET not in _text(finding)


def test_it_confirms_a_shallow_clone_into_another_allowed_table(tmp_path):
    table = tmp_path / "lake" / "t"
    source = build_outside(table, tmp_path / "clones" / "source", "absolute")

    finding = _never_existed(table, [str(tmp_path / "lake"), str(tmp_path / "clones")])

    assert finding.confirmed
    assert finding.witness["files"] == [str(source)]
    assert finding.witness["row_count"] == 3 and "not_read" not in finding.witness
    assert all(SECRET in row["value"] for row in finding.witness["sample_rows"])


def test_it_confirms_the_tables_own_files_as_before(tmp_path):
    table = tmp_path / "lake" / "t"
    build_outside(table, tmp_path / "elsewhere", "same")

    finding = _never_existed(table, [str(tmp_path / "lake")])

    assert finding.confirmed and finding.witness["row_count"] == 3


def test_it_does_not_echo_credentials_of_a_refused_uri(tmp_path):
    table = tmp_path / "lake" / "t"
    build_outside(table, tmp_path / "elsewhere", "same")
    point_add_at(table, "s3://AKIAKEY:topsecretpw@other-bucket/x.parquet?sig=tokenvalue")

    finding = _never_existed(table, [str(tmp_path / "lake")])

    not_read = orjson.dumps(finding.witness["not_read"]).decode()
    assert not finding.confirmed
    assert "topsecretpw" not in not_read and "tokenvalue" not in not_read
    assert "topsecretpw" not in finding.details["method_note"]


# --------------------------------------------------------------------------- listings


def test_it_does_not_scan_orphans_through_a_symlink_out_of_the_table(tmp_path):
    table = tmp_path / "lake" / "t"
    write_deltalake(str(table), rows(3))
    outside = tmp_path / "outside"
    (outside / "deep").mkdir(parents=True)
    (outside / "deep" / "secret-a.parquet").write_bytes(b"x" * 10)
    (outside / "secret-b.parquet").write_bytes(b"y" * 10)
    (table / "linked-dir").symlink_to(outside)
    (table / "linked-file.parquet").symlink_to(outside / "secret-b.parquet")
    (table / "inside-link.parquet").symlink_to(next(table.glob("part-*.parquet")))

    scan = scan_orphans(
        open_store(str(table)),
        referenced_paths(load_history(str(table)), str(table)),
        now_ms=int(time.time() * 1000) + 10_000,
        min_age_ms=0,
    )

    paths = {s["path"] for s in scan.sample}
    assert paths == {"inside-link.parquet"}  # a link inside the table is still listed
    assert scan.listed_dirs == 1


def test_it_does_not_discover_tables_through_a_symlink_out_of_the_root(tmp_path):
    lake, outside = tmp_path / "lake", tmp_path / "outside"
    write_deltalake(str(lake / "inside"), rows(2))
    write_deltalake(str(outside / "hidden"), rows(2))
    (lake / "linked").symlink_to(outside)
    (lake / "linked-table").symlink_to(outside / "hidden")
    (lake / "alias").symlink_to(lake / "inside")

    found = discover_tables(str(lake))

    assert sorted(t.path for t in found.tables) == ["alias", "inside"]


@pytest.mark.parametrize("path", ["../outside/secret.txt", "a/../../outside/secret.txt", "{abs}"])
def test_it_keeps_a_local_stores_relative_paths_inside_its_root(tmp_path, path):
    (tmp_path / "t" / "a").mkdir(parents=True)
    (tmp_path / "outside").mkdir()
    secret = tmp_path / "outside" / "secret.txt"
    secret.write_text(SECRET)
    store = open_store(str(tmp_path / "t"))
    text = path.format(abs=secret)

    with pytest.raises(DeltaAuditError):
        store.read_bytes(text)
    with pytest.raises(DeltaAuditError):
        store.open_input(text)
