"""Repair, inspect and prevent: each incident's statements, in deltalake (Python that needs only
`table_uri` and `storage_options`) and in Spark SQL, generated from its facts.

`repair` is the steps to run, in order, to take the damage out; `inspect` shows it; `prevent`
removes the cause. Each statement says what it does and what it does not undo (wording/).
A statement that would have to name something unsafe to restate is left out (quoting.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from audit.core.anomalies.settings import setting_understood
from audit.core.history.summary import History
from audit.core.incidents.causes import ISOLATION_PROPERTY, unchecked_by_engine
from audit.core.incidents.damage import StaleDamage
from audit.core.incidents.model import Incident, Statement
from audit.core.incidents.quoting import (
    Unsafe,
    python_literal,
    spark_identifier,
    spark_string,
    spark_table,
)
from audit.core.incidents.repairs import DELTALAKE, SPARK, plan_of, stale_statements
from audit.core.vocab import Engine, FindingKind, IncidentCause
from audit.core.wording.incidents import statement_words

_DT = "dt = DeltaTable(table_uri, storage_options=storage_options)\n"
_IMPORT = "from deltalake import DeltaTable\n\n"
# delta.isolationLevel spellings delta-rs parses (Spark parses them in any case).
_SPELLINGS = {"serializable": "serializable", "writeserializable": "writeSerializable"}


@dataclass(slots=True)
class Statements:
    repair: list[Statement] = field(default_factory=list)
    inspect: list[Statement] = field(default_factory=list)
    prevent: list[Statement] = field(default_factory=list)


def statements_of(
    incident: Incident, history: History, stale: StaleDamage, assignments: dict[int, dict[str, Any]]
) -> Statements:
    out = Statements()
    _fill(out, incident, history, stale, assignments)
    return out


def _spark(build: Any, *args: Any, **kwargs: Any) -> list[Statement]:
    """A Spark SQL statement, or none when something it must name cannot be restated (a
    table location with control characters): the deltalake one takes it as `table_uri`."""
    try:
        return [build(*args, **kwargs)]
    except Unsafe:
        return []


def _fill(
    out: Statements,
    incident: Incident,
    history: History,
    stale: StaleDamage,
    assignments: dict[int, dict[str, Any]],
) -> None:
    cause = incident.key.cause
    plan = plan_of(incident.id, stale, history)
    if plan is not None:
        updates = [v for v in plan.versions if _is_update(history, v)]
        if updates and not _same_assignments(assignments, updates):
            plan = None  # an UPDATE whose assignments are not known: nothing to run blind
        elif updates:
            plan.assignments = {v: assignments[v] for v in updates}
    if plan is not None and not _is_merge(history, plan.versions):
        out.repair, out.inspect = stale_statements(plan, history)
    if cause == IncidentCause.STALE_WRITE_WRITE_SERIALIZABLE:
        out.prevent += _serializable(history)
    elif cause == IncidentCause.STALE_WRITE_UNCHECKED:
        out.prevent += _checked_forms(incident, history)
    elif cause == IncidentCause.ISOLATION_SETTING_IGNORED:
        out.prevent += _spelling(incident, history)
    elif cause == IncidentCause.CONTENTION and Engine.DATABRICKS in _engines(history):
        # Row-level concurrency is Databricks': other engines gain nothing from the vectors.
        out.prevent += _spark(
            _property, history, "delta.enableDeletionVectors", "true", "deletion_vectors"
        )
    elif cause == IncidentCause.COMMIT_TIMES:
        out.prevent += _spark(
            _property, history, "delta.enableInCommitTimestamps", "true", "in_commit_timestamps"
        )
    elif cause == IncidentCause.FILES_MISSING:
        out.repair += _restore(incident, history)
        out.inspect += _missing(history)
    elif cause == IncidentCause.ORPHAN_FILES:
        out.inspect += _vacuum(history, dry_run=True)
        out.repair += _vacuum(history, dry_run=False)
    elif cause == IncidentCause.DUPLICATE_KEYS:
        out.inspect += _duplicates(incident, history)
    if not out.inspect:
        out.inspect += _history(history, incident.first_version)


def _is_update(history: History, version: int) -> bool:
    summary = history.summary(version)
    return summary is not None and (summary.operation or "").upper() == "UPDATE"


def _is_merge(history: History, versions: list[int]) -> bool:
    """A MERGE's wrong rows depend on its source (not in the log): no repair is generated."""
    return any(
        (s := history.summary(v)) is not None and (s.operation or "").upper() == "MERGE"
        for v in versions
    )


