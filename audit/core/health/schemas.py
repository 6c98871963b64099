"""A table's schema at any version, and what changed between two versions, from its change
history (`audit.core.health.changes`): the schema entries hold the columns after each
metaData action, the partitioning entries the partition columns after each change. Pure.

A schema here: {"version": the version asked, "since": the version whose metaData set it
(None: the history's first schema, or one no change set), "columns": [{"name", "type", "nullable",
"partition"}] in the log's order (struct fields as "a.b" after their struct),
"partition_columns": [...]}.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from audit.core.health.changes import PARTITIONING, SCHEMA


def schema_at(
    changes: Iterable[Mapping[str, Any]],
    version: int,
    current: Mapping[str, Any] | None = None,
    current_partitions: list[str] | None = None,
) -> dict[str, Any]:
    """The schema in effect at `version`. `changes`: change entries (any order) with
    "version", "kind", "before" and "after". The last schema (partitioning) entry at or
    before the version gives its columns (partition columns); before the first entry, that
    entry's "before" (the history's baseline); a table that never changed them has the
    `current` columns (`changes.schema_columns`) and `current_partitions`."""
    columns, since = _in_effect(changes, SCHEMA, version, current)
    partitions, _ = _in_effect(changes, PARTITIONING, version, current_partitions)
    columns = columns if isinstance(columns, Mapping) else {}
    partitions = [str(c) for c in partitions] if isinstance(partitions, list) else []
    shown = [
        {
            "name": str(name),
            "type": str(spec.get("type", "")) if isinstance(spec, Mapping) else "",
            "nullable": bool(spec.get("nullable", True)) if isinstance(spec, Mapping) else True,
            "partition": name in partitions,
        }
        for name, spec in columns.items()
    ]
    return {"version": version, "since": since, "columns": shown, "partition_columns": partitions}


def _in_effect(
    changes: Iterable[Mapping[str, Any]], kind: str, version: int, current: Any
) -> tuple[Any, int | None]:
    """(value, the version that set it) of `kind` at `version`: the last entry's "after" at
    or before it, else the first later entry's "before", else `current` (set by no entry)."""
    entries = sorted(
        (c for c in changes if c.get("kind") == kind and isinstance(c.get("version"), int)),
        key=lambda c: c["version"],
    )
    at = [c for c in entries if c["version"] <= version]
    if at:
        return at[-1].get("after"), at[-1]["version"]
    if entries:
        return entries[0].get("before"), None
    return current, None


def schema_changes(before: Mapping[str, Any], after: Mapping[str, Any]) -> dict[str, Any]:
    """What changed from schema `before` to schema `after` (both `schema_at` results):
    columns added, dropped, retyped, with changed nullability; the partitioning before and
    after when it changed (else None); `changed`: whether anything did."""
    old = {c["name"]: c for c in before["columns"]}
    new = {c["name"]: c for c in after["columns"]}
    out: dict[str, Any] = {
        "from": before["version"],
        "to": after["version"],
        "added": [c for name, c in new.items() if name not in old],
        "dropped": [c for name, c in old.items() if name not in new],
        "type_changed": [
            {"name": name, "from": old[name]["type"], "to": c["type"]}
            for name, c in new.items()
            if name in old and old[name]["type"] != c["type"]
        ],
        "nullability_changed": [
            {"name": name, "from": old[name]["nullable"], "to": c["nullable"]}
            for name, c in new.items()
            if name in old and old[name]["nullable"] != c["nullable"]
        ],
        "partitioning": None,
    }
    if before["partition_columns"] != after["partition_columns"]:
        out["partitioning"] = {
            "from": list(before["partition_columns"]),
            "to": list(after["partition_columns"]),
        }
    keys = ("added", "dropped", "type_changed", "nullability_changed", "partitioning")
    out["changed"] = any(out[k] for k in keys)
    return out
