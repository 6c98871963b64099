"""Duplicate keys: rows with the same declared key live at the audited version.

Delta has no unique constraints. Two writers that each check "key 42 is absent" and append it
both commit (blind appends never conflict), and two concurrent MERGEs can both insert it: the
table then holds the key twice. Declared key columns (`audit --key`, the table's settings) make
the audit look for that:

1. candidates from file statistics: live files whose min/max ranges of every key column
   overlap another live file's (one file without those statistics makes every file one);
2. confirmation on the data: the key columns of the candidate files, read through the
   witness's opener with their deletion vectors applied, grouped by key;
3. attribution: each duplicated key's rows name the files and the commits that added them;
   a pair of commits is `concurrent` when the later one's read version is before the earlier
   (neither saw the other: the rw/ww cycle is the witness), `sequential` when it saw it (a
   writer's own bug, as are duplicates within one commit), `unknown` without a read version.

Bounded cost: at most MAX_KEY_FILES candidate files are read (key columns only); more
candidates leave the finding marked `truncated`. Duplicates inside one file whose range
overlaps no other file are not looked for (statistics cannot show them).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import orjson

from audit.core.data import dv
from audit.core.errors import DeltaAuditError, one_line
from audit.core.jsonsafe import cell_value
from audit.core.model import AddFile, CommitSummary
from audit.core.scrub import scrub_error
from audit.core.storage.roots import shown_path

if TYPE_CHECKING:
    import pyarrow as pa

    from audit.core.history.summary import History

MAX_KEY_FILES = 200
MAX_SAMPLE_KEYS = 5
MAX_FINDINGS = 50


@dataclass(slots=True)
class KeyGroup:
    """The duplicated keys whose latest row arrived with one commit (`version`)."""

    version: int
    earlier: set[int] = field(default_factory=set)
    keys: int = 0
    extra_rows: int = 0
    samples: list[dict[str, Any]] = field(default_factory=list)
    files: set[str] = field(default_factory=set)
    concurrency: dict[int, str] = field(default_factory=dict)  # earlier version -> how


@dataclass(slots=True)
class KeyScan:
    key_columns: list[str]
    candidates: int
    files_read: int
    truncated: bool
    groups: list[KeyGroup]
    problems: list[str]


def parse_key_columns(text: str | None) -> list[str]:
    """`id,k2` -> ["id", "k2"]; DeltaAuditError for an empty name."""
    if not text:
        return []
    names = [part.strip() for part in text.split(",")]
    if any(not n for n in names):
        raise DeltaAuditError(f"key columns {text!r}: an empty column name")
    return names


def valid_key_columns(value: object) -> list[str]:
    """A stored or posted key: a list of non-empty column names; DeltaAuditError otherwise."""
    if value is None:
        return []
    if isinstance(value, str):
        return parse_key_columns(value)
    names = list(value) if isinstance(value, list | tuple) else None
    if names is None or not all(isinstance(v, str) and v.strip() for v in names):
        raise DeltaAuditError("key columns must be a list of column names")
    return [v.strip() for v in names]


# --------------------------------------------------------------------------- candidates


def _ranges(add: AddFile, keys: list[str], partitions: set[str]) -> list[tuple[Any, Any]] | None:
    """(min, max) per key column from partition values and statistics; None if unknown."""
    try:
        stats = orjson.loads(add.stats) if add.stats else {}
    except orjson.JSONDecodeError:
        return None
    lows, highs = stats.get("minValues") or {}, stats.get("maxValues") or {}
    out = []
    for key in keys:
        if key in partitions:
            value = add.partition_values.get(key)
            out.append((value, value))
        elif key in lows and key in highs and lows[key] is not None and highs[key] is not None:
            out.append((lows[key], highs[key]))
        else:
            return None
    return out


def _overlap(a: list[tuple[Any, Any]], b: list[tuple[Any, Any]]) -> bool:
    try:
        return all(lo1 <= hi2 and lo2 <= hi1 for (lo1, hi1), (lo2, hi2) in zip(a, b, strict=True))
    except TypeError:
        return True  # incomparable statistics: undecidable, keep both


def candidate_files(adds: list[AddFile], keys: list[str], partitions: set[str]) -> list[AddFile]:
    """Live files whose key ranges overlap another's (a sweep over the first key's minimum)."""
    ranged: list[tuple[list[tuple[Any, Any]], AddFile]] = []
    for add in adds:
        ranges = _ranges(add, keys, partitions)
        if ranges is None:
            # A file without the key's statistics may hold any key: every file is a candidate.
            return sorted(adds, key=lambda a: a.path)
        ranged.append((ranges, add))
    try:
        ranged.sort(key=lambda item: item[0][0][0])
    except TypeError:
        return sorted(adds, key=lambda a: a.path)
    chosen: dict[str, AddFile] = {}
    active: list[tuple[list[tuple[Any, Any]], AddFile]] = []
    for ranges, add in ranged:
        low = ranges[0][0]
        active = [item for item in active if not _before(item[0][0][1], low)]
        for other_ranges, other in active:
            if _overlap(ranges, other_ranges):
                chosen[add.path], chosen[other.path] = add, other
        if len(chosen) > MAX_KEY_FILES:
            break
        active.append((ranges, add))
    return sorted(chosen.values(), key=lambda a: a.path)


def _before(high: Any, low: Any) -> bool:
    try:
        return bool(high < low)
    except TypeError:
        return False


# --------------------------------------------------------------------------- data


def _key_table(
    files: Any, add: AddFile, keys: list[str], physical: dict[str, str], loader: Any
) -> pa.Table:
    """The live rows' key columns and positions of one file (partition values as text)."""
    import numpy as np  # noqa: PLC0415
    import pyarrow as pa  # noqa: PLC0415
    import pyarrow.parquet as pq  # noqa: PLC0415

    source = files.open(add.path)  # witness.DataFiles: confined to the allowed roots
    try:
        parquet = pq.ParquetFile(source)
        in_file = [physical[k] for k in keys if physical[k] in parquet.schema_arrow.names]
        data = parquet.read(columns=in_file)
    finally:
        source.close()
    rows = data.num_rows
    columns = {}
    for i, key in enumerate(keys):
        name = physical[key]
        if name in data.column_names:
            columns[f"k{i}"] = data.column(name)
        else:  # a partition column (or one the file lacks: NULL, as readers see it)
            value = add.partition_values.get(name, add.partition_values.get(key))
            columns[f"k{i}"] = pa.array([value] * rows, pa.string())
    columns["pos"] = pa.array(np.arange(rows, dtype=np.int64))
    table = pa.table(columns)
    deleted = loader.get(add.deletion_vector)
    if isinstance(deleted, dv.Unusable):
        raise DeltaAuditError(f"deletion vector unreadable: {deleted}")
    # A mask built from the bitmap (numpy), never a list of its positions: a hostile vector
    # of a few KiB can hold 2^32 of them.
    keep = dv.live_mask(deleted, rows)
    return table if keep is None else table.filter(keep)