def _same_assignments(assignments: dict[int, dict[str, Any]], versions: list[int]) -> bool:
    known = [assignments.get(v) for v in versions]
    return all(k for k in known) and all(k == known[0] for k in known)


# --------------------------------------------------------------------------- settings


def _engines(history: History) -> set[str]:
    return {str(s.engine) for s in history.summaries[-1000:]} or {str(Engine.SPARK)}


def _spelled(level: str, history: History) -> str:
    """`level` as every writer of the table parses it (delta-rs only parses camelCase)."""
    spelling = _SPELLINGS.get(level.lower(), level)
    if all(setting_understood(e, spelling) for e in _engines(history)):
        return spelling
    return level


def _property(history: History, name: str, value: str, words: str, **facts: Any) -> Statement:
    code = (
        f"ALTER TABLE {spark_table(history.table_uri)} SET TBLPROPERTIES "
        f"({spark_string(name)} = {spark_string(value)})"
    )
    return Statement(SPARK, code, *statement_words(words, **facts))


def _set_properties(name: str, value: str, words: str, **facts: Any) -> Statement:
    code = _IMPORT + _DT + f"dt.alter.set_table_properties({python_literal({name: value})})\n"
    return Statement(DELTALAKE, code, *statement_words(words, **facts))


def _serializable(history: History) -> list[Statement]:
    spelling = _spelled("Serializable", history)
    return [
        _set_properties(ISOLATION_PROPERTY, spelling, "serializable", spelling=repr(spelling)),
        *_spark(
            _property,
            history,
            ISOLATION_PROPERTY,
            spelling,
            "serializable",
            spelling=repr(spelling),
        ),
    ]


def _spelling(incident: Incident, history: History) -> list[Statement]:
    head = next(
        (f for f in incident.findings if f.kind == FindingKind.ISOLATION_SETTING_IGNORED), None
    )
    value = str((head.details or {}).get("value", "")) if head is not None else ""
    spelling = _SPELLINGS.get(value.strip().lower())
    if spelling is None:
        spelling = _spelled("Serializable", history)
    words = {"spelling": repr(spelling)}
    return [
        _set_properties(ISOLATION_PROPERTY, spelling, "setting_spelling", **words),
        *_spark(_property, history, ISOLATION_PROPERTY, spelling, "setting_spelling", **words),
    ]


_CHECKED_DELETE = """from deltalake import DeltaTable


def delete_all_rows():
    # In place of DeltaTable(...).delete(): with a predicate, delta-rs checks the commits that
    # landed since the snapshot it read, and fails (CommitFailedError) instead of leaving them.
    DeltaTable(table_uri, storage_options=storage_options).delete("1 = 1")
"""
_CHECKED_OVERWRITE = """from deltalake import write_deltalake


def overwrite(data):
    # In place of write_deltalake(..., mode="overwrite"): with a predicate, delta-rs checks the
    # commits that landed since the snapshot it read, and fails instead of leaving them.
    write_deltalake(
        table_uri, data, mode="overwrite", predicate="1 = 1", storage_options=storage_options
    )
"""


def _checked_forms(incident: Incident, history: History) -> list[Statement]:
    """delta-rs checks a DELETE or an overwrite against concurrent commits only when it has a
    predicate: the form the job should use (a function to call, nothing runs on its own)."""
    if not unchecked_by_engine(history.summary(_stale_version(incident))):
        return []
    if incident.key.operation.upper().startswith("DELETE"):
        return [Statement(DELTALAKE, _CHECKED_DELETE, *statement_words("checked_delete"))]
    return [Statement(DELTALAKE, _CHECKED_OVERWRITE, *statement_words("checked_overwrite"))]


