"""Spark's own SQL parser reads the Spark SQL statements incidents carry (DELETE, UPDATE,
SELECT ... VERSION AS OF, ALTER TABLE ... SET TBLPROPERTIES), each as one plan over the
audited table. Delta's own commands (RESTORE, VACUUM, FSCK) need Delta's SQL extensions,
whose jars are not reachable here: tests/core/test_incident_statements.py reads those with
sqlglot's Spark tokenizer."""

from __future__ import annotations

import pytest
from deltalake import DeltaTable, write_deltalake

from tests.support import scenarios
from tests.support.incidents import audit_incidents
from tests.support.scenarios import DAY1, rows

pytestmark = [pytest.mark.spark, pytest.mark.slow]

DELTA_COMMANDS = ("RESTORE", "VACUUM", "FSCK", "DESCRIBE HISTORY")


@pytest.fixture(scope="module")
def parser():
    from workers.spark.session import get_spark

    session = get_spark("local[1]")
    yield session._jsparkSession.sessionState().sqlParser()
    session.stop()


def _hostile(path: str) -> None:
    write_deltalake(path, rows(DAY1, [1, 2]), partition_by=["day"])
    stale = DeltaTable(path)
    write_deltalake(path, rows('it\'s `q`\\ "d"', [3]), mode="append")
    write_deltalake(stale, rows(DAY1, [9]), mode="overwrite")


BUILDERS = {
    "overwrite": scenarios.build_stale_full_overwrite,
    "predicated": scenarios.build_ws_reorder_matching,
    "update": scenarios.build_stale_update,
    "hostile": _hostile,
}


@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_spark_parses_every_statement_it_can(parser, tmp_path, name):
    path = tmp_path / ("we`ird 'place" if name == "hostile" else name)
    BUILDERS[name](str(path))
    _, incidents = audit_incidents(path)
    statements = [
        s.code
        for i in incidents
        for s in (*i.repair, *i.inspect, *i.prevent)
        if s.engine == "spark-sql" and not s.code.startswith(DELTA_COMMANDS)
    ]
    assert any(code.startswith(("DELETE", "UPDATE")) for code in statements)
    for code in statements:
        plan = parser.parsePlan(code).toString()
        assert f"delta, {path}" in plan, plan  # one relation: the audited table, by its path