def scan_keys(
    history: History,
    keys: list[str],
    *,
    added_by: dict[str, int],
    roots: Sequence[str] | None = None,
    vectors: dv.Loader | None = None,
) -> KeyScan:
    """Read the candidates' keys and group duplicated ones by the commit that added the last
    row. `added_by` maps each live path to the version that added it; files are read only
    inside `roots` (None: the table's own root), as the witness reads them; deletion vectors
    through `vectors`, the pass's loader (None: one of this scan's own)."""
    import pyarrow as pa  # noqa: PLC0415

    from audit.core.data import rowfilter  # noqa: PLC0415
    from audit.core.data.witness import DataFiles  # noqa: PLC0415

    state = history.state
    partitions = set(state.partition_columns)
    names = rowfilter.name_tree(state.metadata.schema_string if state.metadata else None)
    physical = {k: names.physical_name(k) for k in keys}
    candidates = candidate_files(list(state.files.values()), keys, partitions)
    truncated = len(candidates) > MAX_KEY_FILES
    read = candidates[:MAX_KEY_FILES]
    scan = KeyScan(keys, len(candidates), 0, truncated, [], [])
    if len(read) < 2 and not any(_many_rows(a) for a in read):
        return scan
    files = DataFiles(history.table_uri, roots)
    loader = vectors or dv.Loader(files)
    tables = []
    for index, add in enumerate(read):
        try:
            part = _key_table(files, add, keys, physical, loader)
        except (OSError, ValueError, pa.ArrowException, DeltaAuditError) as err:
            # Scrubbed whole: a data file's URL or its reader's error can carry a token.
            scan.problems.append(scrub_error(f"{add.path}: {one_line(err, limit=200)}"))
            continue
        tables.append(part.append_column("file", pa.array([index] * part.num_rows, pa.int32())))
        scan.files_read += 1
    if tables:
        scan.groups = _group(_combine(tables), keys, read, added_by)
    return scan


