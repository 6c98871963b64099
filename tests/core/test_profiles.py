"""Engine profiles (audit/core/conflicts/profiles.py): which writer's rules each re-check used,
and the pairs the reference rejects that the writer's own checker lets through."""

from __future__ import annotations

from audit.core.advice.isolation import isolation_settings
from audit.core.audit import audit_history
from audit.core.history.summary import load_history
from audit.core.report import commit_entry
from tests.support import dv_tables as t
from tests.support.scenarios import history, summary

KERNEL = "Kernel-3.3.0/SomeEngine"
DELTA_RS = "delta-rs.py-1.6.6"


def _audit(*summaries):
    h = history(list(summaries))
    result = audit_history(h, check_data=False)
    return h, result


def _two_deletes(engine, engine_info, **winner):
    return _audit(
        summary(0, adds={"f0": {}, "f1": {}}),
        summary(1, "DELETE", read_version=0, removes={"f0": {}}, **winner),
        summary(2, "DELETE", read_version=0, removes={"f0": {}}, engine=engine,
                engine_info=engine_info, predicate="id = 1"),
    )  # fmt: skip


def test_it_names_the_profile_of_each_rechecked_commit():
    h, result = _two_deletes("spark", "Apache-Spark/3.5.0 Delta-Lake/3.2.0")
    audit = result.commits[2]
    assert audit.profile == "spark" and not audit.departures
    assert commit_entry(h.summary(2), audit)["profile"] == "spark"
    assert "profile" not in commit_entry(h.summary(0), result.commits[0])  # not re-checked
    (row,) = isolation_settings(h, result)["profiles"]
    assert (row["profile"], row["commits"], row["pairs"], row["disagreeing_pairs"]) == (
        "spark", 1, 1, 0,
    )  # fmt: skip


def test_it_counts_kernel_writers_that_may_skip_file_checks():
    h, result = _two_deletes("other", KERNEL)
    assert result.commits[2].profile == "kernel-unknown"
    assert result.commits[2].departures == {1: "possibly no file-level checks"}
    (row,) = isolation_settings(h, result)["profiles"]
    assert row["departures"] == {"possibly no file-level checks": 1}
    assert row["source"] == "delta#7163"


def test_it_lets_delta_rs_ignore_a_winner_that_only_removed_without_data_change():
    h, result = _audit(
        summary(0, adds={"f0": {}, "f1": {}}),
        summary(1, "OPTIMIZE", read_version=0, compaction_removes=("f0",)),
        summary(2, "DELETE", read_version=0, removes={"f0": {}}, engine="delta-rs",
                engine_info=DELTA_RS, predicate="id = 1"),
    )  # fmt: skip
    assert result.commits[2].profile == "delta-rs"
    assert result.commits[2].departures == {1: "removes with dataChange=false let through"}
    # A compaction that also added files is new data to delta-rs too: no departure.
    h, result = _audit(
        summary(0, adds={"f0": {}, "f1": {}}),
        summary(1, "OPTIMIZE", read_version=0, compaction_removes=("f0",),
                compaction_adds=("g0",)),
        summary(2, "DELETE", read_version=0, removes={"f0": {}}, engine="delta-rs",
                engine_info=DELTA_RS, predicate="id = 1"),
    )  # fmt: skip
    assert not result.commits[2].departures


def test_it_judges_databricks_dml_pairs_on_one_file_by_row_level_concurrency(tmp_path):
    t.create(tmp_path)
    winner = t.stored_dv(tmp_path, [1])
    t.delete(tmp_path, 1, 0, 1, t.remove(), t.add(winner))
    t.delete(tmp_path, 2, 0, 2, t.remove(winner), t.add(t.stored_dv(tmp_path, [1, 2])))
    h = load_history(str(tmp_path))
    result = audit_history(h)
    assert result.commits[2].profile == "databricks-rlc"
    assert result.commits[2].departures == {1: "row-level: only the same rows conflict"}
