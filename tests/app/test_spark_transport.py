"""A task's commits reach the driver by column (workers/spark/transport.py) as they left it.

No Spark session: each unit's rows are made as a task makes them (pickled), cut into rows of
very few commits (so a unit spans several rows), and decoded as the driver decodes them.
Storage asks for no file paths (the job's default, `paths=False`): the summaries then equal
the Python path's with every path field empty, and nothing else differs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from audit.core import serialize
from audit.core.audit import audit_history
from audit.core.errors import DeltaAuditError
from audit.core.history.summary import load_history
from audit.core.model import EMPTY_SET, SUMMARY_FIELDS
from tests.support import revealing_tables
from tests.support.paths import DELTA_TABLES

pytestmark = pytest.mark.slow

PATH_FIELDS = ("removed_paths", "removed_paths_all", "added_paths", "compacted_paths")


def without_paths(summary: Any) -> tuple[Any, ...]:
    return tuple(
        EMPTY_SET if name in PATH_FIELDS else getattr(summary, name) for name in SUMMARY_FIELDS
    )


def decoded_outcome(uri: str, chunk: int, row_commits: int) -> Any:
    from workers.spark.job import decode_row, outcome_from_units, plan_table
    from workers.spark.units import DataReads, unit_rows

    plan = plan_table(uri, chunk)
    rows = []
    for unit in plan.units:
        for row in unit_rows(unit, plan.listing, DataReads(), paths=False, row_commits=row_commits):
            assert isinstance(row["payload"], bytes)
            rows.append(decode_row(row))
    return outcome_from_units(uri, rows, plan.listing, False)


def seen(history: Any, audits: Any) -> dict[str, Any]:
    return {
        "summaries": [without_paths(s) for s in history.summaries],
        "audits": {v: serialize.commit_audit_to_json(a) for v, a in audits.items()},
    }


def tables() -> list[str]:
    return sorted(str(p.parent) for p in DELTA_TABLES.glob("*/**/_delta_log") if p.is_dir())


@pytest.mark.parametrize("chunk", [2, 10_000])
@pytest.mark.parametrize("uri", tables(), ids=lambda u: "/".join(Path(u).parts[-2:]))
def test_summaries_and_audits_arrive_without_paths_and_otherwise_equal(uri, chunk):
    try:
        history = load_history(uri)
        want = seen(history, audit_history(history).commits)
        outcome = decoded_outcome(uri, chunk, row_commits=2)
    except DeltaAuditError:
        return  # a log both paths refuse (test_spark_split_ranges checks the messages)
    assert outcome.error is None, outcome.error
    got = seen(outcome.history, outcome.audit.commits)
    assert got == want
    for summary in outcome.history.summaries:
        assert all(getattr(summary, name) == EMPTY_SET for name in PATH_FIELDS)


def test_compacted_paths_are_dropped_and_the_rest_of_the_rare_fields_kept(tmp_path):
    """A summary whose rare fields hold compacted paths and something else (an OPTIMIZE with
    a user name): the paths go, the user stays."""
    from workers.spark import transport

    uri = str(tmp_path / "random")
    revealing_tables.build_random_history(uri, seed=3)
    summaries = load_history(uri).summaries
    summaries[0].compacted_paths = frozenset({"a.parquet", "b.parquet"})
    summaries[0].user_name = "someone"
    back = transport.summaries_from_columns(transport.summary_columns(summaries, paths=False))
    assert [without_paths(s) for s in back] == [without_paths(s) for s in summaries]
    assert back[0].user_name == "someone" and back[0].compacted_paths == EMPTY_SET
    with_paths = transport.summaries_from_columns(transport.summary_columns(summaries, True))
    assert with_paths == summaries
