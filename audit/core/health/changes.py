"""Change history: every version that changed the schema, protocol, properties, partitioning
or clustering, with what it was before and after. Pure functions over the config timelines.

A change entry: {"version", "timestamp", "kind", "before", "after", "summary"}; `kind` is one of
KINDS. Entries of a history also name who made the change (`by`: the commit's provenance). Strings from the log (column names, property values) are data, never markup.
"""

from __future__ import annotations

from typing import Any

import orjson

from audit.core.history.provenance import provenance_of
from audit.core.history.summary import History
from audit.core.model import Metadata, Protocol
from audit.core.vocab import FindingKind

SCHEMA, PROTOCOL, PROPERTIES, PARTITIONING, CLUSTERING = (
    "schema",
    "protocol",
    "properties",
    "partitioning",
    "clustering",
)
KINDS = (SCHEMA, PROTOCOL, PROPERTIES, PARTITIONING, CLUSTERING)


def load_schema(schema_string: str | None) -> dict[str, Any]:
    """A metaData schemaString as its JSON struct; {} when absent or not a JSON object.

    Log text is untrusted: a schema that does not parse is read as one without columns.
    """
    if not schema_string:
        return {}
    try:
        schema = orjson.loads(schema_string)
    except orjson.JSONDecodeError:
        return {}
    return schema if isinstance(schema, dict) else {}


def schema_columns(schema_string: str | None) -> dict[str, dict[str, Any]]:
    """Flattened columns ('a', 'a.b' for struct fields) -> {"type", "nullable"}."""
    out: dict[str, dict[str, Any]] = {}
    _flatten(load_schema(schema_string), "", out)
    return out


def _flatten(struct: Any, prefix: str, out: dict[str, dict[str, Any]]) -> None:
    fields = struct.get("fields") if isinstance(struct, dict) else None
    for f in fields if isinstance(fields, list) else []:
        if not isinstance(f, dict) or not isinstance(f.get("name"), str):
            continue
        name = prefix + f["name"]
        ftype = f.get("type")
        nested = isinstance(ftype, dict) and ftype.get("type") == "struct"
        out[name] = {
            "type": "struct" if nested else _type_text(ftype),
            "nullable": bool(f.get("nullable", True)),
        }
        if nested:
            _flatten(ftype, name + ".", out)


def _type_text(ftype: Any) -> str:
    if isinstance(ftype, str):
        return ftype
    if isinstance(ftype, dict):
        kind = ftype.get("type")
        if kind == "array":
            return f"array<{_type_text(ftype.get('elementType'))}>"
        if kind == "map":
            return f"map<{_type_text(ftype.get('keyType'))},{_type_text(ftype.get('valueType'))}>"
        return str(kind)
    return str(ftype)


def schema_diff(before: str | None, after: str | None) -> dict[str, Any]:
    """Columns added, dropped, retyped (e.g. widened) and with changed nullability."""
    old, new = schema_columns(before), schema_columns(after)
    return {
        "added": [{"name": n, **new[n]} for n in new if n not in old],
        "dropped": [{"name": n, **old[n]} for n in old if n not in new],
        "type_changed": [
            {"name": n, "from": old[n]["type"], "to": new[n]["type"]}
            for n in new
            if n in old and old[n]["type"] != new[n]["type"]
        ],
        "nullability_changed": [
            {"name": n, "from": old[n]["nullable"], "to": new[n]["nullable"]}
            for n in new
            if n in old and old[n]["nullable"] != new[n]["nullable"]
        ],
    }


def property_diff(before: dict[str, str], after: dict[str, str]) -> dict[str, Any]:
    return {
        "set": {k: v for k, v in after.items() if before.get(k) != v},
        "unset": sorted(k for k in before if k not in after),
    }


def protocol_dict(p: Protocol | None) -> dict[str, Any] | None:
    if p is None:
        return None
    return {
        "min_reader_version": p.min_reader_version,
        "min_writer_version": p.min_writer_version,
        "reader_features": sorted(p.reader_features or []),
        "writer_features": sorted(p.writer_features or []),
    }


def _schema_summary(diff: dict[str, Any]) -> str:
    parts = []
    if diff["added"]:
        parts.append("added " + ", ".join(f"{c['name']} ({c['type']})" for c in diff["added"]))
    if diff["dropped"]:
        parts.append("dropped " + ", ".join(c["name"] for c in diff["dropped"]))
    for c in diff["type_changed"]:
        parts.append(f"{c['name']} {c['from']} -> {c['to']}")
    for c in diff["nullability_changed"]:
        parts.append(f"{c['name']} {'nullable' if c['to'] else 'NOT NULL'}")
    return "schema: " + "; ".join(parts)