def _many_rows(add: AddFile) -> bool:
    try:
        return int(orjson.loads(add.stats or "{}").get("numRecords", 2)) > 1
    except (orjson.JSONDecodeError, TypeError, ValueError, AttributeError):
        return True


def _combine(tables: list[pa.Table]) -> pa.Table:
    """One table of every file's keys: native types where the files agree (int32 and int64
    widen), else all as text."""
    import pyarrow as pa  # noqa: PLC0415
    import pyarrow.compute as pc  # noqa: PLC0415

    try:
        return pa.concat_tables(tables, promote_options="permissive")
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
        as_text = [
            pa.table(
                {
                    n: pc.cast(t.column(n), pa.string()) if n.startswith("k") else t.column(n)
                    for n in t.column_names
                }
            )
            for t in tables
        ]
        return pa.concat_tables(as_text)


def _group(
    table: pa.Table, keys: list[str], files: list[AddFile], added_by: dict[str, int]
) -> list[KeyGroup]:
    import pyarrow.compute as pc  # noqa: PLC0415

    key_names = [f"k{i}" for i in range(len(keys))]
    # Count first (cheap, native types), then list the files of the duplicated keys only.
    counts = table.group_by(key_names).aggregate([("file", "count")])
    dups = counts.filter(pc.greater(counts.column("file_count"), 1))
    if not dups.num_rows:
        return []
    # The join never matches NULL with NULL: a NULL key is no key (as SQL's UNIQUE), so rows
    # with one are never duplicates.
    rows = table.join(dups.select(key_names), keys=key_names, join_type="inner")
    grouped = rows.group_by(key_names).aggregate([("file", "list"), ("file", "count")])
    groups: dict[int, KeyGroup] = {}
    for row in sorted(grouped.to_pylist(), key=lambda r: [str(r[n]) for n in key_names]):
        versions = [added_by.get(files[i].path, -1) for i in row["file_list"]]
        latest = max(versions)
        group = groups.setdefault(latest, KeyGroup(latest))
        group.keys += 1
        group.extra_rows += row["file_count"] - 1
        group.earlier.update(v for v in versions if v != latest and v >= 0)
        paths = sorted({shown_path(files[i].path) for i in row["file_list"]})
        group.files.update(paths)
        if len(group.samples) < MAX_SAMPLE_KEYS:
            group.samples.append(
                {
                    "key": {k: cell_value(row[n]) for k, n in zip(keys, key_names, strict=True)},
                    "rows": row["file_count"],
                    "files": paths,
                    "versions": sorted(set(versions)),
                }
            )
    return [groups[v] for v in sorted(groups)][:MAX_FINDINGS]


def added_versions(history: History, paths: set[str]) -> dict[str, int]:
    """The version whose add made each live path live (the latest add of it in the history)."""
    found: dict[str, int] = {}
    wanted = set(paths)
    for summary in reversed(history.summaries):
        hits = wanted & (summary.added_paths | summary.compacted_paths)
        for path in hits:
            found[path] = summary.version
        wanted -= hits
        if not wanted:
            break
    return found


def concurrency(earlier: int, later: CommitSummary | None, read_version: int | None) -> str:
    if later is None:
        return "unknown"
    if earlier == later.version:
        return "same_commit"
    if read_version is None:
        return "unknown"
    return "concurrent" if earlier > read_version else "sequential"
