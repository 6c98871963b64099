"""Isolation settings and partitioning recommendations on tables written by real deltalake writers."""

from __future__ import annotations

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake

from audit.core.advice.isolation import isolation_settings
from audit.core.advice.partitioning import recommend_partitioning
from audit.core.anomalies.settings import setting_understood
from audit.core.audit import audit_history
from audit.core.history.summary import load_history
from tests.support.advice_tables import build_concurrent_date_rewrites, day_rows
from tests.support.paths import DELTA_TABLES

TABLES = DELTA_TABLES


def build_concurrent_id_rewrites(path: str) -> None:
    """The same shape on the id column: disjoint too, but id is unique per row."""
    for day in range(20):
        write_deltalake(path, day_rows(day), mode="append")
    for k in range(2):
        deleter, updater = DeltaTable(path), DeltaTable(path)
        deleter.delete(f"id < {50 + 10 * k}")
        updater.update(predicate=f"id > {900 - 10 * k}", updates={"value": "value + 1"})


def advise(path: str) -> tuple[dict, dict]:
    history = load_history(path)
    result = audit_history(history, check_data=False)
    return isolation_settings(history, result), recommend_partitioning(history, result)


def test_it_recommends_partitioning_by_the_column_concurrent_predicates_split(tmp_path):
    path = str(tmp_path / "t")
    build_concurrent_date_rewrites(path)
    _, advice = advise(path)
    assert advice["overlapping_pairs"] == 3
    assert advice["recommended_columns"] == ["date"]
    (date,) = [c for c in advice["candidates"] if c["column"] == "date"]
    assert date["pairs_made_disjoint"] == 3 and date["overlapping_pairs"] == 3
    # live days: 20 minus those deleted (before Jan 5)
    assert date["partitions_created"] == 16
    assert date["cardinality"]["source"] == "file_stats"
    assert not date["warnings"]
    assert "deletion vectors" in advice["row_level_concurrency"]["advice"]


def test_it_never_recommends_a_high_cardinality_id_column(tmp_path):
    path = str(tmp_path / "t")
    build_concurrent_id_rewrites(path)
    _, advice = advise(path)
    (candidate,) = [c for c in advice["candidates"] if c["column"] == "id"]
    assert candidate["pairs_made_disjoint"] == 2  # disjoint, so it is a candidate ...
    assert not candidate["recommended"]  # ... but never a partition column
    assert any("id-like" in w or "high cardinality" in w for w in candidate["warnings"])
    assert "id" not in advice["recommended_columns"]


def test_it_counts_observed_pairs_in_the_resolved_matrix(tmp_path):
    path = str(tmp_path / "t")
    build_concurrent_date_rewrites(path)
    settings, _ = advise(path)
    assert settings["isolation_level"] == "Serializable"  # delta-rs without the property
    assert settings["row_level_concurrency"]["applies"] is False
    cells = {(c["a"], c["b"]): c for c in settings["matrix"]["cells"]}
    udm = cells[("UPDATE/DELETE/MERGE", "UPDATE/DELETE/MERGE")]
    assert udm["verdict"] == "can_conflict"
    assert udm["observed_pairs"] == 3
    assert udm["conflicting_pairs"]["Serializable"] == 3
    assert sum(c["observed_pairs"] for c in cells.values()) == 3


def test_it_reports_a_write_serializable_setting_delta_rs_ignores(tmp_path):
    path = str(tmp_path / "t")
    write_deltalake(path, day_rows(0), configuration={"delta.isolationLevel": "WriteSerializable"})
    write_deltalake(path, day_rows(1), mode="append")
    settings, _ = advise(path)
    (engine,) = settings["engines"]
    assert engine["engine"] == "delta-rs"
    assert engine["setting_understood"] is False
    assert engine["effective_level"] == "Serializable"
    assert "Serializable" in engine["note"]


@pytest.mark.parametrize(
    "engine, value, understood",
    [
        ("delta-rs", "writeSerializable", True),
        ("delta-rs", "WriteSerializable", False),
        ("delta-rs", "serializable", True),
        ("spark", "WriteSerializable", True),
        ("databricks", "Serializable", True),
        ("spark", "Snapshot", False),
    ],
)
def test_setting_understood_per_engine(engine, value, understood):
    assert setting_understood(engine, value) is understood


def test_it_suggests_a_merge_condition_with_partition_literals(tmp_path):
    path = str(tmp_path / "t")
    data = pa.table(
        {"user_id": [1, 2], "date": ["2024-01-01", "2024-01-02"], "country": ["US", "FR"]}
    )
    write_deltalake(path, data, partition_by=["date", "country"])
    source = pa.table({"user_id": [1], "date": ["2024-01-01"], "country": ["US"]})
    (
        DeltaTable(path)
        .merge(
            source,
            "s.user_id = t.user_id AND s.date = t.date AND s.country = t.country",
            source_alias="s",
            target_alias="t",
        )
        .when_matched_update_all()
        .when_not_matched_insert_all()
        .execute()
    )
    _, advice = advise(path)
    (rewrite,) = advice["merge_rewrites"]
    assert rewrite["partition_values"] == {"date": "2024-01-01", "country": "US"}
    assert "t.date = '2024-01-01'" in rewrite["rewritten"]
    assert "t.country = 'US'" in rewrite["rewritten"]


def test_it_resolves_settings_for_a_real_deletion_vector_table():
    settings, advice = advise(str(TABLES / "spark" / "table-with-dv-small"))
    assert settings["deletion_vectors"] is True
    assert settings["row_level_concurrency"]["table_qualifies"] is True
    assert settings["row_level_concurrency"]["applies"] is False  # OSS Spark, not Databricks 14.2+
    assert advice["overlapping_pairs"] == 0