def metadata_changes(
    version: int, timestamp: int | None, old: Metadata | None, new: Metadata
) -> list[dict[str, Any]]:
    """The change entries of one metaData action compared with the one before it."""
    out: list[dict[str, Any]] = []
    old_schema = old.schema_string if old else None
    diff = schema_diff(old_schema, new.schema_string)
    if any(diff.values()):
        before = schema_columns(old_schema)
        after = schema_columns(new.schema_string)
        out.append(_entry(version, timestamp, SCHEMA, before, after, _schema_summary(diff), diff))
    old_parts = list(old.partition_columns) if old else []
    if old_parts != list(new.partition_columns):
        summary = f"partitioning: {old_parts or 'none'} -> {list(new.partition_columns) or 'none'}"
        out.append(
            _entry(
                version, timestamp, PARTITIONING, old_parts, list(new.partition_columns), summary
            )
        )
    old_props = dict(old.configuration) if old else {}
    pdiff = property_diff(old_props, dict(new.configuration))
    if pdiff["set"] or pdiff["unset"]:
        changed = [f"{k}={v}" for k, v in pdiff["set"].items()] + [
            f"unset {k}" for k in pdiff["unset"]
        ]
        out.append(
            _entry(
                version,
                timestamp,
                PROPERTIES,
                old_props,
                dict(new.configuration),
                "properties: " + ", ".join(changed),
                pdiff,
            )
        )
    return out


def protocol_change(
    version: int, timestamp: int | None, old: Protocol | None, new: Protocol
) -> dict[str, Any] | None:
    before, after = protocol_dict(old), protocol_dict(new)
    if before == after:
        return None
    assert after is not None
    b = before or {
        "min_reader_version": None,
        "min_writer_version": None,
        "reader_features": [],
        "writer_features": [],
    }
    added = sorted(
        set(after["reader_features"] + after["writer_features"])
        - set(b["reader_features"] + b["writer_features"])
    )
    summary = (
        f"protocol: reader {b['min_reader_version']} -> {after['min_reader_version']}, "
        f"writer {b['min_writer_version']} -> {after['min_writer_version']}"
    )
    if added:
        summary += "; features added: " + ", ".join(added)
    return _entry(version, timestamp, PROTOCOL, before, after, summary, {"features_added": added})


def clustering_change(
    version: int, timestamp: int | None, old: list[str], new: list[str]
) -> dict[str, Any] | None:
    if old == new:
        return None
    return _entry(
        version, timestamp, CLUSTERING, old, new, f"clustering: {old or 'none'} -> {new or 'none'}"
    )


def _entry(
    version: int,
    timestamp: int | None,
    kind: str,
    before: Any,
    after: Any,
    summary: str,
    diff: dict[str, Any] | None = None,
) -> dict[str, Any]:
    return {
        "version": version,
        "timestamp": timestamp,
        "kind": kind,
        "before": before,
        "after": after,
        "summary": summary,
        "diff": diff or {},
    }


def changes_from_history(history: History) -> list[dict[str, Any]]:
    """Every change in the history's config timelines after its first (baseline) entry."""
    out: list[dict[str, Any]] = []
    for (_, old), (version, new) in zip(
        history.metadata_timeline, history.metadata_timeline[1:], strict=False
    ):
        out.extend(metadata_changes(version, _ts(history, version), old, new))
    for (_, old_p), (version, new_p) in zip(
        history.protocol_timeline, history.protocol_timeline[1:], strict=False
    ):
        change = protocol_change(version, _ts(history, version), old_p, new_p)
        if change is not None:
            out.append(change)
    out.sort(key=lambda c: (c["version"], KINDS.index(c["kind"])))
    for change in out:  # who made it: the commit's provenance ({} when the log lost it)
        summary = history.summary(change["version"])
        change["by"] = provenance_of(summary) if summary is not None else {}
    return out


def _ts(history: History, version: int) -> int | None:
    summary = history.summary(version)
    return summary.timestamp if summary is not None else None


def link_findings(findings: list[dict[str, Any]], changes: list[dict[str, Any]]) -> None:
    """Point each concurrent_metadata_change finding at the change entries of its version."""
    by_version: dict[int, list[str]] = {}
    for c in changes:
        by_version.setdefault(c["version"], []).append(c["kind"])
    for f in findings:
        if (
            f.get("kind") == FindingKind.CONCURRENT_METADATA_CHANGE
            and f.get("version") in by_version
        ):
            f["change"] = {"version": f["version"], "kinds": by_version[f["version"]]}
