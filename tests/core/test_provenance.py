"""Who wrote each commit: the report's `provenance`, on tables of real writers and on Delta's
golden tables with recorded Spark commit info."""

from __future__ import annotations

from pathlib import Path

from deltalake import CommitProperties, Transaction, write_deltalake
from hypothesis import given
from hypothesis import settings as hyp_settings
from hypothesis import strategies as st

from audit.core.history import provenance
from audit.core.history.provenance import MAX_CUSTOM, MAX_TEXT
from audit.core.history.summary import load_history
from audit.core.report import build_report
from tests.support.tables import rows

GOLDEN = Path(__file__).resolve().parents[1] / "data" / "delta-tables"


def _provenance(uri: str) -> list[dict]:
    return [c["provenance"] for c in build_report(load_history(uri), None)["commits"]]


def test_it_names_user_metadata_and_custom_properties_a_delta_rs_writer_recorded(tmp_path):
    write_deltalake(str(tmp_path), rows(1))
    props = CommitProperties(
        custom_metadata={"userName": "alice", "job": "nightly-etl", "ticket": "T-7"},
        app_transactions=[Transaction("stream-1", 4)],
    )
    write_deltalake(str(tmp_path), rows(1), mode="append", commit_properties=props)
    first, second = _provenance(str(tmp_path))
    assert first["engine"].startswith("delta-rs:") and "user_name" not in first
    assert "custom" not in first and "txn" not in first
    assert second["user_name"] == "alice"
    assert second["job_id"] == "nightly-etl"
    assert second["custom"] == {"ticket": "T-7"}
    assert second["client_version"].startswith("delta-rs.")
    assert second["txn"] == [{"app_id": "stream-1", "version": 4}]


def test_it_reads_spark_commit_info_of_a_golden_table():
    (only,) = _provenance(str(GOLDEN / "golden" / "deltalog-commit-info"))
    assert only == {
        "user_name": "username_0",
        "user_id": "user_0",
        "job_id": "job_id_0",
        "job_name": "job_name_0",
        "run_id": "run_id_0",
        "job_owner_id": "job_owner_0",
        "trigger_type": "trigger_type_0",
        "notebook_id": "notebook_id_0",
        "cluster_id": "cluster_id_0",
        "user_metadata": "foo",
    }


def test_it_keeps_spark_tags_as_custom_properties():
    path = GOLDEN / "spark" / "variant-stats-no-checkpoint"
    tagged = [p for p in _provenance(str(path)) if "custom" in p]
    assert [p["custom"] for p in tagged] == [
        {"restoresDeletedRows": "false"},
        {"noRowsCopied": "true", "restoresDeletedRows": "false"},
    ]


def test_it_bounds_what_a_hostile_commit_can_make_it_keep(tmp_path):
    custom = {f"k{i:03}": "v" for i in range(MAX_CUSTOM * 3)}
    custom["userMetadata"] = "x" * (MAX_TEXT * 5)
    props = CommitProperties(custom_metadata=custom)
    write_deltalake(str(tmp_path), rows(1), commit_properties=props)
    (only,) = _provenance(str(tmp_path))
    assert len(only["custom"]) == MAX_CUSTOM
    assert only["user_metadata"] == "x" * MAX_TEXT


def test_it_gives_every_commit_of_every_test_table_a_provenance():
    logs = sorted(GOLDEN.glob("*/*/_delta_log"))
    seen = 0
    for log in logs:
        try:
            history = load_history(str(log.parent))
        except Exception:  # noqa: BLE001 - the broken-on-purpose tables (README) do not load
            continue
        for entry in build_report(history, None)["commits"]:
            assert isinstance(entry["provenance"], dict)
            assert all(v not in (None, "", {}, []) for v in entry["provenance"].values())
            seen += 1
    assert seen > 100


@hyp_settings(max_examples=500, deadline=None)
@given(
    keys=st.lists(
        st.sampled_from(sorted(provenance.DEFINED_KEYS) + ["myKey", "tags", "x" * 300, ""]),
        max_size=12,
    ),
    tags=st.one_of(st.none(), st.just({}), st.dictionaries(st.text(max_size=5), st.integers())),
)
def test_custom_properties_are_the_undefined_keys_whatever_the_commit_holds(keys, tags):
    """`_custom`'s shortcut (every key defined, no tags: nothing) answers as its loop does."""
    info = {key: f"v-{key}" for key in keys}
    expected: dict = {}
    for source in (info, tags or {}):
        for key, value in source.items():
            if len(expected) >= provenance.MAX_CUSTOM:
                break
            if source is info and key in provenance.DEFINED_KEYS:
                continue
            expected[str(key)[:200]] = provenance._scalar(value)
    assert provenance._custom(info, tags) == expected
