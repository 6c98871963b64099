"""Real test tables with one hostile edit in one commit file, for the property tests.

A copy of a table of tests/data/delta-tables gets one change: a single value of one JSON line
replaced (types swapped, Unicode digits, huge and negative numbers, NaN, null, deep nesting) or
a single line replaced (truncated, an action of the wrong type, not an object at all). The
stdlib `json` writes the edits: orjson refuses ints past 64 bits and NaN, which is the point.
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

from tests.support.logutil import all_table_dirs

# Tables small enough to copy for every example (all of them but one 2 MB data file).
MAX_TABLE_BYTES = 400_000

HOSTILE_VALUES: tuple[Any, ...] = (
    "²",  # str.isdigit() says yes, int() says no
    "①",
    "١٢",  # Arabic-Indic digits: int() takes them
    "12",
    "-7",
    " 42 ",
    "9" * 5000,  # past int()'s digit limit
    str(10**27),
    10**27,  # past 64 bits (orjson reads it as a float)
    2**64 - 1,  # fits orjson's unsigned ints, not int64 or PostgreSQL
    2**63,
    -(2**63) - 1,
    -1,
    0,
    1.5,
    5.0,
    1e308,
    float("nan"),
    float("inf"),
    None,
    True,
    False,
    "",
    "\x00",
    "\ud800",
    "<b>x</b>",
    [],
    {},
    [1, "a", None],
    {"a": {"b": [1]}},
)

# What a number's place gets: text a careless parser takes for digits, numbers past 64 bits,
# numbers of the wrong sign or kind, and values that are not numbers at all.
NUMBER_VALUES: tuple[Any, ...] = (
    "²",
    "①",
    "١٢",
    "9" * 5000,
    str(10**27),
    10**27,
    2**64 - 1,
    2**63 - 1,  # fits, but not once added to anything
    str(2**62),
    -1,
    -7,
    1.5,
    1e308,
    10**17,  # a long; as milliseconds, the year 3170843
    True,
    None,
    [],
    {},
)

# Keys whose values are read as numbers (or as numbers in text): an edit aims at them often,
# since a random leaf of a commit line is rarely one of them.
NUMBER_KEYS: tuple[str, ...] = (
    "readVersion",
    "timestamp",
    "inCommitTimestamp",
    "numAddedFiles",
    "numRemovedFiles",
    "numOutputRows",
    "numTargetRowsDeleted",
    "num_retries",
    "numRetries",
    "delta.checkpointInterval",
    "delta.deletedFileRetentionDuration",
    "delta.logRetentionDuration",
    "delta.targetFileSize",
    "size",
    "modificationTime",
    "deletionTimestamp",
    "version",
    "minReaderVersion",
    "minWriterVersion",
    "cardinality",
    "lastUpdated",
)

HOSTILE_LINES: tuple[str, ...] = (
    '{"add": "x"}',
    '{"add": null}',
    '{"add": []}',
    '{"add": {"path": 5, "size": "²", "dataChange": "yes"}}',
    '{"remove": {"path": null, "deletionTimestamp": 1e999}}',
    '{"commitInfo": 5}',
    '{"commitInfo": {"timestamp": "①", "operationMetrics": [1, 2]}}',
    '{"metaData": {"configuration": "x", "partitionColumns": "day", "schemaString": 7}}',
    '{"metaData": {"schemaString": "{\\"type\\": \\"struct\\", \\"fields\\": 5}"}}',
    '{"protocol": {"minReaderVersion": "²", "minWriterVersion": 10000000000000000000000}}',
    '{"txn": {"appId": 1, "version": "x"}}',
    '{"domainMetadata": []}',
    "[]",
    '"text"',
    "12",
    "null",
    "",
    "{",
    # A file of the largest size (with any other, a sum past 64 bits) and numRecords 1e400.
    '{"add": {"path": "hostile.parquet", "partitionValues": {}, "size": 9223372036854775807, '
    '"modificationTime": 1, "dataChange": true, "stats": "{\\"numRecords\\": 1e400}"}}',
    # A time in the year 3170843, and a read version below any.
    '{"commitInfo": {"timestamp": 100000000000000000, "inCommitTimestamp": 100000000000000000, '
    '"operation": "DELETE", "readVersion": -7}}',
)


# Deletion vector descriptors (add.deletionVector, remove.deletionVector): a field of one set
# to a hostile value, or the whole descriptor replaced. Bad Z85 (a character outside the
# alphabet, a length not a multiple of 5, a group past 32 bits), offsets and sizes past any
# file or negative, `p` paths outside the table (absolute, a URL, climbing out).
DV_KEYS: tuple[str, ...] = (
    "storageType",
    "pathOrInlineDv",
    "offset",
    "sizeInBytes",
    "cardinality",
    "maxRowIndex",
)
DV_VALUES: tuple[Any, ...] = (
    *NUMBER_VALUES,
    2**62,
    -5,
    0,
    "p",
    "i",
    "u",
    "q",
    "~~~~~",  # no Z85 character
    "abcd",  # not a multiple of 5 long
    "%%%%%",  # a group past 32 bits
    "ab" + "0" * 20,  # a prefix and a well-formed 20-character UUID
    "/etc/passwd",
    "file:///etc/hosts",
    "../../../../etc/passwd",
    "s3://elsewhere/deletion_vector.bin",
)
_DV = {"offset": 1, "sizeInBytes": 36, "cardinality": 2}
DV_WRONG_TYPES = {"storageType": 5, "pathOrInlineDv": ["x"], "offset": "1", "sizeInBytes": "²"}
DV_DESCRIPTORS: tuple[Any, ...] = (
    {"storageType": "p", "pathOrInlineDv": "/etc/passwd", **_DV},
    {"storageType": "p", "pathOrInlineDv": "file:///etc/hosts", **_DV},
    {"storageType": "p", "pathOrInlineDv": "../../../../etc/passwd", **_DV},
    {"storageType": "p", "pathOrInlineDv": "_delta_log/00000000000000000000.json", **_DV},
    {"storageType": "i", "pathOrInlineDv": "0000000000", "sizeInBytes": 2**62, "cardinality": 1},
    {"storageType": "i", "pathOrInlineDv": "%%%%%", "sizeInBytes": 4, "cardinality": 2**63},
    {"storageType": "i", "pathOrInlineDv": "", "sizeInBytes": -1, "cardinality": -1},
    {"storageType": "u", "pathOrInlineDv": "0" * 20, "offset": 2**62, "sizeInBytes": 10**27,
     "cardinality": 1},
    {"storageType": "u", "pathOrInlineDv": "0" * 20, "offset": -1, "sizeInBytes": 36,
     "cardinality": 1},
    {"storageType": "u", "pathOrInlineDv": "ab" + "0" * 20, "offset": 1, "sizeInBytes": -5,
     "cardinality": 1e308},
    DV_WRONG_TYPES,
    {},
    "u",
    5,
    [],
    None,
)  # fmt: skip

_MARK = "@@hostile-value@@"


@dataclass(frozen=True)
class Edit:
    """One hostile edit: commit file `commit` (index among the table's commit files), line
    `line` (index, wrapped), and either a value at position `leaf` (wrapped) or a whole line."""

    commit: int
    line: int
    leaf: int
    value: Any = None
    new_line: str | None = None
    cut: int | None = None  # truncate the line to this many characters instead
    depth: int = 0  # wrap the value in this many lists (deep nesting)
    key: str | None = None  # set this key wherever the line has it (else in commitInfo)
    # A deletion vector edit: `key` of the descriptor of an add or remove that has one set to
    # `value`, or (no key) the whole descriptor replaced by `value`.
    dv: bool = False


def small_tables() -> list[Path]:
    tables = []
    for _, path in all_table_dirs():
        size = sum(os.path.getsize(Path(d, f)) for d, _, fs in os.walk(path) for f in fs)
        if size <= MAX_TABLE_BYTES and commit_files(path):
            tables.append(path)
    return tables


def dv_tables() -> list[Path]:
    """The small tables whose log has deletion vector descriptors."""
    return [t for t in small_tables() if any(_DV_KEY in f.read_text() for f in commit_files(t))]


_DV_KEY = '"deletionVector":{'


def commit_files(table: Path) -> list[Path]:
    log = table / "_delta_log"
    return sorted(p for p in log.glob("*.json") if len(p.name) == 25 and p.name[:20].isdigit())


def edits() -> st.SearchStrategy[Edit]:
    index = st.integers(min_value=0, max_value=10_000)
    value_edit = st.builds(
        Edit,
        commit=index,
        line=index,
        leaf=index,
        value=st.sampled_from(HOSTILE_VALUES),
        depth=st.sampled_from((0, 0, 0, 3, 2000)),
    )
    line_edit = st.builds(
        Edit, commit=index, line=index, leaf=index, new_line=st.sampled_from(HOSTILE_LINES)
    )
    key_edit = st.builds(
        Edit,
        commit=index,
        line=index,
        leaf=index,
        value=st.sampled_from(NUMBER_VALUES),
        key=st.sampled_from(NUMBER_KEYS),
    )
    cut_edit = st.builds(Edit, commit=index, line=index, leaf=index, cut=index)
    return st.one_of(key_edit, key_edit, value_edit, line_edit, cut_edit)


def dv_edits() -> st.SearchStrategy[Edit]:
    """Edits of deletion vector descriptors (for the tables of `dv_tables`)."""
    index = st.integers(min_value=0, max_value=10_000)
    field_edit = st.builds(
        Edit,
        commit=index,
        line=index,
        leaf=index,
        value=st.sampled_from(DV_VALUES),
        key=st.sampled_from(DV_KEYS),
        dv=st.just(True),
    )
    whole = st.builds(
        Edit, commit=index, line=index, leaf=index, value=st.sampled_from(DV_DESCRIPTORS),
        dv=st.just(True),
    )  # fmt: skip
    return st.one_of(field_edit, whole)


def hostile_copy(source: Path, target: Path, edit: Edit) -> Path:
    """A copy of `source` at `target` with `edit` applied to one of its commit files."""
    shutil.copytree(source, target)
    files = commit_files(target)
    _times_as_recorded(files)
    if edit.dv:
        files = [f for f in files if _DV_KEY in f.read_text()] or files
    path = files[edit.commit % len(files)]
    lines = path.read_text(encoding="utf-8").splitlines() or [""]
    kept = path.stat().st_mtime_ns
    if edit.dv:
        _edit_descriptor(lines, edit)
        _write(path, lines, kept)
        return target
    aimed = [n for n, line in enumerate(lines) if _holds(line, edit.key)] if edit.key else []
    i = aimed[edit.line % len(aimed)] if aimed else edit.line % len(lines)
    if edit.new_line is not None:
        lines[i] = edit.new_line
    elif edit.cut is not None:
        lines[i] = lines[i][: edit.cut % max(len(lines[i]), 1)]
    else:
        lines[i] = _replace_leaf(lines[i], edit)
    _write(path, lines, kept)
    return target


def _write(path: Path, lines: list[str], mtime_ns: int) -> None:
    path.write_bytes("\n".join(lines).encode("utf-8", "surrogatepass") + b"\n")
    os.utime(path, ns=(mtime_ns, mtime_ns))  # the edit is the writer's, not a later touch


def _times_as_recorded(files: list[Path]) -> None:
    """Each commit file's modification time set to the time its commitInfo records, as on the
    writer's own storage (a checkout gives every file the same time: a copied table, whose file
    times the audit does not judge)."""
    for file in files:
        for line in file.read_text(encoding="utf-8", errors="replace").splitlines():
            if '"commitInfo"' not in line:
                continue
            try:
                ms = json.loads(line)["commitInfo"]["timestamp"]
            except (ValueError, KeyError, TypeError):
                break
            if type(ms) is int and 0 < ms < 2**42:
                os.utime(file, ns=(ms * 10**6, ms * 10**6))
            break


def _edit_descriptor(lines: list[str], edit: Edit) -> None:
    """Apply a deletion vector edit to one of the lines with a descriptor (else to nothing)."""
    aimed = [n for n, line in enumerate(lines) if _DV_KEY in line]
    if not aimed:
        return
    i = aimed[edit.line % len(aimed)]
    obj = json.loads(lines[i])
    action = next(obj[k] for k in ("add", "remove") if isinstance(obj.get(k), dict))
    if edit.key is None:
        action["deletionVector"] = edit.value
    else:
        action["deletionVector"][edit.key] = edit.value
    lines[i] = json.dumps(obj, ensure_ascii=False)


def _replace_leaf(line: str, edit: Edit) -> str:
    try:
        obj = json.loads(line)
    except ValueError:
        return line
    # The nesting is spliced in as text: json.dumps itself would stop at its recursion limit.
    value = "[" * edit.depth + json.dumps(edit.value, ensure_ascii=False) + "]" * edit.depth
    slots = list(_slots(obj))
    if edit.key is not None:
        slots = _key_slots(obj, slots, edit.key)
    if not slots:
        return value
    parent, key = slots[edit.leaf % len(slots)]
    parent[key] = _MARK
    return json.dumps(obj, ensure_ascii=False).replace(json.dumps(_MARK), value, 1)


def _holds(line: str, key: str) -> bool:
    """Whether `key` is on the line, or the line has the object that would hold it."""
    home = '"metaData"' if key.startswith("delta.") else '"commitInfo"'
    return f'"{key}"' in line or home in line


def _key_slots(obj: Any, slots: list[tuple[Any, Any]], key: str) -> list[tuple[Any, Any]]:
    found = [(parent, k) for parent, k in slots if k == key and isinstance(parent, dict)]
    if found or not isinstance(obj, dict):
        return found or slots
    # Not on this line: its table properties or its commitInfo get it (metrics for counts).
    meta, info = obj.get("metaData"), obj.get("commitInfo")
    if key.startswith("delta.") and isinstance(meta, dict):
        config = meta.get("configuration")
        if not isinstance(config, dict):
            config = meta["configuration"] = {}
        return [(config, key)]
    if not isinstance(info, dict):
        return slots
    metrics = info.get("operationMetrics")
    if isinstance(metrics, dict) and key.startswith("num"):
        return [(metrics, key)]
    return [(info, key)]


def _slots(node: Any):
    """(container, key) of every value under `node`, depth first."""
    items = (
        node.items()
        if isinstance(node, dict)
        else enumerate(node)
        if isinstance(node, list)
        else ()
    )
    for key, child in items:
        yield node, key
        yield from _slots(child)