def _stale_version(incident: Incident) -> int:
    return next(
        (f.version for f in incident.findings if f.kind == FindingKind.NEVER_EXISTED_SNAPSHOT),
        incident.findings[0].version,
    )


# --------------------------------------------------------------------------- storage


def _restore(incident: Incident, history: History) -> list[Statement]:
    """RESTORE to the last version whose files all exist, when the latest cannot be read."""
    broken: list[list[int]] = []
    latest_broken = False
    for f in incident.findings:
        witness = f.witness or {}
        if f.kind == FindingKind.MISSING_DATA_FILE:
            broken += [r for r in witness.get("broken_versions") or [] if isinstance(r, list)]
            latest_broken = latest_broken or bool(witness.get("latest_broken"))
    if not latest_broken:
        return []
    target = _last_readable(broken, history)
    if target is None:
        return []
    words = statement_words("restore", version=target)
    return [
        Statement(DELTALAKE, _IMPORT + _DT + f"dt.restore({target})\n", *words),
        *_spark(
            lambda: Statement(
                SPARK,
                f"RESTORE TABLE {spark_table(history.table_uri)} TO VERSION AS OF {target}",
                *words,
            )
        ),
    ]


def _last_readable(broken: list[list[int]], history: History) -> int | None:
    bad = [(int(a), int(b)) for a, b, *_ in broken]
    version = history.latest_version
    first = history.first_available_version
    while version >= first:
        inside = next((a for a, b in bad if a <= version <= b), None)
        if inside is None:
            return version
        version = inside - 1
    return None


def _missing(history: History) -> list[Statement]:
    words = statement_words("inspect_missing")
    return [
        Statement(DELTALAKE, _IMPORT + _DT + "print(dt.repair(dry_run=True))\n", *words),
        *_spark(
            lambda: Statement(
                SPARK, f"FSCK REPAIR TABLE {spark_table(history.table_uri)} DRY RUN", *words
            )
        ),
    ]


def _vacuum(history: History, *, dry_run: bool) -> list[Statement]:
    words = statement_words("vacuum_dry" if dry_run else "vacuum")
    call = "print(dt.vacuum(dry_run=True))" if dry_run else "print(dt.vacuum(dry_run=False))"
    dry = " DRY RUN" if dry_run else ""
    return [
        Statement(DELTALAKE, _IMPORT + _DT + call + "\n", *words),
        *_spark(lambda: Statement(SPARK, f"VACUUM {spark_table(history.table_uri)}{dry}", *words)),
    ]


def _duplicates(incident: Incident, history: History) -> list[Statement]:
    columns = [str(c) for c in (incident.findings[0].witness or {}).get("key_columns") or []]
    if not columns:
        return []
    words = statement_words("duplicates")

    def spark() -> Statement:
        keys = ", ".join(spark_identifier(c) for c in columns)
        code = (
            f"SELECT {keys}, COUNT(*) AS `rows` FROM {spark_table(history.table_uri)} "
            f"GROUP BY {keys} HAVING COUNT(*) > 1"
        )
        return Statement(SPARK, code, *words)

    python = (
        _IMPORT
        + _DT
        + f"keys = {python_literal(columns)}\n"
        + "counts = dt.to_pyarrow_table(columns=keys).group_by(keys).aggregate([([], 'count_all')])\n"
        + "print(counts.filter(counts['count_all'] > 1).to_pylist())\n"
    )
    return [Statement(DELTALAKE, python, *words), *_spark(spark)]


def _history(history: History, version: int) -> list[Statement]:
    words = statement_words("history", version=version)
    limit = max(history.latest_version - version + 1, 1)
    return [
        Statement(DELTALAKE, _IMPORT + _DT + f"print(dt.history(limit={limit}))\n", *words),
        *_spark(
            lambda: Statement(
                SPARK, f"DESCRIBE HISTORY {spark_table(history.table_uri)} LIMIT {limit}", *words
            )
        ),
    ]
