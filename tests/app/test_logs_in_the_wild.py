"""Logs as they are found: cleaned-up histories, checkpoint-only logs, history gaps.

Tables are written by deltalake and cleaned up by deltalake's own log cleanup
(`delta.logRetentionDuration` + checkpoint + `cleanup_metadata()`), or by deleting files as
cleanup would.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from deltalake import DeltaTable, write_deltalake

from audit.ingest.tables import register_table
from audit.models import Commit, Finding, Table
from audit.tail import kept_logs
from audit.tail.step import reaudit, tail_once
from tests.support.cli import manage
from tests.support.tables import rows

RETAIN_NOTHING = {"delta.logRetentionDuration": "interval 0 seconds"}


def _append(path: Path, n: int, start: int = 100) -> None:
    for i in range(n):
        write_deltalake(str(path), rows(2, start=start + 10 * i), mode="append")


def _cleanup(path: Path) -> list[str]:
    """Checkpoint the latest version, then let deltalake delete the expired log files."""
    table = DeltaTable(str(path))
    table.create_checkpoint()
    table.cleanup_metadata()
    return sorted(p.name for p in (path / "_delta_log").iterdir())


def _audit_json(path: Path, *extra: str) -> tuple[int, dict | None, str]:
    proc = manage("audit", str(path), "--json", *extra)
    return proc.returncode, json.loads(proc.stdout) if proc.stdout.strip() else None, proc.stderr


def _stored(table: Table) -> list[int]:
    return list(
        Commit.objects.filter(table=table).order_by("version").values_list("version", flat=True)
    )


@pytest.fixture(autouse=True)
def _fresh_tail_cache():
    kept_logs.forget_all()
    yield
    kept_logs.forget_all()


@pytest.mark.parametrize("keep_checkpoint_commit", [True, False])
def test_audit_of_a_log_where_only_a_checkpoint_remains(tmp_path, keep_checkpoint_commit):
    path = tmp_path / "t"
    write_deltalake(str(path), rows(), configuration=RETAIN_NOTHING)
    _append(path, 4)
    names = _cleanup(path)
    assert names == [
        "00000000000000000004.checkpoint.parquet",
        "00000000000000000004.json",
        "_last_checkpoint",
    ]
    if not keep_checkpoint_commit:
        (path / "_delta_log" / "00000000000000000004.json").unlink()
    code, report, err = _audit_json(path, "--files")
    assert code == 0, err
    assert report["table"]["version"] == 4
    assert report["table"]["first_available_version"] == 4
    assert [c["version"] for c in report["commits"]] == ([4] if keep_checkpoint_commit else [])
    live = sorted(report["live_files"])
    assert live == sorted(uri.rsplit("/", 1)[-1] for uri in DeltaTable(str(path)).file_uris())
    assert len(live) == 5


@pytest.mark.django_db
def test_a_checkpoint_only_table_is_tailed_from_where_its_log_starts(tmp_path, settings):
    settings.AUDIT_ALLOWED_ROOTS = [str(tmp_path)]
    path = tmp_path / "t"
    write_deltalake(str(path), rows(), configuration=RETAIN_NOTHING)
    _append(path, 3)
    _cleanup(path)
    _append(path, 1, start=500)
    # deltalake cannot write to a log without the checkpoint's commit file: remove it after.
    (path / "_delta_log" / "00000000000000000003.json").unlink()
    table, _ = register_table(str(path))
    assert table.first_available_version == 3
    assert tail_once(table.id).status == "ok"
    assert _stored(table) == [4]
    _append(path, 1, start=600)
    result = tail_once(table.id)
    assert result.status == "ok", result.line()
    assert _stored(table) == [4, 5]
    assert not Finding.objects.filter(table=table, kind="history_gap").exists()


@pytest.mark.django_db
def test_versions_cleaned_up_before_ingestion_are_a_history_gap_then_the_tail_resumes(
    tmp_path, settings
):
    settings.AUDIT_ALLOWED_ROOTS = [str(tmp_path)]
    path = tmp_path / "t"
    write_deltalake(str(path), rows(), configuration=RETAIN_NOTHING)
    _append(path, 2)
    table, _ = register_table(str(path))
    assert tail_once(table.id).status == "ok"
    assert _stored(table) == [0, 1, 2]

    # The tail falls behind; meanwhile 5 commits land and cleanup removes 3..6 (v7 keeps its
    # commit file next to the checkpoint).
    _append(path, 5, start=200)
    _cleanup(path)
    result = tail_once(table.id)
    assert result.status == "ok", result.line()
    table.refresh_from_db()
    assert table.status == "ok"
    assert table.first_available_version == 7
    assert _stored(table) == [0, 1, 2, 7]
    gap = Finding.objects.get(table=table, kind="history_gap")
    assert (gap.version, gap.related_versions, gap.status) == (3, [6], "open")
    assert gap.details["lost_count"] == 4 and gap.details["checkpoint"] == 7
    assert "versions 3..6 were removed by log cleanup" in gap.summary

    # Tailing goes on, and the gap is not resolved by later audits.
    _append(path, 2, start=900)
    assert tail_once(table.id).status == "ok"
    assert _stored(table) == [0, 1, 2, 7, 8, 9]
    reaudit(table.id)
    assert Finding.objects.get(table=table, kind="history_gap").status == "open"


@pytest.mark.django_db
def test_a_gap_no_checkpoint_covers_stays_a_clear_error(tmp_path, settings):
    settings.AUDIT_ALLOWED_ROOTS = [str(tmp_path)]
    path = tmp_path / "t"
    write_deltalake(str(path), rows())
    table, _ = register_table(str(path))
    tail_once(table.id)
    _append(path, 3)
    (path / "_delta_log" / "00000000000000000002.json").unlink()
    result = tail_once(table.id)
    assert result.status == "error"
    assert "missing version 2" in result.message, result.message
    assert not Finding.objects.filter(table=table, kind="history_gap").exists()


def _make_catalog_managed(path: Path, feature: str) -> None:
    """A deltalake table upgraded to a catalog-managed protocol (as a catalog-aware writer
    would), with staged commits beyond the published log: v4 staged once, v5 twice (one of
    the two was never ratified; only the catalog knows which)."""
    write_deltalake(str(path), rows())
    _append(path, 2)
    log_dir = path / "_delta_log"
    protocol = {
        "protocol": {
            "minReaderVersion": 3,
            "minWriterVersion": 7,
            "readerFeatures": [feature],
            "writerFeatures": [feature, "inCommitTimestamp"],
        }
    }
    info = {
        "commitInfo": {
            "timestamp": 1_700_000_000_000,
            "inCommitTimestamp": 1_700_000_000_000,
            "operation": "UPGRADE PROTOCOL",
            "operationParameters": {},
            "engineInfo": "Apache-Spark/4.0.0 Delta-Lake/4.0.0",
        }
    }
    (log_dir / "00000000000000000003.json").write_text(
        json.dumps(info) + "\n" + json.dumps(protocol) + "\n"
    )
    staged = log_dir / "_staged_commits"
    staged.mkdir()
    for version, uid in ((4, "0f3c"), (5, "1a2b"), (5, "9e8d")):
        name = f"{version:020d}.{uid}0000-0000-4000-8000-000000000000.json"
        (staged / name).write_text(json.dumps(info) + "\n")


@pytest.mark.parametrize("feature", ["catalogManaged", "catalogOwned-preview"])
def test_catalog_managed_tables_audit_the_published_log_and_say_what_is_unseen(tmp_path, feature):
    path = tmp_path / "t"
    _make_catalog_managed(path, feature)
    code, report, err = _audit_json(path)
    assert code == 0, err
    assert [c["version"] for c in report["commits"]] == [0, 1, 2, 3]
    (finding,) = [f for f in report["findings"] if f["kind"] == "catalog_managed_log"]
    assert finding["severity"] == "info"
    assert finding["version"] == 3 and finding["related_versions"] == [4, 5]
    assert f"catalog-managed table ({feature})" in finding["summary"]
    assert "2 staged commit file(s) for version(s) 4..5" in finding["summary"]


@pytest.mark.django_db
def test_a_catalog_managed_table_is_tailed_with_its_notice(tmp_path, settings):
    settings.AUDIT_ALLOWED_ROOTS = [str(tmp_path)]
    path = tmp_path / "t"
    _make_catalog_managed(path, "catalogManaged")
    table, _ = register_table(str(path))
    result = tail_once(table.id)
    assert result.status == "ok", result.line()
    assert _stored(table) == [0, 1, 2, 3]
    notice = Finding.objects.get(table=table, kind="catalog_managed_log")
    assert notice.related_versions == [4, 5] and notice.status == "open"
