"""Flat, Arrow-friendly rows for the audit's dataclasses, and back again, losslessly.

The Spark job moves commit summaries, table configuration and findings between processes as
Arrow record batches; the Celery path may reuse the same rows. A row is a dict of plain
scalars (str / int / bool / None) whose nested parts are JSON text (orjson). Round trips are
exact: `summary_from_row(summary_to_row(s)) == s`.

Integers the core derives from untrusted text (a `readVersion` of "99999999999999999999999",
a sum of sizes) may not fit in 64 bits; they travel inside the JSON as {"$int": "<digits>"}
so neither Arrow nor orjson ever sees an out-of-range integer.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any

import orjson
import pyarrow as pa

from audit.core.jsonsafe import json_safe
from audit.core.model import (
    EMPTY_SET,
    CommitSummary,
    Finding,
    Metadata,
    PartitionKey,
    Predicate,
    Protocol,
)

_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1

# Column types of the Arrow schemas the Spark job and its output declare (see arrow_schema).
ARROW_TYPES: dict[str, pa.DataType] = {
    "str": pa.string(),
    "int": pa.int64(),
    "bool": pa.bool_(),
    "ints": pa.list_(pa.int64()),
}


def arrow_schema(spec: str) -> pa.Schema:
    """A schema written as "name:type name:type ..." with the types of ARROW_TYPES.

    One line per schema instead of one per column: the rows the job moves are wide and their
    columns are all of these few types.
    """
    fields = (column.split(":") for column in spec.split())
    return pa.schema([pa.field(name, ARROW_TYPES[kind]) for name, kind in fields])


# Scalar fields that are always short, in-range values: they get their own columns so the
# intermediate data stays queryable in Spark (e.g. commits per operation). Everything else
# goes into the `nested` JSON column.
_SCALARS = arrow_schema(
    "version:int operation:str isolation_level:str blind_append:bool engine:str "
    "engine_info:str txn_id:str user_id:str user_name:str cluster_id:str files_added:int "
    "files_removed:int data_change:bool metadata_changed:bool protocol_changed:bool "
    "has_deletion_vectors:bool"
)
_SCALAR_NAMES = tuple(_SCALARS.names)
SUMMARY_SCHEMA = pa.schema([*_SCALARS, pa.field("nested", pa.string())])
SUMMARY_COLUMNS = tuple(SUMMARY_SCHEMA.names)

FINDING_SCHEMA = arrow_schema("kind:str severity:str version:int confirmed:bool nested:str")


# --------------------------------------------------------------------------- small codecs


def _int_out(value: int | None) -> Any:
    if value is None or _INT64_MIN <= value <= _INT64_MAX:
        return value
    return {"$int": str(value)}


def _int_in(value: Any) -> int | None:
    if type(value) is dict:
        return int(value["$int"])
    return value


def _keys_out(keys: frozenset[PartitionKey]) -> list[list[list[str | None]]]:
    # Sorted so equal sets give equal text (handy for comparing rows); None sorts first.
    return sorted(([[c, v] for c, v in key] for key in keys), key=_key_order)


def _key_order(key: list[list[str | None]]) -> list[tuple[str, bool, str]]:
    return [(c or "", v is not None, v or "") for c, v in key]


def _keys_in(value: list[list[list[str | None]]]) -> frozenset[PartitionKey]:
    return frozenset(tuple((c, v) for c, v in key) for key in value)


def _predicate_out(p: Predicate | None) -> dict[str, Any] | None:
    if p is None:
        return None
    return {"raw": p.raw, "sql": p.sql, "columns": sorted(p.columns), "error": p.error}


def _predicate_in(value: dict[str, Any] | None) -> Predicate | None:
    if value is None:
        return None
    return Predicate(value["raw"], value["sql"], frozenset(value["columns"]), value["error"])


def _dumps(value: Any) -> str:
    return orjson.dumps(value).decode()


# --------------------------------------------------------------------------- summaries


def summary_to_row(s: CommitSummary, *, paths: bool = True) -> dict[str, Any]:
    """A CommitSummary as one flat row (see SUMMARY_SCHEMA).

    `paths=False` leaves out the file paths (added / removed), the bulk of a big commit's
    summary: storing a commit does not need them, only the audit does.
    """
    row: dict[str, Any] = {name: getattr(s, name) for name in _SCALAR_NAMES}
    row["nested"] = _dumps(
        {
            "timestamp": _int_out(s.timestamp),
            "read_version": _int_out(s.read_version),
            "bytes_added": _int_out(s.bytes_added),
            "bytes_removed": _int_out(s.bytes_removed),
            "operation_parameters": s.operation_parameters,
            "operation_metrics": s.operation_metrics,
            "facts": s.facts,
            "job": s.job,
            "added_partitions": _keys_out(s.added_partitions),
            "removed_partitions": _keys_out(s.removed_partitions),
            "removed_paths": sorted(s.removed_paths) if paths else [],
            "removed_paths_all": sorted(s.removed_paths_all) if paths else [],
            "added_paths": sorted(s.added_paths) if paths else [],
            "predicate": _predicate_out(s.predicate),
            "app_ids": s.app_ids,
            "domains": sorted(s.domains),
            "unknown_actions": list(s.unknown_actions),
            "compacted_paths": sorted(s.compacted_paths) if paths else [],
            "compacted_removed_partitions": _keys_out(s.compacted_removed_partitions),
            "provenance": s.provenance,
        }
    )
    return row


def summary_from_row(d: dict[str, Any]) -> CommitSummary:
    """The CommitSummary `summary_to_row` was given."""
    n = orjson.loads(d["nested"])
    return CommitSummary(
        **{name: d[name] for name in _SCALAR_NAMES},
        timestamp=_int_in(n["timestamp"]),
        operation_parameters=n["operation_parameters"],
        operation_metrics=n["operation_metrics"],
        read_version=_int_in(n["read_version"]),
        facts=n["facts"],
        job=n["job"],
        bytes_added=_int_in(n["bytes_added"]),
        bytes_removed=_int_in(n["bytes_removed"]),
        added_partitions=_keys_in(n["added_partitions"]),
        removed_partitions=_keys_in(n["removed_partitions"]),
        removed_paths=frozenset(n["removed_paths"]),
        removed_paths_all=frozenset(n["removed_paths_all"]),
        added_paths=frozenset(n["added_paths"]),
        predicate=_predicate_in(n["predicate"]),
        app_ids=n["app_ids"],
        domains=frozenset(n["domains"]),
        unknown_actions=tuple(n["unknown_actions"]),
        # Absent from rows stored before these fields existed; empty ones share one set.
        compacted_paths=_shared_set(frozenset(n.get("compacted_paths") or ())),
        compacted_removed_partitions=_shared_set(
            _keys_in(n.get("compacted_removed_partitions") or [])
        ),
        provenance=n.get("provenance"),
    )


def _shared_set(value: frozenset[Any]) -> frozenset[Any]:
    return value or EMPTY_SET


# --------------------------------------------------------------------------- configuration


def metadata_to_json(m: Metadata | None) -> str | None:
    return None if m is None else _dumps(asdict(m))


def metadata_from_json(text: str | None) -> Metadata | None:
    return None if text is None else Metadata(**orjson.loads(text))


def protocol_to_json(p: Protocol | None) -> str | None:
    return None if p is None else _dumps(asdict(p))


def protocol_from_json(text: str | None) -> Protocol | None:
    return None if text is None else Protocol(**orjson.loads(text))


# --------------------------------------------------------------------------- findings


def finding_to_row(f: Finding) -> dict[str, Any]:
    """A Finding as one flat row; witness and details become plain JSON (see `json_default`)."""
    return {
        "kind": f.kind,
        "severity": f.severity,
        "version": f.version,
        "confirmed": f.confirmed,
        "nested": _dumps(
            {
                "related_versions": list(f.related_versions),
                "summary": f.summary,
                "explanation": f.explanation,
                "witness": None if f.witness is None else json_safe(f.witness),
                "details": json_safe(f.details or {}),
            }
        ),
    }


def finding_from_row(d: dict[str, Any]) -> Finding:
    n = orjson.loads(d["nested"])
    return Finding(
        **{name: d[name] for name in _FINDING_COLUMNS},
        **{name: n[name] for name in _FINDING_NESTED},
    )


# The Finding fields with a column of their own (FINDING_SCHEMA), and those in `nested`.
_FINDING_COLUMNS = ("kind", "severity", "version", "confirmed")
_FINDING_NESTED = ("related_versions", "summary", "explanation", "witness", "details")


# --------------------------------------------------------------------------- per-commit audits


@dataclass(slots=True)
class AuditedCommit:
    """What storage reads of an audit.CommitAudit, without its (unpicklable) read-scope matcher.

    audit.ingest.commit_row reads these attributes by name, so either type can be stored.
    """

    version: int
    read_version: int | None
    read_version_fact: str
    isolation_level: str | None
    concurrent_versions: list[int]
    verdicts: dict[int, dict[str, str | None]]
    window_truncated: bool = False


def commit_audit_to_json(a: Any) -> str:
    """An audit.CommitAudit (or AuditedCommit) as JSON text."""
    return _dumps(
        {
            "version": a.version,
            "read_version": _int_out(a.read_version),
            "read_version_fact": a.read_version_fact,
            "isolation_level": a.isolation_level,
            "concurrent_versions": list(a.concurrent_versions),
            "verdicts": [[v, verdict] for v, verdict in a.verdicts.items()],
            "window_truncated": a.window_truncated,
        }
    )


def commit_audit_from_json(text: str) -> AuditedCommit:
    d = orjson.loads(text)
    d["read_version"] = _int_in(d["read_version"])
    d["verdicts"] = {v: verdict for v, verdict in d["verdicts"]}
    return AuditedCommit(**{name: d[name] for name in _AUDITED_FIELDS})


_AUDITED_FIELDS = tuple(f.name for f in fields(AuditedCommit))
