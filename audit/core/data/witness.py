"""Confirm never-existed snapshots by finding the rows in the data files.

A candidate (anomalies/never_existed.StaleCandidate) names files a destructive commit left alive. We evaluate
that commit's predicate on them: first on partition values and file statistics (cheap; used to
discard files), then on the data itself with pyarrow, reading only the columns the predicate
needs. Rows a file's deletion vector deletes (dv.py) are left out; a file whose vector cannot
be read is not counted. A finding is `confirmed` only when rows were found. Files that are gone
(vacuumed) or unreadable leave it unconfirmed, with the reason in `note`.

A log's paths are untrusted: a file is opened only when it resolves inside the table's read
scope (its own location, its project's granted roots, never another project's table:
audit/core/storage/roots.py), by its resolved location and with the table's own credentials; a
refused file is never opened and the witness lists it under `not_read`.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol

import orjson
import pyarrow as pa
import pyarrow.parquet as pq

from audit.core.data import dv, rowfilter
from audit.core.data.files import DataFiles
from audit.core.errors import DeltaAuditError, one_line
from audit.core.jsonsafe import cell_value
from audit.core.model import AddFile, CommitSummary, Metadata, Predicate
from audit.core.scrub import scrub_error
from audit.core.storage import roots as allowed
from audit.core.vocab import Operation

if TYPE_CHECKING:
    from pyroaring import BitMap64

    from audit.core.history.summary import History

# At most this many surviving files are read per candidate; by default this many rows sampled
# (the shell passes its own number: AUDIT_WITNESS_SAMPLE_ROWS; 0 keeps counts and file names).
MAX_FILES_READ = 50
MAX_SAMPLE_ROWS = 5

Status = Literal["rows", "no_rows", "unreadable", "unevaluable", "unchecked"]


# What the witness needs of a candidate and of the audit's table context. Protocols, so this
# lower layer never imports the audit (anomalies/never_existed.py, conflicts/context.py).
class Candidate(Protocol):
    txn: CommitSummary
    read_version: int | None
    files: dict[int, list[str]]  # version that added them -> surviving paths


class TableFacts(Protocol):
    def metadata_at(self, version: int) -> Metadata | None: ...

    def partition_types(self, metadata: Metadata | None) -> dict[str, str]: ...


@dataclass(slots=True)
class Outcome:
    status: Status
    witness: dict[str, Any] | None
    note: str

    @property
    def confirmed(self) -> bool:
        return self.status == "rows"


def confirm_candidate(
    history: History,
    ctx: TableFacts,
    candidate: Candidate,
    *,
    check_data: bool = True,
    roots: Sequence[str] | None = None,
    sample_rows: int | None = None,
    vectors: dv.Loader | None = None,
) -> Outcome:
    """Look for rows of the candidate's surviving files that its commit should have changed.

    Data files are read only inside `roots` (None: the table's own root only); deletion
    vectors through `vectors`, the pass's loader (None: one of this call's own)."""
    predicate = effective_predicate(candidate.txn)
    read_at = (
        candidate.read_version if candidate.read_version is not None else candidate.txn.version - 1
    )
    metadata = ctx.metadata_at(read_at)
    partition_columns = list(metadata.partition_columns) if metadata else []
    partition_types = ctx.partition_types(metadata)
    column_types = column_types_of(metadata.schema_string if metadata else None)
    if (
        predicate is None
        and (candidate.txn.operation or "").upper() == Operation.MERGE
        and candidate.txn.predicate
    ):
        return Outcome(
            "unevaluable", None, "the MERGE condition has no target-side literal part to evaluate"
        )
    adds = _add_actions(history, candidate.files, read_logs=check_data)
    pruned, method = _prune(adds, predicate, partition_columns, partition_types, column_types)
    if adds and not pruned:
        return Outcome("no_rows", None, f"no surviving file can hold matching rows ({method})")
    if not check_data:
        return Outcome("unchecked", None, "data files were not read (check_data is off)")
    if not adds:
        return Outcome(
            "unreadable", None, "the add actions of the surviving files could not be read"
        )
    names = rowfilter.name_tree(metadata.schema_string if metadata else None)
    return find_rows(
        history.table_uri,
        pruned,
        predicate,
        partition_types,
        names=names,
        roots=roots,
        sample_rows=sample_rows,
        shared=vectors.files if vectors is not None else None,
    )


def effective_predicate(txn: Any) -> Predicate | None:
    """The condition whose matching rows the commit should have changed; None means every row.

    For a MERGE only the target-side conjuncts comparing target columns with literals can be
    evaluated on the target's files (`t.date = '2024-01-01'`, not `t.id = s.id`); None when
    there are none (the caller then leaves the finding unconfirmed).
    """
    predicate: Predicate | None = txn.predicate
    if predicate is None or predicate.raw.strip().lower() in ("", "true", "(true)"):
        return None
    if (txn.operation or "").upper() == Operation.MERGE:
        return merge_target_part(predicate)
    return predicate


def merge_target_part(predicate: Predicate) -> Predicate | None:
    """The conjuncts of a MERGE condition that involve only the target and literals."""
    from audit.core import predicates
    from audit.core.predicates.sql_templates import literal_template, substitute

    # MERGE conditions that differ only in their literals share their template's cut.
    templated = literal_template(predicate.sql) if predicate.sql else None
    if templated is not None:
        part = _merge_template_part(templated[0])
        if part is not _PARSE_IN_FULL:
            if part is None or part is _WHOLE:
                return predicate if part is _WHOLE else None
            return predicates.parse_predicate(substitute(part, templated[1]))
    expression = predicates.expression_of(predicate)
    if expression is None:
        return None
    kept, whole = _merge_kept(expression, predicates.detect_target_alias(predicate))
    if not kept:
        return None
    if whole:
        return predicate
    return predicates.parse_predicate(_and_sql(kept))


_PARSE_IN_FULL = object()
_WHOLE = object()


@functools.lru_cache(maxsize=4096)
def _merge_template_part(template: str) -> Any:
    """merge_target_part of a literal template: None, _WHOLE, the part's template SQL, or
    _PARSE_IN_FULL when the template cannot stand for its conditions."""
    from sqlglot import exp

    from audit.core import predicates
    from audit.core.predicates.sql_templates import SENTINEL, template_expression

    expression = template_expression(template)
    if expression is None or any(
        SENTINEL.search(str(node.this)) for node in expression.find_all(exp.Identifier)
    ):
        return _PARSE_IN_FULL  # a literal inside a name: the alias could differ
    alias = predicates.detect_target_alias(
        Predicate(raw=template, sql=template, columns=frozenset())
    )
    kept, whole = _merge_kept(expression, alias)
    if not kept:
        return None
    if whole:
        return _WHOLE
    sql = _and_sql(kept)
    found = SENTINEL.findall(sql)
    return sql if len(found) == len(set(found)) else _PARSE_IN_FULL


def _merge_kept(expression: Any, alias: str | None) -> tuple[list[Any], bool]:
    """The terms comparing target columns with literals, and whether they are all the terms."""
    from sqlglot import exp

    terms = list(expression.flatten()) if isinstance(expression, exp.And) else [expression]
    kept = []
    for term in terms:
        columns = list(term.find_all(exp.Column))
        if not columns or not any(True for _ in term.find_all(exp.Literal)):
            continue
        if all(
            not c.table or (alias is not None and c.table.lower() == alias.lower()) for c in columns
        ):
            kept.append(term)
    return kept, len(kept) == len(terms)


def _and_sql(terms: list[Any]) -> str:
    from sqlglot import exp

    return exp.and_(*(t.copy() for t in terms)).sql()


def column_types_of(schema_string: str | None) -> dict[str, str]:
    """Top-level column -> Delta type name, for typed comparisons of stats and partitions."""
    try:
        schema = orjson.loads(schema_string) if schema_string else {}
    except orjson.JSONDecodeError:
        return {}
    types = {}
    for f in schema.get("fields", []) if isinstance(schema, dict) else []:
        if (
            isinstance(f, dict)
            and isinstance(f.get("name"), str)
            and isinstance(f.get("type"), str)
        ):
            types[f["name"]] = f["type"]
    return types


# --------------------------------------------------------------------------- add actions


def _add_actions(
    history: History, files: dict[int, list[str]], *, read_logs: bool
) -> list[AddFile]:
    """The add actions of `files` (version -> paths): from the latest state, else the commit."""
    live = history.state.files
    found: list[AddFile] = []
    missing: dict[int, set[str]] = {}
    for version, paths in sorted(files.items()):
        for path in paths:
            add = live.get(path)
            if add is not None:
                found.append(add)
            else:
                missing.setdefault(version, set()).add(path)
    if missing and read_logs:
        found += _adds_from_commits(history, missing)
    return found


def _adds_from_commits(history: History, missing: dict[int, set[str]]) -> list[AddFile]:
    adds: list[AddFile] = []
    try:
        log = history.get_log()
        for version, paths in sorted(missing.items()):
            commit = log.read_commit(version)
            adds += [a for a in commit.adds if a.path in paths]
    except DeltaAuditError:
        pass  # what we have is what we can check; the rest stays unconfirmed
    return adds


# --------------------------------------------------------------------------- pruning


def _prune(
    adds: list[AddFile],
    predicate: Predicate | None,
    partition_columns: list[str],
    partition_types: dict[str, str],
    column_types: dict[str, str],
) -> tuple[list[AddFile], str]:
    """Drop files whose partition values or statistics prove no row matches."""
    if predicate is None:
        return adds, "partition_values"
    matcher = _partition_matcher(predicate, partition_columns, partition_types)
    kept = []
    method = "partition_values"
    for add in adds:
        if matcher is not None and not _safe_call(matcher, dict(add.partition_values)):
            continue
        if add.stats and not _stats_may_match(predicate, add, column_types):
            method = "file_stats"
            continue
        kept.append(add)
    return kept, method


def _safe_call(matcher: Any, values: dict[str, Any]) -> bool:
    try:
        return bool(matcher(values))
    except Exception:  # undecidable: keep the file
        return True


def _partition_matcher(predicate: Predicate, columns: list[str], types: dict[str, str]) -> Any:
    if not columns:
        return None
    from audit.core import predicates

    try:
        return predicates.partition_matcher(predicate, columns, types)
    except Exception:  # untrusted text: no pruning
        return None


def _stats_may_match(predicate: Predicate, add: AddFile, types: dict[str, str]) -> bool:
    from audit.core import predicates

    try:
        stats = orjson.loads(add.stats) if add.stats else None
        return bool(predicates.stats_may_match(predicate, stats, add.partition_values, types))
    except Exception:  # bad stats text: the file may match
        return True


# --------------------------------------------------------------------------- data


# The files an unreadable outcome names (find_rows makes no more lines than this).
SHOWN_PROBLEMS = 3


def find_rows(
    table_uri: str,
    adds: list[AddFile],
    predicate: Predicate | None,
    partition_types: dict[str, str],
    *,
    names: rowfilter.NameTree | None = None,
    roots: Sequence[str] | None = None,
    sample_rows: int | None = None,
    vectors: dv.Loader | None = None,
    shared: Any = None,
) -> Outcome:
    """Evaluate `predicate` on the rows of `adds`; rows found -> status "rows" with a witness
    keeping at most `sample_rows` of them (0: the count and the files only; None: the default).

    Only files that resolve inside `roots` are opened (None: the table's own root only);
    paths `shared` (the pass's DataFiles) could not open are not tried again."""
    keep = MAX_SAMPLE_ROWS if sample_rows is None else max(sample_rows, 0)
    files = _reader(table_uri, roots, shared)
    matched_files: list[str] = []
    total = 0
    samples: list[dict[str, Any]] = []
    problems: list[str] = []
    vectors = vectors or dv.Loader(files)
    for add in sorted(adds, key=lambda a: a.path)[:MAX_FILES_READ]:
        # Rows its deletion vector deletes are left out; a file whose vector cannot be read
        # is not counted (it could confirm rows that are gone).
        deleted = vectors.get(add.deletion_vector)
        if isinstance(deleted, dv.Unusable):
            _note(problems, add.path, deleted)
            continue
        try:
            count, rows = _rows_in_file(
                files,
                add,
                predicate,
                partition_types,
                names or rowfilter.NameTree(),
                max(keep - len(samples), 0),
                deleted=deleted,
            )
        except rowfilter.Unevaluable as err:
            return Outcome("unevaluable", None, str(err))
        except allowed.UriNotAllowed:
            continue  # never opened; DataFiles.refused lists it for the witness
        except (OSError, pa.ArrowException, DeltaAuditError, ValueError) as err:
            # Scrubbed whole: a data file's URL or its reader's error can carry a SAS token.
            # Only the lines the outcome can show are made (a vacuumed history fails all).
            _note(problems, add.path, err)
            continue
        if count:
            matched_files.append(allowed.shown_path(add.path))
            total += count
            samples += rows
    if total:
        witness = _witness(matched_files, total, samples[:keep], predicate, partition_types)
        return Outcome("rows", {**witness, **_not_read(files)}, "")
    return _no_rows(files, problems)


def _note(problems: list[str], path: str, why: BaseException | dv.Unusable) -> None:
    """One line of why a file was not read, made only while the outcome can still show it."""
    if len(problems) >= SHOWN_PROBLEMS:
        return
    if isinstance(why, dv.Unusable):
        reason = f"deletion vector unreadable ({why})"
    else:
        reason = one_line(why, limit=300)
    problems.append(scrub_error(f"{allowed.shown_path(path)}: {reason}"))


def _reader(table_uri: str, roots: Sequence[str] | None, shared: Any) -> DataFiles:
    if isinstance(shared, DataFiles):
        return shared.sharing(table_uri, roots)
    return DataFiles(table_uri, roots)


def _not_read(files: DataFiles) -> dict[str, Any]:
    return {"not_read": files.refused} if files.refused else {}


def _no_rows(files: DataFiles, problems: list[str]) -> Outcome:
    """No matching row: because none was readable (say which and why), or because none matches."""
    problems = [f"{r['file']}: {r['reason']}" for r in files.refused] + problems
    if problems:
        return Outcome(
            "unreadable",
            _not_read(files) or None,
            "data files are gone or unreadable (vacuumed?), outside the allowed roots, or "
            "carry deletion vectors: " + "; ".join(problems[:SHOWN_PROBLEMS]),
        )
    return Outcome("no_rows", None, "no row of the surviving files matches the predicate")


def _witness(
    files: list[str],
    total: int,
    samples: list[dict[str, Any]],
    predicate: Predicate | None,
    partition_types: dict[str, str],
) -> dict[str, Any]:
    """What a confirmed finding shows: where the rows are, how many, a few of them."""
    partition_only = predicate is not None and not _has_data_columns(predicate, partition_types)
    return {
        "files": files,
        "row_count": total,
        "sample_rows": samples,
        "predicate": predicate.raw if predicate is not None else None,
        "method": "partition_values" if partition_only else "data",
    }


def _has_data_columns(predicate: Predicate, partition_types: dict[str, str]) -> bool:
    names = {c.lower() for c in partition_types}
    return bool(predicate.columns - names)


def _rows_in_file(
    files: DataFiles,
    add: AddFile,
    predicate: Predicate | None,
    partition_types: dict[str, str],
    names: rowfilter.NameTree,
    want: int,
    *,
    deleted: BitMap64 | None = None,
) -> tuple[int, list[dict[str, Any]]]:
    """Rows of one file matching `predicate` (every row when None), less the positions its
    deletion vector deletes (`deleted`)."""
    parquet = pq.ParquetFile(files.open(add.path))
    partition_values = _partition_values(parquet, add)
    types = _physical_partition_types(partition_types, names)
    if predicate is None:
        if deleted:
            hits = dv.live_positions(deleted, parquet.metadata.num_rows)
            rows = _sample(parquet, hits, partition_values, types, want) if want else []
            return len(hits), rows
        count = parquet.metadata.num_rows
        rows = _sample(parquet, None, partition_values, types, want) if count and want else []
        return count, rows
    hits = _matching(parquet, add, predicate, types, names, deleted)
    count = len(hits)
    rows = _sample(parquet, hits, partition_values, types, want) if count and want else []
    return count, rows


def matching_positions(
    files: DataFiles,
    add: AddFile,
    predicate: Predicate | None,
    partition_types: dict[str, str],
    names: rowfilter.NameTree,
    *,
    deleted: BitMap64 | None = None,
) -> tuple[pa.Array, int]:
    """The positions (int64) of one file's rows matching `predicate` (every row when None),
    less those its deletion vector deletes; and the file's row count. Raises as `find_rows`'s
    reads do (UriNotAllowed for a file outside the roots)."""
    parquet = pq.ParquetFile(files.open(add.path))
    total = parquet.metadata.num_rows
    if predicate is None:
        return dv.live_positions(deleted, total) if deleted else _all_positions(total), total
    types = _physical_partition_types(partition_types, names)
    return _matching(parquet, add, predicate, types, names, deleted), total


def _all_positions(rows: int) -> pa.Array:
    import numpy as np  # noqa: PLC0415

    return pa.array(np.arange(rows, dtype=np.int64))


def _partition_values(parquet: pq.ParquetFile, add: AddFile) -> dict[str, str | None]:
    """The partition values a file's rows take (those its own columns do not hold)."""
    file_columns = {name.lower() for name in parquet.schema_arrow.names}
    return {k: v for k, v in add.partition_values.items() if k.lower() not in file_columns}


def _matching(
    parquet: pq.ParquetFile,
    add: AddFile,
    predicate: Predicate,
    types: dict[str, str],
    names: rowfilter.NameTree,
    deleted: BitMap64 | None,
) -> pa.Array:
    file_columns = {name.lower(): name for name in parquet.schema_arrow.names}
    partition_values = _partition_values(parquet, add)
    expression = rowfilter.expression_for(predicate)
    partition_names = list(partition_values)
    needed = rowfilter.columns_needed(expression, names, [*file_columns.values(), *partition_names])
    in_file = [c for c in needed if c.lower() in file_columns]
    table = (
        parquet.read(columns=in_file)
        if in_file
        else pa.table({rowfilter.ROW_ID + "n": pa.nulls(parquet.metadata.num_rows)})
    )
    table = rowfilter.normalise(_with_partitions(table, partition_values, types))
    sql = rowfilter.render(expression, names, table.schema)
    hits = rowfilter.matching_rows(table, sql)
    return dv.without_deleted(hits, deleted) if deleted else hits


def _physical_partition_types(types: dict[str, str], names: rowfilter.NameTree) -> dict[str, str]:
    """Partition types keyed as add.partitionValues is: by physical name under column mapping."""
    keyed = dict(types)
    for logical, kind in types.items():
        keyed.setdefault(names.physical_name(logical), kind)
    return keyed


def _with_partitions(
    table: pa.Table, values: dict[str, str | None], types: dict[str, str]
) -> pa.Table:
    for name, value in values.items():
        arrow_type = arrow_type_of(types.get(name, "string"))
        table = table.append_column(
            name, rowfilter.typed_partition_column(value, arrow_type, table.num_rows)
        )
    return table


def _sample(
    parquet: pq.ParquetFile,
    hits: pa.Array | None,
    partition_values: dict[str, str | None],
    partition_types: dict[str, str],
    want: int,
) -> list[dict[str, Any]]:
    table = parquet.read()
    table = rowfilter.normalise(_with_partitions(table, partition_values, partition_types))
    table = table.take(hits[:want]) if hits is not None else table.slice(0, want)
    return [{k: cell_value(v) for k, v in row.items()} for row in table.to_pylist()]


_DECIMAL = re.compile(r"decimal\(([0-9]{1,2}),\s*([0-9]{1,2})\)", re.ASCII)
_SIMPLE_TYPES = {
    "string": pa.string(),
    "long": pa.int64(),
    "integer": pa.int32(),
    "short": pa.int16(),
    "byte": pa.int8(),
    "double": pa.float64(),
    "float": pa.float32(),
    "boolean": pa.bool_(),
    "date": pa.date32(),
    "timestamp": pa.timestamp("us", tz="UTC"),
    "timestamp_ntz": pa.timestamp("us"),
    "binary": pa.binary(),
}


def arrow_type_of(delta_type: str) -> pa.DataType:
    simple = _SIMPLE_TYPES.get(delta_type)
    if simple is not None:
        return simple
    match = _DECIMAL.fullmatch(delta_type.replace(" ", ""))
    if match:
        try:
            return pa.decimal128(int(match.group(1)), int(match.group(2)))
        except ValueError:  # a schema is log text: decimal(99,2) is no Arrow type
            return pa.string()
    return pa.string()
