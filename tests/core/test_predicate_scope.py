"""Predicates at work: partition scope, partition matching, pruning by stats, pyarrow filters,
MERGE conditions, disjointness (parsing: test_predicates.py).

Real inputs: the predicates Spark wrote into the copied Delta test tables, and a table written
with the `deltalake` package (tests/support/predicate_logs.py).
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from pathlib import Path

import orjson
import pyarrow as pa
import pyarrow.dataset as ds
import pytest

from audit.core.predicates import (
    detect_target_alias,
    disjoint,
    merge_condition_lacks_partition_literal,
    names_partition_column,
    parse_predicate,
    partition_matcher,
    partition_part,
    rewrite_merge_condition,
    stats_may_match,
    to_arrow_expression,
)
from tests.support.paths import DELTA_TABLES
from tests.support.predicate_logs import commit_info, log_actions, operations

TABLES = DELTA_TABLES


# =========================================================================== partition scope


@pytest.mark.parametrize(
    ("raw", "partitions", "expected"),
    [
        ("date = '2024-01-01' AND id > 5", ["date"], "date = '2024-01-01'"),
        ('["(date#12 = 2024-01-02)", "(id#3 = 1)"]', ["DATE"], "date = '2024-01-02'"),
        ("id > 5", ["date"], None),
        ("date = '2024-01-01' OR id > 5", ["date"], None),  # mixed OR narrows nothing
        (
            "(date = 'a' OR date = 'b') AND country = 'US' AND x = 1",
            ["date", "country"],
            "(date = 'a' OR date = 'b') AND country = 'US'",
        ),
        ("TRUE", ["date"], None),
        ("t.date = s.date AND t.id = s.id", ["date"], "t.date = s.date"),
        ("p = 1", [], None),
    ],
)
def test_it_keeps_the_partition_conjuncts(
    raw: str, partitions: list[str], expected: str | None
) -> None:
    part = partition_part(parse_predicate(raw), partitions)
    assert (part.sql if part else None) == expected


def test_it_returns_the_whole_predicate_when_it_is_all_partition_part() -> None:
    pred = parse_predicate("['(p#1 = 3)']".replace("'", '"'))
    assert partition_part(pred, ["p"]) is pred
    assert partition_part(None, ["p"]) is None
    assert partition_part(parse_predicate("<bad"), ["p"]) is None


def test_it_says_whether_a_predicate_names_a_partition_column() -> None:
    pred = parse_predicate("t.Country = 'US' AND id = 1")
    assert names_partition_column(pred, ["country"])
    assert names_partition_column(pred, ["COUNTRY", "date"])
    assert not names_partition_column(pred, ["date"])
    assert not names_partition_column(None, ["date"])


# =========================================================================== partition matcher


@pytest.mark.parametrize(
    ("raw", "types", "values", "expected"),
    [
        ("date = '2024-01-02'", {"date": "date"}, {"date": "2024-01-02"}, True),
        ("date = '2024-01-02'", {"date": "date"}, {"date": "2024-01-03"}, False),
        ('["(date#12 = 2024-01-02)"]', {"date": "date"}, {"date": "2024-01-02"}, True),
        ('["(date#12 = 2024-01-02)"]', None, {"date": "2024-01-03"}, False),
        ("d = '2024-01-02'::date", None, {"d": "2024-01-02"}, True),
        ("d < '2024-01-02'::date", {"d": "date"}, {"d": "2024-01-01"}, True),
        ("d < '2024-01-02'::date", {"d": "date"}, {"d": "2024-01-02"}, False),
        ("d >= '2024-01-02' AND d < '2024-02-01'", {"d": "date"}, {"d": "2024-01-31"}, True),
        ("d >= '2024-01-02' AND d < '2024-02-01'", {"d": "date"}, {"d": "2024-02-01"}, False),
        ("n > 9", {"n": "integer"}, {"n": "10"}, True),  # numeric, not "10" < "9"
        ("n > 9", {"n": "long"}, {"n": "9"}, False),
        ("n > 9", None, {"n": "10"}, True),
        ("n = 5", {"n": "string"}, {"n": "05"}, True),  # Spark casts the string to a number
        ("n = '5'", {"n": "integer"}, {"n": "5"}, True),
        ("n = 1.50", {"n": "decimal(10,2)"}, {"n": "1.5"}, True),
        ("n > '10'", {"n": "integer"}, {"n": "9"}, False),
        ("n > '10'", {"n": "string"}, {"n": "9"}, True),  # "9" > "10" as strings
        ("n > '10'", None, {"n": "9"}, True),  # type unknown: either reading may hold
        ("n > '10'", None, {"n": "10"}, False),  # ... but neither does here
        ("ts = '2024-01-01T10:00:00'", None, {"ts": "2024-01-01 10:00:00"}, True),
        ("ts = '2024-01-01T10:00:00'", None, {"ts": "2024-01-01 11:00:00"}, False),
        ("n IN (1, 2, 3)", {"n": "integer"}, {"n": "2"}, True),
        ("n IN (1, 2, 3)", {"n": "integer"}, {"n": "4"}, False),
        ("n NOT IN (1, 2, 3)", {"n": "integer"}, {"n": "4"}, True),
        ("n NOT IN (1, 2, 3)", {"n": "integer"}, {"n": "2"}, False),
        ("n BETWEEN 1 AND 3", {"n": "integer"}, {"n": "3"}, True),
        ("n BETWEEN 1 AND 3", {"n": "integer"}, {"n": "4"}, False),
        ("p != 'a'", None, {"p": "a"}, False),
        ("p <> 'a'", None, {"p": "b"}, True),
        ("p != 'a'", None, {"p": None}, False),  # NULL != 'a' is NULL
        ("NOT (p = 'a')", None, {"p": None}, False),
        ("p IS NULL", None, {"p": None}, True),
        ("p IS NULL", None, {"p": ""}, True),  # Delta: an empty partition value is null
        ("p IS NULL", None, {"p": "a"}, False),
        ("isnotnull(p#1)", None, {"p": "a"}, True),
        ("isnotnull(p#1)", None, {"p": None}, False),
        ("p = 'a' OR p IS NULL", None, {"p": None}, True),
        ("p LIKE 'ab%'", None, {"p": "abc"}, True),
        ("p LIKE 'ab%'", None, {"p": "xab"}, False),
        ("p LIKE 'a_c'", None, {"p": "abc"}, True),
        ("p NOT LIKE 'ab%'", None, {"p": "abc"}, False),
        ("StartsWith(p#1, ab)", None, {"p": "abz"}, True),
        ("StartsWith(p#1, ab)", None, {"p": "ba"}, False),
        ("CAST(n AS BIGINT) = 5", {"n": "integer"}, {"n": "5"}, True),
        ("arrow_cast(n, 'Int64') = 5", {"n": "integer"}, {"n": "6"}, False),
        ("p = NULL", None, {"p": "a"}, False),
        ("p <=> NULL", None, {"p": None}, True),
        ("b", {"b": "boolean"}, {"b": "true"}, True),
        ("b", {"b": "boolean"}, {"b": "false"}, False),
        ("NOT b", {"b": "boolean"}, {"b": "false"}, True),
        ("ts > '2024-01-01 10:00:00'", {"ts": "timestamp"}, {"ts": "2024-01-01 10:00:01"}, True),
        ("ts > '2024-01-01 10:00:00'", {"ts": "timestamp"}, {"ts": "2024-01-01 09:00:00"}, False),
        ("TRUE", None, {"p": "x"}, True),
        # Unknown or unsupported: conservatively may match.
        ("upper(p) = 'A'", None, {"p": "b"}, True),
        ("p = q", None, {"p": "a", "q": "b"}, True),
        ("n > 9", {"n": "integer"}, {"n": "not-a-number"}, True),
        ("p = 'a'", None, {"other": "b"}, True),
        ("p = 'a'", None, {"p": {"hostile": ["value"]}}, True),
        ("n = 5", {"n": "integer"}, {"n": 5}, True),
        ("n = 5", {"n": "integer"}, {"n": 6}, False),
        ("ts > '2024-01-01T10:00:00Z'", {"ts": "timestamp"}, {"ts": "2024-01-01 09:00:00"}, True),
    ],
)
def test_it_matches_partition_values(
    raw: str, types: dict | None, values: dict, expected: bool
) -> None:
    columns = sorted({"date", "d", "n", "p", "q", "b", "ts"} | set(values))
    assert partition_matcher(parse_predicate(raw), columns, types)(values) is expected


def test_it_matches_only_the_partition_part() -> None:
    pred = parse_predicate('["((date#12 >= 2024-01-02) AND (id#3 = 5))"]')
    matcher = partition_matcher(pred, ["date"], {"date": "date"})
    assert matcher({"date": "2024-01-03"})  # id = 5 is not a partition question
    assert not matcher({"date": "2024-01-01"})
    assert matcher({"DATE": "2024-01-03"})  # a differently-cased key is still found
    assert partition_matcher(parse_predicate("id = 5"), ["date"])({"date": "x"})
    assert partition_matcher(None, ["date"])({"date": "x"})


def test_it_matches_the_files_a_real_delta_rs_delete_removed(delta_rs_table: Path) -> None:
    ops = operations(delta_rs_table)
    live: dict[str, dict] = {}
    for _version, actions in log_actions(delta_rs_table):
        if commit_info(actions).get("operation") == "DELETE":
            break
        for action in actions:
            if "add" in action:
                live[action["add"]["path"]] = action["add"]["partitionValues"]
    _version, params, actions = ops["DELETE"][0]
    removed = {a["remove"]["path"] for a in actions if "remove" in a}
    matcher = partition_matcher(
        parse_predicate(params["predicate"]), ["d", "country"], {"d": "date", "country": "string"}
    )
    predicted = {path for path, values in live.items() if matcher(values)}
    assert removed and predicted == removed


# =========================================================================== stats pruning

STATS = {
    "numRecords": 10,
    "minValues": {"id": 10, "name": "b", "ts": "2024-01-01T00:00:00.000Z", "d": "2024-01-05"},
    "maxValues": {"id": 20, "name": "m", "ts": "2024-01-01T10:00:00.123Z", "d": "2024-01-09"},
    "nullCount": {"id": 0, "name": 2, "ts": 0, "d": 10},
}
TYPES = {"id": "long", "name": "string", "ts": "timestamp", "d": "date", "p": "integer"}


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("id = 15", True),
        ("id = 21", False),
        ("id > 20", False),
        ("id >= 20", True),
        ("id < 10", False),
        ("id <= 10", True),
        ("id IN (1, 2, 30)", False),
        ("id IN (1, 12)", True),
        ("id BETWEEN 21 AND 30", False),
        ("id != 15", True),
        ("id IS NULL", False),  # nullCount 0
        ("name IS NULL", True),
        ("d IS NOT NULL", False),  # every d is null
        ("d = '2024-01-06'", False),
        ("name = 'a'", False),
        ("name = 'c'", True),
        ("name LIKE 'z%'", False),
        ("name LIKE 'c%'", True),
        ("ts > '2024-01-01T10:00:00.123Z'", True),  # millisecond stats: the max may be larger
        ("ts > '2024-01-01T10:00:01Z'", False),
        ("id > 20 OR name = 'c'", True),
        ("id > 20 AND name = 'c'", False),
        ("NOT (id BETWEEN 0 AND 100)", False),
        ("p = 1", True),
        ("p = 2", False),
        ("unknown_col = 1", True),
        ('["(id#7L = 15)"]', True),
        ('["(id#7L = 25)"]', False),
    ],
)
def test_it_prunes_files_by_stats(raw: str, expected: bool) -> None:
    assert stats_may_match(parse_predicate(raw), STATS, {"p": "1"}, TYPES) is expected


def test_it_is_conservative_when_stats_are_missing_or_odd() -> None:
    pred = parse_predicate("id = 25")
    assert stats_may_match(pred, None, None, None)
    assert stats_may_match(pred, {"numRecords": 5}, {}, TYPES)
    assert stats_may_match(pred, {"minValues": {"id": {"nested": 1}}}, {}, TYPES)
    assert stats_may_match(pred, {"minValues": {"id": "x"}, "maxValues": {"id": "y"}}, {}, TYPES)
    # A bogus bound is ignored, the good one still prunes.
    assert not stats_may_match(pred, {"minValues": {"id": "x"}, "maxValues": {"id": 3}}, {}, TYPES)
    assert not stats_may_match(pred, {"numRecords": 0}, {}, TYPES)
    long_max = {"minValues": {"s": "a"}, "maxValues": {"s": "a" * 32}, "nullCount": {"s": 0}}
    assert stats_may_match(parse_predicate("s = 'azzz'"), long_max, {}, {"s": "string"})
    assert stats_may_match(None, STATS, {}, TYPES)


def test_it_keeps_every_file_a_real_spark_delete_removed() -> None:
    table = TABLES / "golden" / "basic-with-inserts-deletes-checkpoint"
    live: dict[str, dict] = {}
    deletes = pruned = 0
    for _version, actions in log_actions(table):
        info = commit_info(actions)
        if info.get("operation") == "DELETE":
            deletes += 1
            pred = parse_predicate(info["operationParameters"]["predicate"])
            removed = {a["remove"]["path"] for a in actions if "remove" in a}
            may = {p for p, s in live.items() if stats_may_match(pred, s, {}, {"id": "long"})}
            assert removed <= may, info["operationParameters"]
            pruned += len(live) - len(may)
        for action in actions:
            if "add" in action:
                live[action["add"]["path"]] = orjson.loads(action["add"]["stats"])
            if "remove" in action:
                live.pop(action["remove"]["path"], None)
    assert deletes >= 5 and pruned > 0


def test_it_prunes_with_the_stats_delta_rs_writes(delta_rs_table: Path) -> None:
    ops = operations(delta_rs_table)
    _version, params, actions = ops["UPDATE"][0]
    pred = parse_predicate(params["predicate"])
    live: dict[str, dict] = {}
    for version, earlier in log_actions(delta_rs_table):
        if version >= _version:
            break
        for action in earlier:
            if "add" in action:
                live[action["add"]["path"]] = action["add"]
            if "remove" in action:
                live.pop(action["remove"]["path"], None)
    types = {"id": "long", "d": "date", "country": "string", "v": "double"}
    may = {
        path
        for path, add in live.items()
        if stats_may_match(pred, orjson.loads(add["stats"]), add["partitionValues"], types)
    }
    removed = {a["remove"]["path"] for a in actions if "remove" in a}
    assert removed and removed <= may
    assert len(may) < len(live)  # FR/DE files and ids <= 301 pruned


# =========================================================================== pyarrow


@pytest.fixture(scope="module")
def typed_parquet(tmp_path_factory: pytest.TempPathFactory) -> tuple[ds.Dataset, list[dict]]:
    from deltalake import DeltaTable, write_deltalake

    path = tmp_path_factory.mktemp("typed") / "t"
    rows = pa.table(
        {
            "id": pa.array(range(12), pa.int64()),
            "name": pa.array(["a", "b", "c", None, "ab", "abc", "b", "c", "a", None, "x", "y"]),
            "d": pa.array([dt.date(2024, 1, 1 + i % 3) for i in range(12)], pa.date32()),
            "ts": pa.array([dt.datetime(2024, 1, 1, i) for i in range(12)], pa.timestamp("us")),
            "amount": pa.array([Decimal(f"{i}.25") for i in range(12)], pa.decimal128(10, 2)),
            "score": pa.array([i / 4 for i in range(12)], pa.float64()),
            "flag": pa.array([i % 2 == 0 for i in range(12)]),
        }
    )
    write_deltalake(str(path), rows)
    files = [str(path / f) for f in DeltaTable(str(path)).file_uris()]
    dataset = ds.dataset(files, format="parquet")
    return dataset, dataset.to_table().to_pylist()


ARROW_CASES = [
    ("id >= 3 AND id <= 7", lambda r: 3 <= r["id"] <= 7),
    ('["((id#1904L >= 5) AND (id#1904L <= 9))"]', lambda r: 5 <= r["id"] <= 9),
    ("d = '2024-01-02'::date", lambda r: r["d"] == dt.date(2024, 1, 2)),
    ('["(d#12 = 2024-01-02)"]', lambda r: r["d"] == dt.date(2024, 1, 2)),
    ("name IN ('a', 'c') OR score > 2.5", lambda r: r["name"] in ("a", "c") or r["score"] > 2.5),
    ("NOT (name = 'b')", lambda r: r["name"] is not None and r["name"] != "b"),
    ("\"name\" != 'a'", lambda r: r["name"] is not None and r["name"] != "a"),
    ("amount > 5.5", lambda r: r["amount"] > Decimal("5.5")),
    ("name LIKE 'a%'", lambda r: r["name"] is not None and r["name"].startswith("a")),
    ("StartsWith(name#1, ab)", lambda r: r["name"] is not None and r["name"].startswith("ab")),
    ("flag AND id > 4", lambda r: r["flag"] and r["id"] > 4),
    ("name IS NULL", lambda r: r["name"] is None),
    ("isnotnull(name#2)", lambda r: r["name"] is not None),
    ("arrow_cast(id, 'Int64') > 5", lambda r: r["id"] > 5),
    ("d BETWEEN '2024-01-01' AND '2024-01-02'", lambda r: r["d"] <= dt.date(2024, 1, 2)),
    ("ts > '2024-01-01 05:30:00'", lambda r: r["ts"] > dt.datetime(2024, 1, 1, 5, 30)),
    ("5 < id", lambda r: r["id"] > 5),
    ("id NOT IN (1, 2, 3)", lambda r: r["id"] not in (1, 2, 3)),
    ("TRUE", lambda r: True),
]


@pytest.mark.parametrize(("raw", "manual"), ARROW_CASES, ids=[c[0] for c in ARROW_CASES])
def test_it_filters_a_real_parquet_file_like_a_manual_filter(
    typed_parquet: tuple[ds.Dataset, list[dict]], raw: str, manual
) -> None:
    dataset, rows = typed_parquet
    expression = to_arrow_expression(parse_predicate(raw), dataset.schema)
    assert expression is not None
    got = sorted(dataset.to_table(filter=expression).column("id").to_pylist())
    assert got == sorted(r["id"] for r in rows if manual(r))


@pytest.mark.parametrize(
    "raw",
    [
        "missing_column = 1",
        "upper(name) = 'A'",
        "id = 1.5",  # a fraction cannot equal an integer column's value exactly
        "id <=> 1",
        "ts > '2024-01-01T05:00:00Z'",  # aware literal, naive column
        "<garbage",
    ],
)
def test_it_declines_what_it_cannot_translate_to_arrow(
    typed_parquet: tuple[ds.Dataset, list[dict]], raw: str
) -> None:
    dataset, _rows = typed_parquet
    assert to_arrow_expression(parse_predicate(raw), dataset.schema) is None


# =========================================================================== MERGE conditions

REFERENCE_CONDITION = "s.user_id = t.user_id AND s.date = t.date AND s.country = t.country"


def test_it_rewrites_the_reference_page_merge_condition() -> None:
    assert merge_condition_lacks_partition_literal(REFERENCE_CONDITION, ["date", "country"])
    rewritten = rewrite_merge_condition(
        REFERENCE_CONDITION, {"date": "2024-01-01", "country": "US"}, None
    )
    assert rewritten == (
        "s.user_id = t.user_id AND s.date = t.date AND s.country = t.country"
        " AND t.date = '2024-01-01' AND t.country = 'US'"
    )
    assert not merge_condition_lacks_partition_literal(rewritten, ["date", "country"])


@pytest.mark.parametrize(
    ("condition", "partitions", "alias", "lacks"),
    [
        ("s.id = t.id AND s.date = t.date", ["date"], None, True),
        ("s.id = t.id AND t.date = '2024-01-01'", ["date"], None, False),
        ("s.id = t.id AND t.date IN ('2024-01-01', '2024-01-02')", ["date"], None, False),
        ("s.id = t.id AND s.date = '2024-01-01'", ["date"], None, True),  # pins the source
        ("s.id = t.id AND t.date = s.date", ["date"], None, True),
        ("u.id = e.id AND e.date = '2024-01-01'", ["date"], "e", False),
        ("u.id = e.id AND u.date = '2024-01-01'", ["date"], "e", True),
        ("source.id = target.id AND target.d = '2024-01-01'::date", ["d"], None, False),
        ("((t.date#12 = s.date#40) AND (t.date#12 = 2024-01-02))", ["date"], None, False),
        ("(id#480L = cast(id#482 as bigint))", ["date"], None, True),
        ("(t.date = '2024-01-01' OR t.date = '2024-01-02') AND s.id = t.id", ["date"], None, False),
        ("s.id = t.id", [], None, False),  # unpartitioned: nothing to pin
    ],
)
def test_it_sees_whether_a_merge_condition_pins_partitions(
    condition: str, partitions: list[str], alias: str | None, lacks: bool
) -> None:
    assert merge_condition_lacks_partition_literal(condition, partitions, alias) is lacks


@pytest.mark.parametrize(
    ("condition", "alias"),
    [
        (REFERENCE_CONDITION, "t"),
        ("target.id = source.id", "target"),
        ("updates.id = events.id", "events"),
        ("a.id = b.id", None),
        ("id = 1", None),
        ("<bad", None),
    ],
)
def test_it_detects_the_merge_target_alias(condition: str, alias: str | None) -> None:
    assert detect_target_alias(condition) == alias


def test_it_rewrites_merge_conditions_safely() -> None:
    assert rewrite_merge_condition(
        "(s.a = t.a OR s.b = t.b) AND s.d = t.d", {"d": "O'x", "c": None, "select": "1"}, "tt"
    ) == (
        "(s.a = t.a OR s.b = t.b) AND s.d = t.d"
        " AND tt.d = 'O''x' AND tt.c IS NULL AND tt.\"select\" = '1'"
    )
    # Already pinned columns are not repeated; the delta-rs form keeps its alias.
    assert rewrite_merge_condition(
        "target.id = source.id AND target.d = '2024-01-01'::date",
        {"d": "2024-01-01", "country": "US"},
        None,
    ) == (
        "target.id = source.id AND target.d = CAST('2024-01-01' AS DATE) AND target.country = 'US'"
    )
    assert rewrite_merge_condition("garbage ((", {"d": "x"}, "t") == "(garbage (() AND t.d = 'x'"


def test_it_reads_the_merge_condition_of_a_real_delta_rs_merge(delta_rs_table: Path) -> None:
    params = operations(delta_rs_table)["MERGE"][0][1]
    condition = params["mergePredicate"]
    assert not merge_condition_lacks_partition_literal(condition, ["d", "country"])
    assert rewrite_merge_condition(condition, {"country": "US"}, None).endswith(
        "AND target.country = 'US'"
    )


# =========================================================================== disjointness


@pytest.mark.parametrize(
    ("a", "b", "columns", "expected"),
    [
        ("date < '2010-01-01'", "date > '2010-01-01'", ["date"], True),
        ("date <= '2010-01-01'", "date >= '2010-01-01'", ["date"], False),
        ("date < '2010-01-01'", "date >= '2010-01-01'", ["date"], True),
        ("p = 'a'", "p = 'b'", ["p"], True),
        ("p = 'a'", "p = 'a'", ["p"], False),
        ("p IN ('a', 'b')", "p = 'c'", ["p"], True),
        ("p IN ('a', 'b')", "p IN ('b', 'c')", ["p"], False),
        ("p = 'a' OR p = 'b'", "p = 'c'", ["p"], True),
        ("p = 'a'", "p != 'a'", ["p"], True),
        ("p = 'a'", "p NOT IN ('a', 'b')", ["p"], True),
        ("p IS NULL", "p = 'a'", ["p"], True),
        ("p IS NULL", "p IS NULL", ["p"], False),
        ("p IS NOT NULL", "p IS NULL", ["p"], True),
        ("n BETWEEN 1 AND 5", "n > 5", ["n"], True),
        ("n BETWEEN 1 AND 5", "n >= 5", ["n"], False),
        ("n > 10 AND n < 5", "TRUE", ["n"], True),  # a contradiction selects nothing
        ("n = 5", "n = '5'", ["n"], False),  # '5' is cast to 5
        ("n = 5", "n = 6.0", ["n"], True),
        ('["(date#12 = 2024-01-02)"]', "date = '2024-01-03'::date AND x = 1", ["date"], True),
        ('["(date#12 = 2024-01-02)"]', "date = '2024-01-02'::date", ["date"], False),
        ("d = '2024-01-02'", "d = '2024-01-02 00:00:00'::timestamp", ["d"], False),
        ("p = 'a' AND q = 1", "p = 'a' AND q = 2", ["p", "q"], True),
        ("p = 'a' AND q = 1", "p = 'a' AND q = 2", ["p"], False),
        ("p = 'a'", "x = 1", ["p"], False),  # b reads every p
        ("p LIKE 'a%'", "p = 'b'", ["p"], None),  # not modelled
        ("upper(p) = 'A'", "p = 'b'", ["p"], None),
        ("p = 'a' OR x = 1", "p = 'b'", ["p"], None),
        ("p > 5", "p < 'abc'", ["p"], None),  # incomparable literals
        ("p = 'a'", "p = 'b'", [], None),
    ],
)
def test_it_decides_disjointness(a: str, b: str, columns: list[str], expected: bool | None) -> None:
    assert disjoint(parse_predicate(a), parse_predicate(b), columns) is expected
    assert disjoint(parse_predicate(b), parse_predicate(a), columns) is expected


def test_it_cannot_judge_disjointness_without_predicates() -> None:
    assert disjoint(None, parse_predicate("p = 1"), ["p"]) is None
    assert disjoint(parse_predicate("<bad"), parse_predicate("p = 1"), ["p"]) is None
