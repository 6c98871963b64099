"""Models, the admin, `manage.py add_table` and the allowed-roots gate (audit/trust/paths.py)."""

from __future__ import annotations

import os
import subprocess

import pytest
from django.db import IntegrityError, transaction
from django.utils import timezone

from audit.ingest.findings import finding_key
from audit.ingest.tables import register_table
from audit.models import Commit, Finding, Table
from audit.tail.step import tail_once
from audit.trust.paths import UriNotAllowed, check_allowed
from tests.support.cli import manage

# --------------------------------------------------------------------------- paths


def test_local_paths_under_a_root_are_resolved(tmp_path):
    (tmp_path / "a" / "t").mkdir(parents=True)
    assert check_allowed(str(tmp_path / "a" / "t"), [str(tmp_path)]) == str(tmp_path / "a" / "t")
    assert check_allowed(f"file://{tmp_path}/a/t/", [str(tmp_path)]) == str(tmp_path / "a" / "t")
    assert check_allowed(str(tmp_path / "a" / "t" / "_delta_log"), [str(tmp_path)]) == str(
        tmp_path / "a" / "t"
    )
    assert check_allowed(str(tmp_path / "a" / ".." / "a" / "t"), [str(tmp_path)]) == str(
        tmp_path / "a" / "t"
    )


@pytest.mark.parametrize(
    "uri",
    [
        "{root}/../outside",
        "{root}-sibling/t",  # a prefix of the root's name is not the root
        "{root}/a/%2e%2e/%2e%2e/etc",
        "{root}/a%2Ft",
        "{root}/a/%252e%252e/x",
        "{root}/a\x00b",
        "file://evil.example.com{root}/a",
        "/etc",
        "",
        "   ",
        "http://example.com/table",
        "s3://bucket/table",  # no remote root configured
    ],
)
def test_paths_outside_the_roots_or_with_tricks_are_rejected(tmp_path, uri):
    root = tmp_path / "root"
    root.mkdir()
    with pytest.raises(UriNotAllowed):
        check_allowed(uri.format(root=root), [str(root)])


def test_a_symlink_out_of_a_root_is_rejected(tmp_path):
    root, outside = tmp_path / "root", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    os.symlink(outside, root / "link")
    with pytest.raises(UriNotAllowed):
        check_allowed(str(root / "link"), [str(root)])


def test_remote_uris_need_a_listed_scheme_and_bucket():
    roots = ["s3://lake/prod", "abfss://data@acct.dfs.core.windows.net/"]
    assert check_allowed("s3://lake/prod/orders/", roots) == "s3://lake/prod/orders"
    assert check_allowed("S3://lake/prod/orders/_delta_log", roots) == "s3://lake/prod/orders"
    assert (
        check_allowed("abfss://data@acct.dfs.core.windows.net/t", roots)
        == "abfss://data@acct.dfs.core.windows.net/t"
    )
    for bad in [
        "s3://lake/production/x",  # prefix of a segment
        "s3://lake/prod/../secret/x",
        "s3://lake/prod/%2e%2e/x",
        "s3://other/prod/x",
        "gs://lake/prod/x",
        "s3://key:secret@lake/prod/x",
        "s3://lake:9000/prod/x",
        "s3://lake/prod/x?versionId=1",
        "abfss://other@acct.dfs.core.windows.net/t",
    ]:
        with pytest.raises(UriNotAllowed):
            check_allowed(bad, roots)


# --------------------------------------------------------------------------- models


@pytest.mark.django_db
def test_a_version_is_stored_once_per_table():
    table = Table.objects.create(uri="/x/t", name="t")
    other = Table.objects.create(uri="/x/u", name="u")
    Commit.objects.create(table=table, version=1)
    Commit.objects.create(table=other, version=1)
    with pytest.raises(IntegrityError), transaction.atomic():
        Commit.objects.create(table=table, version=1)
    Commit.objects.bulk_create(
        [Commit(table=table, version=1), Commit(table=table, version=2)], ignore_conflicts=True
    )
    assert sorted(Commit.objects.filter(table=table).values_list("version", flat=True)) == [1, 2]


@pytest.mark.django_db
def test_a_finding_key_is_unique_per_table():
    table = Table.objects.create(uri="/x/t")
    key = finding_key("write_serializable_reorder", 5, [4])
    assert key == "write_serializable_reorder:5:4"
    now = timezone.now()
    Finding.objects.create(
        table=table, kind="k", severity="info", version=5, summary="s", key=key, last_seen=now
    )
    with pytest.raises(IntegrityError), transaction.atomic():
        Finding.objects.create(
            table=table, kind="k", severity="info", version=5, summary="s", key=key, last_seen=now
        )
    long_key = finding_key("conflict_hotspot", 1, range(2, 500))
    assert len(long_key) < 100 and long_key.startswith("conflict_hotspot:1:sha1-")


@pytest.mark.django_db
def test_backfill_fraction_reports_progress():
    table = Table.objects.create(
        uri="/x/t", first_available_version=0, backfill_target_version=99, backfill_done=25
    )
    assert table.backfill_fraction == 0.25
    assert Table(uri="/y").backfill_fraction is None


@pytest.mark.django_db
def test_the_admin_lists_every_model(client, owner, delta_table_factory):
    table, _ = register_table(str(delta_table_factory("t", commits=2)))
    tail_once(table.id)
    client.force_login(owner)
    for page in ["table", "commit", "finding", "findingflip"]:
        response = client.get(f"/admin/audit/{page}/")
        assert response.status_code == 200, page
    assert client.get(f"/admin/audit/table/{table.id}/change/").status_code == 200


@pytest.mark.django_db
def test_the_admin_is_closed_to_regular_users(client, member):
    client.force_login(member)
    assert client.get("/admin/audit/commit/").status_code == 302


# --------------------------------------------------------------------------- add_table


def run_manage(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return manage(*args, env={**os.environ, **env}, timeout=60)


@pytest.mark.slow  # four manage.py subprocesses
def test_add_table_registers_a_table_and_rejects_bad_ones(
    tmp_path, tmp_path_factory, delta_table_factory
):
    env = {
        # Outside the allowed root: a root holding the database refuses to start.
        "DATABASE_URL": f"sqlite:///{tmp_path_factory.mktemp('db') / 'db.sqlite3'}",
        "AUDIT_ALLOWED_ROOTS": str(tmp_path),
    }
    assert run_manage("migrate", "-v", "0", env=env).returncode == 0
    path = delta_table_factory("orders", commits=2)

    ok = run_manage("add_table", str(path), "--name", "Orders", env=env)
    assert ok.returncode == 0, ok.stderr
    assert "registered table 1 'Orders'" in ok.stdout
    again = run_manage("add_table", str(path), env=env)
    assert again.returncode == 0 and "already registered" in again.stdout

    (tmp_path / "empty").mkdir()
    not_delta = run_manage("add_table", str(tmp_path / "empty"), env=env)
    assert not_delta.returncode == 2
    assert not_delta.stderr.count("\n") == 1 and "not a Delta table" in not_delta.stderr
    outside = run_manage("add_table", "/etc", env=env)
    assert outside.returncode == 2 and "not under an allowed root" in outside.stderr
