"""The statements an incident carries: their exact text, Spark SQL read back by sqlglot's Spark
dialect (Delta's own commands, which sqlglot does not parse, by its Spark tokenizer), and
values from a hostile log that cannot break out of a literal or an identifier. Spark's own
parser reads them too: tests/e2e/test_incident_sql_spark.py."""

from __future__ import annotations

import pytest
import sqlglot
from deltalake import DeltaTable, write_deltalake
from sqlglot import exp
from sqlglot.tokens import TokenType

from audit.core.incidents.quoting import (
    Unsafe,
    python_literal,
    spark_predicate,
    spark_string,
    spark_table,
)
from audit.core.predicates import parse_predicate
from audit.core.vocab import IncidentCause as C
from tests.support import scenarios
from tests.support.incidents import audit_incidents, by_cause, run_deltalake, table_rows
from tests.support.scenarios import DAY1, rows

# Delta's commands (RESTORE, VACUUM, FSCK, DESCRIBE HISTORY ... LIMIT) are not sqlglot's.
DELTA_COMMANDS = ("RESTORE", "VACUUM", "FSCK", "DESCRIBE HISTORY")


def check_spark_sql(code: str, uri: str) -> None:
    """One statement, about the table at `uri` and nothing else; parsed where sqlglot can."""
    tokens = sqlglot.tokenize(code, read="spark")
    assert TokenType.SEMICOLON not in {t.token_type for t in tokens}
    names = [t.text for t in tokens if t.token_type == TokenType.IDENTIFIER]
    assert uri in names, (uri, names)
    if code.startswith(DELTA_COMMANDS):
        at = [i for i, t in enumerate(tokens) if t.token_type == TokenType.IDENTIFIER][0]
        assert [t.text for t in tokens[at - 2 : at]] == ["delta", "."]
        rest = tokens[at + 1 :]
        assert {t.token_type for t in rest} <= {TokenType.VAR, TokenType.NUMBER, TokenType.ALIAS,
                                                 TokenType.LIMIT, TokenType.TO}  # fmt: skip
        return
    (statement,) = sqlglot.parse(code, read="spark", error_level=sqlglot.ErrorLevel.RAISE)
    assert not isinstance(statement, exp.Command)
    (table,) = [t for t in statement.find_all(exp.Table) if t.db]
    assert (table.db, table.name) == ("delta", uri)


def _all(incident):
    return [*incident.repair, *incident.inspect, *incident.prevent]


def test_it_states_the_repair_of_a_stale_overwrite_exactly(tmp_path):
    scenarios.build_stale_full_overwrite(str(tmp_path))
    _, incidents = audit_incidents(tmp_path)
    incident = by_cause(incidents, C.STALE_WRITE_UNCHECKED)
    (name,) = [p.rsplit("/", 1)[-1] for p in incident.damage.files]
    spark = {s.code.split()[0]: s.code for s in _all(incident) if s.engine == "spark-sql"}
    assert spark == {
        "DELETE": f"DELETE FROM delta.`{tmp_path}` WHERE _metadata.file_name IN ('{name}')",
        "SELECT": f"SELECT *, _metadata.file_name FROM delta.`{tmp_path}` VERSION AS OF 3 "
        f"WHERE _metadata.file_name IN ('{name}')",
    }
    for code in spark.values():
        check_spark_sql(code, str(tmp_path))
    for statement in _all(incident):
        assert statement.does and statement.does_not


def test_it_states_a_predicated_delete_and_the_setting_exactly(tmp_path):
    scenarios.build_ws_reorder_matching(str(tmp_path))
    _, incidents = audit_incidents(tmp_path)
    incident = by_cause(incidents, C.STALE_WRITE_WRITE_SERIALIZABLE)
    (delete,) = [s.code for s in incident.repair if s.engine == "spark-sql"]
    assert delete.startswith(f"DELETE FROM delta.`{tmp_path}` WHERE (`id` >= 4) AND ")
    (alter,) = [s.code for s in incident.prevent if s.engine == "spark-sql"]
    assert alter == (
        f"ALTER TABLE delta.`{tmp_path}` SET TBLPROPERTIES "
        "('delta.isolationLevel' = 'serializable')"  # the spelling delta-rs parses too
    )
    for statement in _all(incident):
        if statement.engine == "spark-sql":
            check_spark_sql(statement.code, str(tmp_path))
        else:
            compile(statement.code, "<statement>", "exec")


def test_every_spark_statement_of_the_scenarios_reads_back(tmp_path):
    builders = [
        scenarios.build_stale_update,
        scenarios.build_stale_unconditional_delete,
        scenarios.build_stale_predicated_delete_after_optimize,
    ]
    for n, build in enumerate(builders):
        path = tmp_path / str(n)
        build(str(path))
        _, incidents = audit_incidents(path)
        statements = [s for i in incidents for s in _all(i)]
        assert any(s.engine == "spark-sql" for s in statements)
        for statement in statements:
            if statement.engine == "spark-sql":
                check_spark_sql(statement.code, str(path))


HOSTILE = 'it\'s `q`\\ "d"\nnext'


def test_hostile_names_stay_inside_their_literals_and_the_repair_still_works(tmp_path):
    """A table location, a partition value and a condition holding quotes, backquotes,
    backslashes and a newline: every statement names them exactly and nothing more."""
    path = tmp_path / "we`ird 'place"
    uri = str(path)
    write_deltalake(uri, rows(DAY1, [1, 2]), partition_by=["day"])
    stale = DeltaTable(uri)
    write_deltalake(uri, rows(HOSTILE, [3, 4]), mode="append")
    write_deltalake(stale, rows(DAY1, [9]), mode="overwrite")  # unchecked: HOSTILE survives
    _, incidents = audit_incidents(path)
    incident = by_cause(incidents, C.STALE_WRITE_UNCHECKED)
    assert incident.damage.partitions == [f"day={HOSTILE}"]
    for statement in _all(incident):
        if statement.engine == "spark-sql":
            check_spark_sql(statement.code, uri)
    run_deltalake(incident.repair, path)
    assert table_rows(path) == [(DAY1, 9, "v9")]


def test_a_hostile_condition_is_restated_from_its_parse_only():
    quoted = parse_predicate("name = 'it\\'s' AND id < 3")
    assert spark_predicate(quoted) == "`name` = CAST(X'69742773' AS STRING) AND `id` < 3"
    assert spark_predicate(parse_predicate("`we``ird` = 1")) == "`we``ird` = 1"
    for text in (
        "id IN (SELECT id FROM other)",  # a subquery
        "java_method('java.lang.Runtime', 'getRuntime') IS NULL",  # a function
        "reflect('java.lang.Thread', 'sleep', 1) = 1",
    ):
        with pytest.raises(Unsafe):
            spark_predicate(parse_predicate(text))


def test_it_quotes_literals_and_identifiers_by_construction():
    assert spark_string("day=2024-01-01/part-0.parquet") == "'day=2024-01-01/part-0.parquet'"
    assert spark_string("a'b") == "CAST(X'612762' AS STRING)"
    assert spark_string("a\\b") == "CAST(X'615C62' AS STRING)"
    assert spark_table("/t/a`b") == "delta.`/t/a``b`"
    with pytest.raises(Unsafe):
        spark_table("/t/a\nb")
    assert python_literal(["a'\n", {"k": None}, (1,)]) == """["a'\\n", {'k': None}, (1,)]"""
    assert python_literal(float("nan")) == "float('nan')"
    assert eval(python_literal(HOSTILE)) == HOSTILE  # noqa: S307
