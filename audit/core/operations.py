"""The operation vocabulary: which of the conflict matrix's three operation kinds a commit is.

Real writers record many operation names in commitInfo (WRITE, MERGE, OPTIMIZE, REORG TABLE,
STREAMING UPDATE, ...); the reference page's tables (conflicts/matrix.py) and Delta's
commit-time rules (conflicts/rules.py) reason about three kinds: INSERT (a blind append),
UPDATE/DELETE/MERGE and OPTIMIZE. `classify_operation` maps one onto the other, following
the page's footnote (1); `operation_family` names the rest (metadata, maintenance, other).
The ground floor of the core: it imports only the vocabulary.
"""

from __future__ import annotations

import json
from typing import Any

from audit.core.vocab import OperationClass

# Operation names (upper-cased, spaces collapsed) that rewrite or delete data after reading it.
_UDM_OPERATIONS = frozenset(
    {
        "DELETE",
        "UPDATE",
        "MERGE",
        "MERGE INTO",
        "TRUNCATE",
        "RESTORE",
        "REPLACE TABLE",
        "REPLACE TABLE AS SELECT",
        "CREATE OR REPLACE TABLE",
        "CREATE OR REPLACE TABLE AS SELECT",
        "FSCK",  # removes entries of missing files: it deletes like a DELETE does
    }
)
_OPTIMIZE_OPERATIONS = frozenset({"OPTIMIZE", "REORG", "REORG TABLE"})
# Writes whose append/overwrite nature comes from their parameters and isBlindAppend.
_WRITE_OPERATIONS = frozenset(
    {"WRITE", "STREAMING UPDATE", "COPY INTO", "CREATE TABLE AS SELECT", "APPEND"}
)
_METADATA_OPERATIONS = frozenset(
    {
        "CREATE TABLE",
        "CREATE",
        "CONVERT",
        "CONVERT TO DELTA",
        "CLONE",
        "SHALLOW CLONE",
        "DEEP CLONE",
        "SET TBLPROPERTIES",
        "UNSET TBLPROPERTIES",
        "ADD COLUMNS",
        "ADD COLUMN",
        "CHANGE COLUMN",
        "CHANGE COLUMNS",
        "REPLACE COLUMNS",
        "RENAME COLUMN",
        "DROP COLUMNS",
        "UPDATE SCHEMA",
        "UPGRADE SCHEMA",
        "UPGRADE PROTOCOL",
        "ADD CONSTRAINT",
        "DROP CONSTRAINT",
        "ADD FEATURE",
        "DROP FEATURE",
        "CLUSTER BY",
        "UPDATE FIELD METADATA",
        "UPDATE TABLE METADATA",
        "REMOVE COLUMN MAPPING",
        "SET CLUSTERING",
    }
)
_MAINTENANCE_OPERATIONS = frozenset(
    {
        "VACUUM START",
        "VACUUM END",
        "VACUUM",
        "COMPUTE STATS",
        "ANALYZE",
        "ADD DELETION VECTORS TOMBSTONES",
        "ROW TRACKING BACKFILL",
        "ROW TRACKING UNBACKFILL",
        "DOMAIN METADATA CLEANUP",
        "CHECKPOINT",
        "EMPTY COMMIT",
    }
)


def _op_key(operation: Any) -> str:
    if not isinstance(operation, str):
        return ""
    return " ".join(operation.upper().split())


def _param(params: Any, *names: str) -> Any:
    """A parameter by any of `names`, compared case-insensitively; None if absent."""
    if not isinstance(params, dict):
        return None
    lowered = {str(k).lower(): v for k, v in params.items()}
    for name in names:
        if name.lower() in lowered:
            return lowered[name.lower()]
    return None


def _decode_list(value: Any) -> list[Any]:
    """operationParameters lists arrive as lists or as JSON text ('["a"]', '[]')."""
    if isinstance(value, list | tuple):
        return list(value)
    if isinstance(value, str):
        text = value.strip()
        if not text:
            return []
        try:
            decoded = json.loads(text)
        except ValueError:
            return [text]  # a bare column name
        if isinstance(decoded, list):
            return decoded
        return [] if decoded in (None, "") else [decoded]
    return []


def uses_zorder(operation_parameters: Any) -> bool:
    """True when an OPTIMIZE recorded a non-empty zOrderBy. (delta-rs does not record it.)"""
    value = _param(operation_parameters, "zOrderBy", "zorderBy", "zOrderColumns", "z_order")
    return any(str(v).strip() for v in _decode_list(value))


def _has_predicate(params: Any) -> bool:
    value = _param(params, "predicate", "replaceWhere")
    if value is None:
        return False
    decoded = _decode_list(value) if isinstance(value, str) and value.startswith("[") else value
    if isinstance(decoded, list):
        return any(str(v).strip() for v in decoded)
    return bool(str(decoded).strip())


def _is_overwrite(operation: str, params: Any) -> bool:
    mode = str(_param(params, "mode") or "").strip().lower()
    output_mode = str(_param(params, "outputMode") or "").strip().lower()
    return mode == "overwrite" or output_mode == "complete" or _has_predicate(params)


def _reorg_changes_protocol(params: Any) -> bool:
    """REORG ... APPLY (UPGRADE UNIFORM(...)) records the upgrade in its parameters."""
    if not isinstance(params, dict):
        return False
    # Keys only: a predicate value may mention any word.
    keys = [str(k).lower() for k in params]
    return any(m in k for k in keys for m in ("uniform", "icebergcompat", "upgrade"))


def classify_operation(
    operation: str | None, blind_append: bool | None, operation_parameters: dict | None
) -> OperationClass | None:
    """Map a commitInfo operation to INSERT, UPDATE/DELETE/MERGE or OPTIMIZE; None otherwise.

    Follows footnote (1): only blind appends are INSERT. A WRITE whose isBlindAppend is false
    (an INSERT reading the same table), any overwrite (mode Overwrite, replaceWhere,
    streaming Complete) and table replacement count as UPDATE/DELETE/MERGE. An append whose
    blindness was not recorded (delta-rs writes no isBlindAppend) counts as INSERT.
    """
    key = _op_key(operation)
    params = operation_parameters if isinstance(operation_parameters, dict) else {}
    if key in _OPTIMIZE_OPERATIONS:
        if key.startswith("REORG") and _reorg_changes_protocol(params):
            return None  # a protocol upgrade: metadata, conflicts with everything
        return OperationClass.OPTIMIZE
    if key in _UDM_OPERATIONS:
        return OperationClass.UDM
    if key in _WRITE_OPERATIONS:
        if _is_overwrite(key, params) or blind_append is False:
            return OperationClass.UDM
        return OperationClass.INSERT
    return None


def operation_family(
    operation: str | None, blind_append: bool | None, operation_parameters: dict | None
) -> str:
    """The matrix op when there is one, else "metadata", "maintenance" or "other"."""
    matrix_op = classify_operation(operation, blind_append, operation_parameters)
    if matrix_op is not None:
        return matrix_op
    key = _op_key(operation)
    if key in _METADATA_OPERATIONS or key.startswith("REORG"):
        return "metadata"
    if key in _MAINTENANCE_OPERATIONS:
        return "maintenance"
    return "other"
